"""The deterministic kernel: a virtual clock, a heap of timers, a coroutine trampoline.

It knows nothing about Durable Objects. Time is an integer number of milliseconds.
Ordering is total: timers fire by ``(time, sequence)``, kept in one integer key each; resumptions of coroutines whose
awaited future completed run as *microtasks* (FIFO) before the next timer, as promise
reactions run before the next macrotask in JavaScript. The trampoline drives ``async def``
coroutines itself (``coro.send``), so it works inside a running asyncio loop (Jupyter).
"""

from __future__ import annotations

import heapq
import random
from heapq import heappop, heappush
from collections import deque
from typing import Any, Callable

from ._budget import NO_LIMIT, STEP_LIMIT, TIME_LIMIT_MS, check_limit, over_step_limit, past_time_limit, task_of
from .._checks import MAX_MS, time_ms
from ._tasks import Future, Ready, Task, as_coro, wrap_awaitable
from ..errors import AlarmkitError, InternalError, InvalidValue, RunawayError

__all__ = ["Kernel", "Future", "Ready", "Task", "SEED_MAX", "as_coro", "wrap_awaitable"]

SEED_MAX = 2**63 - 1

_COMPACT_MIN = 1024
# The kernel refuses a time its journal's BIGINT columns could not hold. Public entries refuse
# beyond 2**53 (MAX_MS) already; what the runtime adds to such a time (a retry, a latency) stays far below this.
_KERNEL_MAX = 2**62
_INF = float("inf")
# A timer's key is ``time << _SHIFT | seq``: ordering ints is ordering (time, seq), and a heap of ints
# pops and pushes in fewer instructions than one of [time, seq, fn, args] lists, which compare item by
# item (a pop and a push on a heap of 20,000: 10,037 against 10,893 instructions, 1.29-1.39 against
# 1.37-1.54 us; benchmarks/bench_instructions.py measures the lifecycle). seq would pass 2**64 after
# 2**64 timers, about 58,000 years at ten million timers a second.
_SHIFT = 64
# call_ranked holds a rank in seq's bits 40 to 63, above the arming number (below 2**40 for a day at 10M timers/s)


