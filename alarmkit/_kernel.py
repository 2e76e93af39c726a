"""The deterministic kernel: a virtual clock, a heap of timers, a coroutine trampoline.

It knows nothing about Durable Objects. Time is an integer number of milliseconds.
Ordering is total: timers fire by ``(time, sequence)``; resumptions of coroutines whose
awaited future completed run as *microtasks* (FIFO) before the next timer, as promise
reactions run before the next macrotask in JavaScript. The trampoline drives ``async def``
coroutines itself (``coro.send``), so it works inside a running asyncio loop (Jupyter).
"""

from __future__ import annotations

import heapq
import random
from collections import deque
from typing import Any, Callable

from .errors import AlarmkitError, InternalError

__all__ = ["Kernel", "Future", "Ready", "Task", "SEED_MAX"]

SEED_MAX = 2**63 - 1

_PENDING = object()
_COMPACT_MIN = 1024


class Future:
    """A value that arrives later. ``await fut`` suspends the awaiting task until it does."""

    __slots__ = ("_value", "_exc", "_callbacks")

    def __init__(self) -> None:
        self._value: Any = _PENDING
        self._exc: BaseException | None = None
        self._callbacks: list[Callable[[Future], None]] | None = None

    def done(self) -> bool:
        return self._value is not _PENDING or self._exc is not None

    def result(self) -> Any:
        if self._exc is not None:
            raise self._exc
        if self._value is _PENDING:
            raise AlarmkitError("future is not done yet; await it or run the simulation further")
        return self._value

    def exception(self) -> BaseException | None:
        return self._exc

    def set_result(self, value: Any = None) -> None:
        if self.done():
            raise InternalError("future resolved twice")
        self._value = value
        self._fire()

    def set_exception(self, exc: BaseException) -> None:
        if self.done():
            raise InternalError("future resolved twice")
        self._exc = exc
        self._fire()

    def add_done_callback(self, fn: Callable[[Future], None]) -> None:
        if self.done():
            fn(self)
        elif self._callbacks is None:
            self._callbacks = [fn]
        else:
            self._callbacks.append(fn)

    def _fire(self) -> None:
        cbs, self._callbacks = self._callbacks, None
        if cbs:
            for fn in cbs:
                fn(self)

    def __await__(self):
        if not self.done():
            yield self
        return self.result()


class Ready:
    """``value``, known already; ``await`` suspends once (a commit point) and returns it.

    Not awaiting it costs nothing, as a promise nobody awaits costs nothing in JavaScript.
    """

    __slots__ = ("_kernel", "_value")

    def __init__(self, kernel: Kernel, value: Any) -> None:
        self._kernel = kernel
        self._value = value

    def __await__(self):
        fut = Future()
        self._kernel.call_soon(fut.set_result, self._value)
        return (yield fut)


class Task(Future):
    """A coroutine driven by the kernel; a Future of its return value.

    ``on_suspend(task)`` is called every time the coroutine suspends (``task.awaits`` counts
    them); the runtime uses it for commit points and injected crashes, by calling ``kill``.
    """

    __slots__ = ("kernel", "name", "_coro", "awaits", "on_suspend", "data", "_killed")

    def __init__(self, kernel: Kernel, coro, name: str = "", on_suspend=None, data: Any = None, start: bool = True):
        self._value = _PENDING  # Future.__init__, inlined: a task per alarm() adds up
        self._exc = None
        self._callbacks = None
        self.kernel = kernel
        self.name = name
        self._coro = coro
        self.awaits = 0
        self.on_suspend = on_suspend
        self.data = data
        self._killed = False
        if start:
            kernel._ready.append((self._step, (None, None)))

    def _step(self, value: Any, exc: BaseException | None) -> None:
        if self._killed:
            return
        kernel = self.kernel
        kernel.current = self
        try:
            if exc is None:
                fut = self._coro.send(value)
            else:
                fut = self._coro.throw(exc)
        except StopIteration as stop:
            kernel.current = None
            if not self._killed:  # set_result without its done check: a live task is not done yet
                self._value = stop.value
                self._fire()
            return
        except Exception as err:  # user code failed: the task's result is the error
            kernel.current = None
            if not self._killed:
                self.set_exception(err)
            return
        kernel.current = None
        if self._killed:  # it died while running (a crash injected from inside this step)
            return
        if not isinstance(fut, Future):
            self.kernel.call_soon(
                self._step,
                None,
                AlarmkitError(
                    f"awaited {fut!r}, which is not an alarmkit awaitable; inside a simulated "
                    "object await ctx.sleep(ms), storage calls, stubs or kernel futures, not asyncio"
                ),
            )
            return
        self.awaits += 1
        if self.on_suspend is not None:
            self.on_suspend(self)
            if self._killed:
                return
        fut.add_done_callback(self._wakeup)

    def _wakeup(self, fut: Future) -> None:
        if fut._exc is not None:
            self.kernel.call_soon(self._step, None, fut._exc)
        else:
            self.kernel.call_soon(self._step, fut._value, None)

    def kill(self, exc: BaseException) -> None:
        """The process running this coroutine died: drop it without running its cleanup."""
        if self.done():
            return
        self._killed = True
        coro, self._coro = self._coro, None
        try:  # its finally blocks run now; whatever they try against the dead object fails
            coro.close()
        except BaseException:  # noqa: BLE001 - a dying coroutine may raise anything, or be running
            pass
        self.set_exception(exc)


