"""How much work a scenario's parameters ask for, estimated before the run starts.

A parameter that passes its shape check can still ask for more than any machine holds
(``lease-ledger --set horizon_ms=9007199254740992`` builds a status poll every 180 s for 285,000
years: 5e10 tuples, OOM-killed at 22.9 GB). So every run of a named scenario is first sized by
``estimate``: the counts it is given (``entries``, ``cells``, ``periods``, ``ticks``, ``leases``, the
length of a list such as ``grants``) multiplied by how many of its shortest period fit in its
longest time (``horizon_ms`` over ``status_every_ms``, ``days`` over ``in_ms``...). The estimate is
a work unit, not an exact event count: the 24 built-in scenarios' defaults come to 1-13,500 units
(``guestbook-crash-loop``), and 1,000,000 units measured 429 MB peak RSS in 38 s
(``lease-ledger --set horizon_ms=30000000000``) and 211 MB in 13 s (``guestbook-root --set
entries=200000``), so the default cap of 2,000,000 units is about 1 GB and a minute or two. Past ``max_work`` the run is refused with the parameter that grew the estimate most, the
estimate, and the way to raise the cap (``--max-work``, ``max_work=``).
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import ScenarioError

__all__ = ["MAX_WORK", "estimate", "check_work"]

MAX_WORK = 2_000_000
DAY_MS = 86_400_000
COUNTS = {"entries", "cells", "periods", "ticks", "leases", "grants", "ttls", "budget"}
SPANS = {"horizon_ms", "quiet_ms", "deploy_at", "downtime_ms", "restart_at_ms", "redeliver_at", "batch_at",
         "first_batch_at", "start_at_ms", "leave_at_ms", "join_at_ms", "second_tag_at_ms", "down_to_ms",
         "visit_at", "die_after_ms"}
PERIODS = {"status_every_ms", "poll_every_ms", "spacing_ms", "entry_ms", "in_ms", "remind_in_ms", "ttl_ms", "ttl",
           "visit_ms"}


def _number(value: Any) -> float:
    if isinstance(value, bool) or value is None:
        return 0.0
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    if isinstance(value, (list, tuple)):
        return float(len(value))
    return 0.0


def estimate(params: dict[str, Any]) -> float:
    """Work units for a run with ``params`` (defaults merged in): counts x (longest span / shortest period)."""
    count = 1.0
    for key in COUNTS & set(params):
        count *= max(1.0, _number(params[key]))
    span = max([_number(params[k]) for k in SPANS & set(params)] + [_number(params.get("days")) * DAY_MS, 0.0])
    # a period of 0 (entry_ms=0) is work at one instant: the step budget bounds that, so count it as 1 ms
    periods = [max(1.0, _number(params[k])) for k in PERIODS & set(params) if params[k] is not None]
    steps = span / min(periods) if periods and span else 1.0
    return count * max(1.0, steps)


def check_work(scenario: str, defaults: dict[str, Any], params: dict[str, Any], max_work: int | None = None) -> float:
    """Refuse a run whose estimate is past ``max_work`` (``MAX_WORK`` when None); returns the estimate."""
    cap = MAX_WORK if max_work is None else max_work
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
        raise ScenarioError(f"max_work is a cap on a run's estimated work units (an int >= 1), got {cap!r}")
    merged = {**defaults, **params}
    for k in sorted(PERIODS & set(params)):  # a period of 0 or less is no period: refused, not sized
        v = params[k]
        if v is not None and not isinstance(v, bool) and isinstance(v, (int, float)) and v <= 0:
            raise ScenarioError(f"scenario {scenario!r}: {k}={v!r} is not a period; {k} is a time in ms >= 1")
    est = estimate(merged)
    if est <= cap:
        return est
    # the parameter that grew the estimate most: each given one alone, over the defaults
    base = estimate(defaults)
    grown = sorted(params, key=lambda k: estimate({**defaults, k: params[k]}) / max(base, 1.0), reverse=True)
    culprit = grown[0] if grown else "its defaults"
    shown = f"{culprit}={params[culprit]!r}" if grown else culprit
    if len(shown) > 80:
        shown = shown[:77] + "..."
    about = "more than 10^15" if est > 1e15 else f"about {est:,.0f}"
    raise ScenarioError(
        f"scenario {scenario!r}: {shown} asks for {about} work units, above the cap of {cap:,} (the default is "
        f"{MAX_WORK:,}: about 1 GB); lower {culprit}, or raise the cap: --max-work {_round_up(min(est, 1e15))} "
        "(max_work= in Python)")


def _round_up(n: float) -> int:
    step = 10 ** max(0, len(str(int(n))) - 2)
    return int(-(-n // step) * step)
