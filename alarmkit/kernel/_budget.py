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

Two more bound the user's own code (a worker's): ``event_limit``, journal events one ``run()`` or
``call()`` may add (an alarm() that re-arms at ``Date.now()`` moves the clock a millisecond a fire, so
neither budget above stops it before memory runs out: measured 2026-12-04, a Python Worker's storm
journaled ~360,000 events a second, ~120 bytes each held in memory without a journal file): the run
stops on its N-th event (``next_look``), the kernel taking no step after the one that journaled it; and
``wall_limit_s``, wall-clock seconds one step of a Python Worker's code may run (``while True: pass``
in ``alarm()``, a constructor or the module's top: the JS host's is ``ALARMKIT_JSHOST_TIMEOUT_S``, 60 s).
The largest built-in run journals about 3,000,000 events in one ``run()`` (benchmarks/bench_core.py at
full size: 1,000,000 alarm lifecycles of 3 events); 5,000,000 leaves room above it, and is about the
built-in scenarios' own cap (``scenarios.work``, 2,000,000 units, about 1 GB): ``alarmkit worker`` on a
re-arm storm stopped there at 600 MB peak RSS, after 188 s on the shared 2-core machine of 2026-12-04
under a load of 8 (2,000,000 events: 341 MB, 43 s).

And ``memory_limit_mb``: how much one step of a Python Worker's code may grow the process's resident
memory (``xs = []; while True: xs.append(bytearray(10**6))`` in ``alarm()`` takes the machine's RAM well
before ``wall_limit_s``). Growth, not the total: the process is shared (the journal's buffer, other
simulations, a notebook's data), and a limit on the whole would stop whichever worker ran when the
total passed it. The watchdog that enforces ``wall_limit_s`` reads ``/proc/self/statm`` (Linux; elsewhere
the budget is unavailable and nothing is checked: ``RSS_AVAILABLE`` in ``workers/python/_contain``) every
``limit / 40,000`` s within 10-50 ms (50 ms at the default) while a step of the worker's code runs, and past
``memory_limit_mb`` MB (of 1,048,576 bytes) of growth raises ``MemoryLimit`` in the worker's code. A
``run()``/``call()``'s first step is counted from the call's start (one ``pread`` of ~1 us as it begins), a
later step from the watchdog's first look at it (its first 10-50 ms go uncounted); growth spread over many
steps (a leak of a few KB a fire) is not this budget's: ``event_limit`` and the machine bound that. The
default, 2,048 MB, is above the largest run's peak above (600 MB, the whole process). Measured 2026-12-05 on
the shared 2-core machine (load 8-12): a 1 MB-a-chunk loop in ``alarm()`` stopped at 2,067 MB after 1.9 s
at the default (64 MB: at 64-81 MB; 512 MB: at 513 MB); a 60,000-fire Python Worker storm took 0.81 s of
CPU with the default and 0.82 s with no limit (medians of 8: within the noise; the 10 ms look of a small
limit, +5%), and 5,000 ``sim.call()`` of an RPC returning at once 20.0 us each against 18.2 us (the read as
each call begins). Between calls the watchdog keeps looking (armed) for 200 looks, so a call need not wake it
(waking it cost ~10 us a call).
"""

from __future__ import annotations

from typing import Any

from ..errors import InvalidValue, RunawayError

__all__ = ["STEP_LIMIT", "TIME_LIMIT_MS", "NO_LIMIT", "EVENT_LIMIT", "WALL_LIMIT_S", "check_limit", "check_seconds",
           "over_step_limit", "past_time_limit", "over_event_limit", "over_wall_limit", "MEMORY_LIMIT_MB",
           "MAX_MEMORY_MB", "check_megabytes", "over_memory_limit", "task_of", "KernelLimit", "SimLimit",
           "next_look"]

STEP_LIMIT = 100_000  # kernel steps while the clock stands still
TIME_LIMIT_MS = 365 * 86_400_000  # one year of virtual time for a run() or call() told no until/limit
NO_LIMIT = 1 << 62  # what "no limit" compares as
EVENT_LIMIT = 5_000_000  # journal events one run() or call() may add
WALL_LIMIT_S = 60.0  # wall-clock seconds one step of a Python Worker's code may run
MAX_WALL_S = 86_400.0
MEMORY_LIMIT_MB = 2_048  # MB (2**20 bytes) one step of a Python Worker's code may grow the process's resident memory
MAX_MEMORY_MB = 1 << 20  # a TB


def check_limit(name: str, value: Any) -> int | None:
    if value is None or (value.__class__ is int and value >= 1):
        return value
    raise InvalidValue(f"{name} must be a positive int or None (no limit), got {value!r}")


def check_seconds(name: str, value: Any) -> float | None:
    if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= MAX_WALL_S):
        return None if value is None else float(value)
    raise InvalidValue(f"{name} must be seconds in (0, {MAX_WALL_S:,.0f}] or None (no limit), got {value!r:.60}")


def check_megabytes(name: str, value: Any) -> int | None:
    if value is None or (value.__class__ is int and 1 <= value <= MAX_MEMORY_MB):
        return value
    raise InvalidValue(f"{name} must be a whole number of MB in 1..{MAX_MEMORY_MB:,} or None (no limit), "
                       f"got {value!r:.60}")


def next_look(flush_at: int, first_seq: int, cap: int, width: int) -> int:
    """Where the runtime next looks at its event buffer (a length of its flat list, ``width`` values an
    event): at the batch's flush point ``flush_at``, or, when it comes first, once the run's
    ``event_limit``-th event is in it (``cap``: the number that event's successor would get; ``first_seq``:
    the number of the buffer's first event). So the run
    stops on its N-th event exactly, not at the next batch (it was up to a batch, or 65,536 events, later),
    at no cost to an event between two looks: the kernel then stops before its next step, and the step
    that journaled the N-th event finishes its own (an alarm is never half delivered)."""
    at = (cap - first_seq) * width
    return at if 0 < at < flush_at else flush_at


def over_event_limit(now: int, limit: int, count: int, loop: str) -> RunawayError:
    return RunawayError(
        f"stopped at virtual time {now:,} ms after {count:,} journal events in this run (event_limit={limit:,}): "
        f"{loop}; work that never ends (driven without until?): pass until= (or limit= to call) to run less far, "
        "or raise the limit: Simulation(event_limit=...) or sim.event_limit = None for no limit "
        "(alarmkit worker --event-limit N)"
    )


def over_wall_limit(what: str, limit: float, where: str, outcome: str = "the object was reset as a crash resets it"
                    ) -> RunawayError:
    return RunawayError(
        f"{what} ran for {limit:g} s of wall-clock time without returning to the simulation, stopped at {where} "
        f"(a synchronous endless loop, such as while True: pass?): {outcome}; "
        "if the code is only slow, raise the limit: Simulation(wall_limit_s=...) or sim.wall_limit_s = None "
        "for no limit (alarmkit worker --wall-limit S)"
    )


def over_memory_limit(what: str, limit: int, grew_mb: float, where: str,
                      outcome: str = "the object was reset as a crash resets it") -> RunawayError:
    return RunawayError(
        f"{what} grew the process's memory by {grew_mb:,.0f} MB in one step without returning to the simulation "
        f"(memory_limit_mb={limit:,}), stopped at {where} (an allocation that never ends, such as xs.append(...) "
        f"in a loop?): {outcome}; if the code needs the memory, raise the limit: Simulation(memory_limit_mb=...) "
        "or sim.memory_limit_mb = None for no limit (alarmkit worker --memory-limit MB)"
    )


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


class SimLimit:
    """A ``Simulation`` attribute that reads and sets (checked) a budget the runtime keeps itself."""

    def __init__(self, check: Any) -> None:
        self.check = check

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, sim: Any, owner: type | None = None) -> Any:
        return self if sim is None else sim.__dict__[f"_{self.name}"]

    def __set__(self, sim: Any, value: Any) -> None:
        sim.__dict__[f"_{self.name}"] = self.check(self.name, value)