class Kernel:
    """Virtual clock + timer heap + microtask queue + one seeded random source."""

    def __init__(self, seed: int = 0) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise AlarmkitError(f"seed must be an int, got {seed!r}")
        if not 0 <= seed <= SEED_MAX:  # random.Random(-n) is random.Random(n); journals keep seeds as BIGINT
            raise AlarmkitError(f"seed must be in 0..2**63-1 ({SEED_MAX}), got {seed}")
        self.now: int = 0
        self.seed = seed
        self.rng = random.Random(seed)
        self._heap: list[list] = []
        self._seq = 0
        self._cancelled = 0  # cancelled entries still in the heap (an upper bound)
        self._ready: deque = deque()
        self.current: Task | None = None  # the task being stepped, for whoever asks
        self._ready_none = Ready(self, None)  # immutable, so one serves every checkpoint(None)

    # -- scheduling -----------------------------------------------------------------
    def call_at(self, t: int, fn: Callable, *args: Any) -> list:
        """Run ``fn(*args)`` at virtual time ``t``; returns a handle for ``cancel``."""
        if t < self.now:
            raise InternalError(f"time can't go backwards: call_at({t}) at now={self.now}")
        self._seq += 1
        entry = [t, self._seq, fn, args]
        heapq.heappush(self._heap, entry)
        return entry

    def call_later(self, delay: int, fn: Callable, *args: Any) -> list:
        if delay < 0:
            raise InternalError(f"negative delay {delay}")
        return self.call_at(self.now + delay, fn, *args)

    def cancel(self, handle: list | None) -> None:
        if handle is None or handle[2] is None:
            return
        handle[2] = None
        self._cancelled += 1
        heap = self._heap
        if self._cancelled > _COMPACT_MIN and 2 * self._cancelled > len(heap):
            # A cancelled entry stays in the heap until its time comes; a runtime that arms and
            # cancels a far timer per handler would grow it without bound. As asyncio does, drop
            # them all once they are half the heap. (time, seq) is a total order, so the order
            # timers fire in does not depend on the heap's layout.
            heap[:] = [e for e in heap if e[2] is not None]
            heapq.heapify(heap)
            self._cancelled = 0

    def call_soon(self, fn: Callable, *args: Any) -> None:
        """Run ``fn(*args)`` as a microtask: now, before any timer."""
        self._ready.append((fn, args))

    # -- awaitables -----------------------------------------------------------------
    def sleep(self, ms: int) -> Future:
        if isinstance(ms, bool) or not isinstance(ms, int) or ms < 0:
            raise AlarmkitError(f"sleep needs a non-negative int of milliseconds, got {ms!r}")
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
        futs = [a if isinstance(a, Future) else self.spawn(_as_coro(a)) for a in aws]
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
        heap = self._heap
        while heap and heap[0][2] is None:
            heapq.heappop(heap)
        return heap[0][0] if heap else float("inf")

    def step(self) -> bool:
        """Process one microtask, or else one timer. False when nothing is left."""
        if self._ready:
            fn, args = self._ready.popleft()
            fn(*args)
            return True
        heap = self._heap
        while heap:
            t, _, fn, args = heapq.heappop(heap)
            if fn is None:
                continue
            self.now = t
            fn(*args)
            return True
        return False

    def run(self, until: int | None = None) -> None:
        """Process events until none are left, or until virtual time ``until`` (then now == until)."""
        ready, heap, pop = self._ready, self._heap, heapq.heappop
        if until is None:
            while True:
                while ready:
                    fn, args = ready.popleft()
                    fn(*args)
                if not heap:
                    return
                t, _, fn, args = pop(heap)
                if fn is not None:
                    self.now = t
                    fn(*args)
        if until < self.now:
            raise AlarmkitError(f"time can't go backwards: run(until={until}) at now={self.now}")
        while True:
            while ready:
                fn, args = ready.popleft()
                fn(*args)
            if not heap or heap[0][0] > until:
                break
            t, _, fn, args = pop(heap)
            if fn is not None:
                self.now = t
                fn(*args)
        self.now = until

    def advance(self, ms: int) -> None:
        self.run(until=self.now + ms)

    def run_until_complete(self, aw: Any, limit: int | None = None) -> Any:
        """Drive the kernel until ``aw`` completes; return its value or raise its error."""
        fut = aw if isinstance(aw, Future) else self.spawn(_as_coro(aw), name="main")
        while not fut.done():
            if limit is not None and self.peek() > limit:
                raise AlarmkitError(f"still waiting at virtual time {limit} ms; raise the limit")
            if not self.step():
                raise AlarmkitError(
                    "deadlock: the awaited call can never complete (nothing left to run); "
                    "did the object await something nobody resolves?"
                )
        return fut.result()


async def _await(aw: Any) -> Any:
    return await aw


def _as_coro(aw: Any):
    if hasattr(aw, "send") and hasattr(aw, "throw"):
        return aw
    if hasattr(aw, "__await__"):
        return _await(aw)
    raise AlarmkitError(f"{aw!r} is not awaitable; pass a coroutine, a Future or a stub call")