class Kernel:
    """Virtual clock + timer heap + microtask queue + one seeded random source.

    ``run()`` and ``run_until_complete()`` stop runaway work with ``RunawayError``: see ``_budget``.

    ``at_instant_end(fn)``: call ``fn()`` once when the current instant's work is done (no microtask
    ready, no timer due now), before the clock moves or a run returns; several run in the order given.
    It may arm timers; with ``reserve()`` one armed then orders as if armed when the seq was reserved.
    The runtime's handler watchdog uses it to arm nothing for a handler that ends in the instant it began.
    """

    def __init__(self, seed: int = 0, step_limit: int | None = STEP_LIMIT, time_limit_ms: int | None = TIME_LIMIT_MS,
                 start_ms: int = 0) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise AlarmkitError(f"seed must be an int, got {seed!r}")
        if not 0 <= seed <= SEED_MAX:  # random.Random(-n) is random.Random(n); journals keep seeds as BIGINT
            raise AlarmkitError(f"seed must be in 0..2**63-1 ({SEED_MAX}), got {seed}")
        self.step_limit = step_limit  # checked by the property, which also sets _limit
        self.time_limit_ms = check_limit("time_limit_ms", time_limit_ms)
        self.end_ms = _KERNEL_MAX  # the clock's end: run() and a call stop short of it (the runtime sets 2**53)
        self.on_interrupt: Callable[[Task, BaseException], None] | None = None  # the runtime's hook
        self.describe: Callable[[Callable, tuple], str] | None = None  # names the culprit of a RunawayError
        self.now: int = time_ms("start_ms", start_ms)  # the clock's first reading (epoch ms, or 0)
        self.seed = seed
        self.rng = random.Random(seed)
        self._heap: list[int] = []  # timer keys (see _SHIFT), cancelled ones too until they come up
        self._timers: dict[int, tuple[Callable, tuple]] = {}  # live timers by key: fn, args
        self._seq = 0
        self._cancelled = 0  # cancelled entries still in the heap (an upper bound)
        self._ready: deque = deque()
        self.current: Task | None = None  # the task being stepped, for whoever asks
        self._ready_none = Ready(self, None)  # immutable, so one serves every checkpoint(None)
        self._instant_end: list[Callable[[], None]] = []  # see at_instant_end
        # Simulation(cpu_time="measured"): a clock of real ns; each step's own time, in whole ms, is charged
        # to the virtual clock (``charge``); None: code costs no virtual time (the deterministic default)
        self.cpu_clock: Callable[[], int] | None = None
        self.on_charge: Callable[[int, Callable, tuple], None] | None = None  # the runtime journals each charge
        self._stop: RunawayError | None = None  # see stop()

    @property
    def step_limit(self) -> int | None:
        """Steps one run() or call() may take while the clock stands still (None: no limit)."""
        return self._step_limit

    @step_limit.setter
    def step_limit(self, value: int | None) -> None:
        self._step_limit = check_limit("step_limit", value)
        self._limit = NO_LIMIT if value is None else value  # what step() compares with
        self._stop = None
        self._steps = 0  # steps taken at the current instant

    def stop(self, err: RunawayError | None) -> None:
        """Raise ``err`` before the next step (a microtask, a timer at this instant or a later one), the
        step not taken: how a budget the runtime keeps (its events)
        stops a run between two whole steps at no cost to the step itself. ``None`` withdraws it."""
        self._stop = err
        limit = self._step_limit
        self._limit = -1 if err is not None else NO_LIMIT if limit is None else limit

    def _over(self, fn: Callable, args: tuple) -> RunawayError:
        err = self._stop
        if err is None:
            return over_step_limit(self.now, self._limit, self._culprit(fn, args))
        self.stop(None)
        return err

    # -- scheduling -----------------------------------------------------------------
    def call_at(self, t: int, fn: Callable, *args: Any, seq: int | None = None) -> int:
        """Run ``fn(*args)`` at virtual time ``t`` (an int of ms); returns a handle for ``cancel``.
        ``seq``: a number from ``reserve()``, to order the timer among those at ``t`` as if armed then."""
        if t.__class__ is not int or t < self.now or t > _KERNEL_MAX:
            raise self._bad_time(t)
        if seq is None:
            seq = self._seq = self._seq + 1
        elif (seq.__class__ is not int or not 0 < seq <= self._seq or (t << _SHIFT | seq) in self._timers):
            raise InternalError(f"call_at(seq={seq!r}) needs a number reserve() gave, used once")
        key = t << _SHIFT | seq
        self._timers[key] = (fn, args)
        heappush(self._heap, key)
        return key

    def call_ranked(self, t: int, order: Any, fn: Callable, *args: Any) -> int:
        """``call_at(t, fn, *args)`` with a place among the timers at ``t`` drawn from ``order`` (a
        ``random.Random``; None: arming order): a rank of 20 random bits, held in the key's bits 40 to 63
        above the arming number, so the timer runs after every ordinary timer at ``t`` (the alarm
        scheduler's seeded same-instant order), ranked timers in rank order, ties in arming order."""
        if order is None:
            return self.call_at(t, fn, *args)
        if t.__class__ is not int or t < self.now or t > _KERNEL_MAX:
            raise self._bad_time(t)
        seq = self._seq = self._seq + 1
        key = t << _SHIFT | (order.getrandbits(20) + 1) << 40 | seq
        self._timers[key] = (fn, args)
        heappush(self._heap, key)
        return key

    def take_next(self, handle: int | None) -> bool:
        """Take out the timer ``handle`` when it is the very next step (no microtask, no instant-end hook, no
        timer before it, real CPU time not measured, the step budget not spent), counted as that step: the
        caller, at its own step's end, then runs it in place (no heap pop, no turn of the loop). False, and
        nothing changed, otherwise: the timer runs as a step of its own."""
        heap = self._heap
        if (self._ready or self._instant_end or not heap or heap[0] != handle or self.cpu_clock is not None
                or self._steps >= self._limit):
            return False
        heappop(heap)
        del self._timers[handle]
        self._steps += 1
        return True

    def _bad_time(self, t: Any) -> AlarmkitError:
        if t.__class__ is int and t < self.now:
            return InternalError(f"time can't go backwards: call_at({t}) at now={self.now}")
        return InvalidValue(f"call_at(t) needs an int of ms in now..2**62, got {t!r}")

    def at_instant_end(self, fn: Callable[[], None]) -> None:
        """Call ``fn()`` once, when this instant's work is done (see the class docstring)."""
        if not callable(fn):
            raise AlarmkitError(f"at_instant_end needs a function to call, got {fn!r}")
        self._instant_end.append(fn)

    def reserve(self) -> int:
        """A timer's place in the order of timers at one time, taken now, for ``call_at(seq=...)`` later."""
        self._seq += 1
        return self._seq

    def call_later(self, delay: int, fn: Callable, *args: Any) -> int:
        if delay < 0:
            raise InternalError(f"negative delay {delay}")
        return self.call_at(self.now + delay, fn, *args)

    def cancel(self, handle: int | None) -> None:
        """Drop the timer ``call_at`` returned ``handle`` for; nothing if it ran or was dropped already."""
        if handle is None or self._timers.pop(handle, None) is None:
            return
        self._cancelled += 1
        heap = self._heap
        if self._cancelled > _COMPACT_MIN and 2 * self._cancelled > len(heap):
            # A cancelled entry stays in the heap until its time comes; a runtime that arms and
            # cancels a far timer per handler would grow it without bound. As asyncio does, drop
            # them all once they are half the heap. (time, seq) is a total order, so the order
            # timers fire in does not depend on the heap's layout.
            timers = self._timers
            heap[:] = [k for k in heap if k in timers]
            heapq.heapify(heap)
            self._cancelled = 0

    def call_soon(self, fn: Callable, *args: Any) -> None:
        """Run ``fn(*args)`` as a microtask: now, before any timer."""
        self._ready.append((fn, args))

    # -- awaitables -----------------------------------------------------------------
    def sleep(self, ms: int) -> Future:
        if ms.__class__ is not int or ms < 0 or self.now + ms > MAX_MS:
            raise InvalidValue(
                f"sleep needs an int of milliseconds in 0..{MAX_MS - self.now:,} (the clock ends at 2**53 ms), got {ms!r}"
            )
        fut = Future()
        self.call_later(ms, fut.set_result, None)
        return fut

    def checkpoint(self, value: Any = None) -> Ready:
        """An awaitable whose value is known now; awaiting it still suspends the task once."""
        return self._ready_none if value is None else Ready(self, value)

    def spawn(self, coro, name: str = "", on_suspend=None, data: Any = None) -> Task:
        return Task(self, coro, name, on_suspend, data)

    def start(self, task: Task) -> None:
        """Start a task made with ``start=False``: its first step runs now if it would run next
        anyway (no microtask waiting, no task running), else as a microtask."""
        if self._ready or self.current is not None:
            self._ready.append((task._step, (None, None)))
        else:
            task._step(None, None)

    def gather(self, *aws: Any) -> Future:
        """A future of the list of results, in order; the first failure fails it."""
        futs = [a if isinstance(a, Future) else self.spawn(as_coro(a)) for a in aws]
        out = Future()
        results: list[Any] = [None] * len(futs)
        left = [len(futs)]
        if not futs:
            out.set_result([])
            return out

        def done(i: int, f: Future) -> None:
            if out.done():
                return
            if f._exc is not None:
                out.set_exception(f._exc)
                return
            results[i] = f._value
            left[0] -= 1
            if left[0] == 0:
                out.set_result(results)

        for i, f in enumerate(futs):
            f.add_done_callback(lambda f, i=i: done(i, f))
        return out

    # -- running --------------------------------------------------------------------
    def peek(self) -> float:
        """Time of the next event (``now`` if a microtask is ready; inf if nothing is left)."""
        if self._ready:
            return self.now
        heap, timers = self._heap, self._timers
        while heap and heap[0] not in timers:
            heappop(heap)
        if self._instant_end and (not heap or heap[0] >> _SHIFT != self.now):
            self._end_instant()  # may arm a timer
            return self.peek()
        return heap[0] >> _SHIFT if heap else _INF

    def _end_instant(self) -> None:
        hooks, self._instant_end = self._instant_end, []
        for fn in hooks:
            fn()

    def step(self, end: int = NO_LIMIT) -> bool:
        """Process one microtask, or else the next timer due by virtual time ``end``; False when there
        is none. ``run()`` takes its steps through the same loop (``_steps_until``), ``run_until_complete()``
        calls it. This instant's ``at_instant_end`` hooks run first once its work is
        done. Every step counts against ``step_limit`` (steps while the clock stands still, counted
        afresh when the clock moves and when a run or a call begins); past it ``RunawayError``, the
        step not taken and the simulation left as it was."""
        return self._steps_until(end, True)

    def _steps_until(self, end: int, once: bool) -> bool:
        """The kernel's one step loop, shared by ``step()`` (``once``: one step taken, then True) and
        ``run()`` (steps taken until nothing is due by ``end``): no call per step. False when there is
        no step to take."""
        ready, heap, took = self._ready, self._heap, False
        while True:  # the instant's hooks ran or a cancelled timer came up: look again
            if ready:
                n = self._steps = self._steps + 1
                if n > self._limit:
                    raise self._over(*ready[0])
                fn, args = ready.popleft()
                if self.cpu_clock is None:
                    fn(*args)
                else:
                    self._timed(fn, args)
                if once:
                    return True
                took = True
                continue
            if self._instant_end and (not heap or heap[0] >> _SHIFT != self.now):
                self._end_instant()  # may queue work or arm a timer
                continue
            if not heap or heap[0] >> _SHIFT > end:
                return took
            key = heappop(heap)
            entry = self._timers.pop(key, None)
            if entry is None:  # cancelled: dropped as it comes up
                continue
            t = key >> _SHIFT
            fn, args = entry
            if t > self.now:  # (t < now only after a charge: the timer runs late, when the code is done)
                if self._stop is not None:  # a budget the runtime keeps ran out: the clock does not move on
                    heappush(heap, key)
                    self._timers[key] = entry
                    raise self._over(fn, args)
                self.now = t
                self._steps = 1
            else:
                n = self._steps = self._steps + 1
                if n > self._limit:
                    heappush(heap, key)  # not run: the simulation stays as it was
                    self._timers[key] = entry
                    raise self._over(fn, args)
            if self.cpu_clock is None:
                fn(*args)
            else:
                self._timed(fn, args)
            if once:
                return True
            took = True

    def _timed(self, fn: Callable, args: tuple) -> None:
        """Run one step and charge its real time, in whole ms, to the virtual clock (cpu_time="measured")."""
        clock = self.cpu_clock
        began = clock()
        try:
            fn(*args)
        finally:
            ms = (clock() - began) // 1_000_000
            if ms > 0:
                self.charge(ms, fn, args)

    def charge(self, ms: int, fn: Callable | None = None, args: tuple = ()) -> None:
        """Code ran for ``ms`` ms: the clock moves on by that much at once, and the timers due meanwhile
        run late, after it (one isolate, one thread: workerd's alarms wait for a busy isolate)."""
        if ms.__class__ is not int or ms < 0:
            raise InternalError(f"charge(ms) needs an int >= 0, got {ms!r}")
        self.now += ms
        if self.on_charge is not None:
            self.on_charge(ms, fn, args)

    def run(self, until: int | None = None) -> None:
        """Process events until none are left, or until virtual time ``until`` (then now == until).

        Raises ``RunawayError`` past a budget (see the class), with the simulation left as it was.
        """
        start = self.now
        cap = NO_LIMIT if self.time_limit_ms is None else start + self.time_limit_ms
        if until is None:
            end = cap
        else:
            end = time_ms("run(until=...)", until)
            if end < start:
                raise AlarmkitError(f"time can't go backwards: run(until={until}) at now={start}")
        # until= does not lift the time budget: run(until=2**53) over a retry loop would otherwise run on
        # for ever with no limit; a clock with nothing to do before until still jumps straight there
        self._steps = 0
        self._steps_until(min(end, cap, self.end_ms), False)
        if self.end_ms < self.peek() != _INF and min(end, cap) >= self.end_ms:  # it reached the end, work is left past it
            raise self._past_clock_end()
        if end > cap and self.peek() <= end:  # stopped at the time limit with work left before until
            raise self._past_time_limit(start, until)
        if until is not None:
            self.now = max(self.now, end)  # (a charge may have carried the clock past until)
        elif self.peek() != _INF:  # stopped at the time limit, not because nothing is left
            raise self._past_time_limit(start)

    def advance(self, ms: int) -> None:
        if ms.__class__ is not int or ms < 0 or self.now + ms > MAX_MS:
            raise InvalidValue(f"advance(ms) needs an int of ms in 0..{MAX_MS - self.now:,} (the clock ends at 2**53 ms), got {ms!r}")
        self.run(until=self.now + ms)

    def run_until_complete(self, aw: Any, limit: int | None = None) -> Any:
        """Drive the kernel until ``aw`` completes; return its value or raise its error.

        ``limit`` is a virtual time the call must finish by; without it, ``time_limit_ms`` applies.
        """
        if limit is not None:
            limit = time_ms("call(limit=...)", limit)
        fut = aw if isinstance(aw, Future) else self.spawn(as_coro(aw), name="main")
        start = self.now
        end = limit if limit is not None else NO_LIMIT if self.time_limit_ms is None else start + self.time_limit_ms
        self._steps = 0
        step, stop = self.step, min(end, self.end_ms)
        while not fut.done():
            if step(stop):
                continue
            nxt = self.peek()  # nothing due by end: say why
            if self.end_ms < nxt != _INF and end >= self.end_ms:
                raise self._past_clock_end()
            if nxt == _INF:
                raise AlarmkitError(
                    "deadlock: the awaited call can never complete (nothing left to run); "
                    "did the object await something nobody resolves?"
                )
            if limit is not None:
                raise AlarmkitError(f"still waiting at virtual time {limit} ms; raise the limit")
            raise self._past_time_limit(start)
        return fut.result()

    # -- runaway work ---------------------------------------------------------------
    def _culprit(self, fn: Callable, args: tuple) -> str:
        if self.describe is not None:
            return self.describe(fn, args)
        task = task_of(fn, args)
        return f"task {task.name!r}" if task is not None else getattr(fn, "__qualname__", repr(fn))

    def _past_clock_end(self) -> RunawayError:
        """The next live timer is due past the clock's end (2**53 ms in a simulation: the journal and every
        reader of it hold no later time); nothing past it ran or was journaled, and the simulation is
        left as it was, at its last time before the end."""
        key = self._heap[0]  # peek() dropped the cancelled entries: the next live timer
        t, (fn, args) = key >> _SHIFT, self._timers[key]
        end = "2**53 ms" if self.end_ms == MAX_MS else f"{self.end_ms:,} ms"
        return RunawayError(f"the virtual clock ends at {end} ({self.end_ms:,}), and {self._culprit(fn, args)} is due at "
                            f"{t:,} ms, {t - self.end_ms:,} ms past it; nothing past the end ran or was journaled: start "
                            "the simulation earlier (Simulation(start_ms=...)) or stop it sooner (run(until=...))")

    def _past_time_limit(self, start: int, until: int | None = None) -> RunawayError:
        key = self._heap[0]  # peek() dropped the cancelled entries: the next live timer
        t, (fn, args) = key >> _SHIFT, self._timers[key]
        return past_time_limit(self.now, t, self.time_limit_ms, start, self._culprit(fn, args), until)
