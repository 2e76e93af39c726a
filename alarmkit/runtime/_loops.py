"""What a run stopped by ``event_limit`` was doing: the loop read from its latest buffered events, for
the one-line ``RunawayError`` (``kernel/_budget.over_event_limit``). It names the object with the most
events among them and what it did again and again: an alarm() that re-arms itself (and how far ahead),
RPC calls, or its commonest kinds.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..journal import WIDTH

__all__ = ["loop_seen"]

WINDOW = 20_000  # latest events read


def loop_seen(buffer: Any) -> str:
    data = buffer.data
    n = min(len(data) // WIDTH, WINDOW)
    if not n:
        return "the events were already written to the journal"
    rows = [data[i:i + WIDTH] for i in range(len(data) - n * WIDTH, len(data), WIDTH)]
    codes = Counter((~r[1] if r[1] < 0 else r[1]) for r in rows if r[1] is not None)
    if not codes:
        kinds = Counter(r[2] for r in rows).most_common(3)
        return f"the latest {n:,} events are the runtime's own ({', '.join(f'{k} x{c:,}' for k, c in kinds)})"
    code, count = codes.most_common(1)[0]
    mine = [r for r in rows if r[1] is not None and (~r[1] if r[1] < 0 else r[1]) == code]
    who = f"{buffer.namespaces[code]}:{buffer.labels[code]}"
    kinds = Counter(r[2] for r in mine)
    fires = kinds.get("fire", 0)
    share = f"{count:,} of the latest {n:,} events"
    if fires:
        ahead = sorted(r[3] - r[0] for r in mine if r[2] == "arm" and r[3] is not None)
        if ahead:
            mid = ahead[len(ahead) // 2]
            how = ("at the time it ran (an alarm() that sets its next alarm at Date.now()?)" if mid <= 0 else
                   f"{mid:,} ms ahead (an alarm() that always sets another?)")
            return f"object {who} ({share}): {fires:,} alarm() fires, each re-arming {how}"
        return f"object {who} ({share}): {fires:,} alarm() fires (retried again and again?)"
    if kinds.get("call"):
        return f"object {who} ({share}): {kinds['call']:,} RPC calls (a call loop?)"
    top = ", ".join(f"{k} x{c:,}" for k, c in kinds.most_common(3))
    return f"object {who} ({share}): {top}"
