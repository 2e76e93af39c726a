"""The ``event_limit`` of a run, as the runtime keeps it (``Simulation``'s ``_budget_events``,
``_look_ahead`` and ``_check_events`` are these functions), and what a run it stopped was doing: the loop
read from its latest events, for the one-line ``RunawayError`` (``kernel/_budget.over_event_limit``). It
names the object with the most events among them and what it did again and again: an alarm() that
re-arms itself (and how far ahead), RPC calls, or its commonest kinds.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..journal import WIDTH
from ..kernel import NO_LIMIT, next_look, over_event_limit

__all__ = ["loop_seen", "budget_events", "look_ahead", "check_events", "WINDOW"]

WINDOW = 20_000  # latest events read
CHECK_EVERY = 65_536  # events between two looks without a journal (with one: each batch), when no limit is near


def budget_events(sim: Any) -> None:
    """A run() or call() begins: ``event_limit`` counts from here."""
    sim.kernel.stop(None)
    limit = sim._event_limit
    sim._run_seq = sim.buffer.seq0 + len(sim.buffer)
    sim._event_cap = NO_LIMIT if limit is None else sim._run_seq + limit
    look_ahead(sim)


def look_ahead(sim: Any) -> None:
    """Where ``append_row`` next looks (``next_look``): the batch's flush point (every ``CHECK_EVERY``
    events without a journal), or this run's ``event_limit``-th event if it comes first."""
    flush_at = sim.journal.batch_size * WIDTH if sim.journal is not None else len(sim._buf) + CHECK_EVERY * WIDTH
    sim._flush_len = next_look(flush_at, sim.buffer.seq0, sim._event_cap, WIDTH)


def check_events(sim: Any) -> None:
    """On this run's ``event_limit``-th event: the kernel stops before its next step (``Kernel.stop``)."""
    seq = sim.buffer.seq0 + len(sim.buffer)
    if seq >= sim._event_cap:
        sim._event_cap = NO_LIMIT  # said once a run
        count = seq - sim._run_seq
        sim.kernel.stop(over_event_limit(sim.kernel.now, sim._event_limit or 0, count,
                                         loop_seen(sim.buffer, sim._written, count)))


def loop_seen(buffer: Any, written: list | tuple = (), run_events: int = WINDOW) -> str:
    """``written``: the latest events already handed to the journal (flat, ``WIDTH`` values each), read
    before the buffered ones; ``run_events``: how many events this run has journaled (none before it is
    read)."""
    data = [*written[-WINDOW * WIDTH:], *buffer.data] if written else buffer.data
    n = min(len(data) // WIDTH, WINDOW, run_events)
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
