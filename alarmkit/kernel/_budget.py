"""The budgets of one ``run()`` or ``call()``, so that runaway work stops with a message.

Two budgets bound every run: at most ``step_limit`` kernel steps while the virtual clock stands
still (a loop of awaits that never lets time pass, an RPC that calls itself), and, for a run not
told ``until``/``limit``, at most ``time_limit_ms`` of virtual time (a retry loop that never ends).
A run told ``until`` ends by then, and is bounded by both budgets too: past ``time_limit_ms`` with
work still due before ``until`` it stops the same way (only an idle clock jumps further at once).
Past either, ``RunawayError`` names the object and the task and leaves the simulation as it was.

The 24 built-in scenarios take at most 18 steps at one virtual instant (``prod-rearm-at-now``: two
objects' alarm() runs at 1,000 ms; the other 23 at most 16) and move the clock at most 3,667,402 ms
(about an hour) in one ``run()`` without ``until`` (measured 2026-12-01, seed 1). The one that never
ends on its own, ``prod-runaway-internal-errors`` (uncounted failures retried forever), runs with
``until=`` three days, which no time budget limits.
The step budget is a trade: 100,000 steps are ~0.2 GB and a few seconds of an RPC calling itself
(1.9 KB a step, measured: it stopped after 3.6 s at 286 MB peak RSS, imports included), and about
35,000 lease-ledger alarms firing in the same millisecond (1,000 of them took 2,500-3,000 steps);
more work than that at one instant needs ``step_limit`` raised.
"""

from __future__ import annotations

from typing import Any

from ..errors import InvalidValue, RunawayError

__all__ = ["STEP_LIMIT", "TIME_LIMIT_MS", "NO_LIMIT", "check_limit", "over_step_limit", "past_time_limit", "task_of", "KernelLimit"]

STEP_LIMIT = 100_000  # kernel steps while the clock stands still
TIME_LIMIT_MS = 365 * 86_400_000  # one year of virtual time for a run() or call() told no until/limit
NO_LIMIT = 1 << 62  # what "no limit" compares as


def check_limit(name: str, value: Any) -> int | None:
    if value is None or (value.__class__ is int and value >= 1):
        return value
    raise InvalidValue(f"{name} must be a positive int or None (no limit), got {value!r}")


def over_step_limit(now: int, limit: int, culprit: str) -> RunawayError:
    return RunawayError(
        f"stopped at virtual time {now:,} ms after {limit:,} steps with the clock standing still "
        f"(step_limit): {culprit} keeps running without letting virtual time pass (a loop of awaits that "
        "never sleeps, or an RPC that calls itself?); if the work is real, raise the limit: "
        "Simulation(step_limit=...) or sim.step_limit = None for no limit"
    )


def past_time_limit(now: int, t: int, limit: int, start: int, culprit: str, until: int | None = None) -> RunawayError:
    way = "" if until is None else f"run(until={until:,}) asked for more than that; "
    return RunawayError(
        f"stopped at virtual time {now:,} ms: the next event, at {t:,} ms, is more than time_limit_ms="
        f"{limit:,}{f' ({limit / 86_400_000:g} days)' if limit >= 86_400_000 else ''} after this run started at {start:,} ms; next: {culprit} "
        f"(work that never ends, such as a retry loop?); {way}"
        + ("pass until= (or limit= to call) to run less far, " if until is not None else
           "pass until= (or limit= to call) to run that far, ")
        + "or raise the limit: Simulation(time_limit_ms=...) or sim.time_limit_ms = None for no limit"
    )


def task_of(fn: Any, args: tuple) -> Any:
    """The task a scheduled ``fn(*args)`` steps or wakes, if any (for messages). A task is what has
    ``awaits`` (``_kernel.Task``); a future's ``_callbacks`` hold the ``_wakeup`` of the task awaiting it."""
    for x in (getattr(fn, "__self__", None), *args):
        if hasattr(x, "awaits"):
            return x
        for cb in getattr(x, "_callbacks", None) or ():
            if hasattr(getattr(cb, "__self__", None), "awaits"):
                return cb.__self__
    return None


class KernelLimit:
    """A ``Simulation`` attribute that reads and sets (checked) the kernel's budget of the same name."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, sim: Any, owner: type | None = None) -> Any:
        return self if sim is None else getattr(sim.kernel, self.name)

    def __set__(self, sim: Any, value: Any) -> None:
        setattr(sim.kernel, self.name, check_limit(self.name, value))
