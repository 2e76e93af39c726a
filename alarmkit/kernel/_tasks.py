"""The kernel's awaitables: ``Future``, ``Ready`` (a value known now) and ``Task`` (a coroutine the
kernel steps). They know the kernel only as the object whose microtask queue (``_ready``) they
append to and whose ``current`` task they set; ``_kernel.Kernel`` is the clock and the heap.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Callable, Protocol

from ..errors import AlarmkitError, InternalError


class Kernel(Protocol):
    """The kernel as its awaitables know it (``_kernel.Kernel`` satisfies it; it imports this module)."""

    _ready: deque
    current: Any
    on_interrupt: Callable | None

    def call_soon(self, fn: Callable, *args: Any) -> None: ...

__all__ = ["Future", "Ready", "Task", "PENDING", "as_coro", "wrap_awaitable"]

PENDING = _PENDING = object()  # a Future's value before it has one


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
        return (yield self)  # Task._step resumes it two microtasks later with _value


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
        except BaseException as err:  # KeyboardInterrupt, SystemExit: it propagates (as in asyncio), once
            kernel.current = None  # the runtime's hook has journaled it and crashed the object
            if not self._killed and kernel.on_interrupt is not None:
                kernel.on_interrupt(self, err)
            if not self.done():  # awaiters get an ordinary error, not a second interruption
                self.set_exception(AlarmkitError(f"task {self.name!r} was interrupted by {type(err).__name__}"))
            raise
        kernel.current = None
        self._suspend(fut)

    def _suspend(self, fut: Any) -> None:
        """The coroutine yielded ``fut`` (its step is over): wait for it. Also how a coroutine driven
        without a task until its first true suspension (the runtime's alarm() handlers) is handed over."""
        kernel = self.kernel
        if fut.__class__ is Ready:
            # await of a known value (set_alarm's and storage's checkpoints) used to await a Future a
            # microtask resolved (hop 1: set_result -> _wakeup queued hop 2, this step). Same hops, same
            # order, no Future, callbacks, set_result, _fire, _wakeup (with the two steps in
            # _scheduler.arm and Host._on_suspend, 79,820 -> 70,946 instructions a lifecycle awaiting set_alarm)
            kernel._ready.append((self._resume, hop := [fut._value, False]))
            if not self._killed:
                self.awaits += 1
                if self.on_suspend is not None:
                    self.on_suspend(self)
                hop[1] = not self._killed  # hop 1 queues the step only for a task that suspended alive
            return
        if self._killed:  # it died while running (a crash injected from inside this step)
            return
        if not isinstance(fut, Future):
            self.kernel.call_soon(self._step, None, AlarmkitError(
                f"awaited {fut!r}, which is not an alarmkit awaitable; inside a simulated "
                "object await ctx.sleep(ms), storage calls, stubs or kernel futures, not asyncio"))
            return
        self.awaits += 1
        if self.on_suspend is not None:
            self.on_suspend(self)
            if self._killed:
                return
        fut.add_done_callback(self._wakeup)

    def _resume(self, value: Any, waiting: bool) -> None:
        """Hop 1 of an ``await`` of a Ready (see ``_step``): queue the step that resumes it."""
        if waiting:
            self.kernel._ready.append((self._step, (value, None)))

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


async def wrap_awaitable(aw: Any) -> Any:
    """A coroutine awaiting ``aw`` (any awaitable), for what runs only coroutines: the one such helper."""
    return await aw


def as_coro(aw: Any):
    """``aw`` as a coroutine the kernel can drive (a coroutine itself, or one awaiting it)."""
    if hasattr(aw, "send") and hasattr(aw, "throw"):
        return aw
    if hasattr(aw, "__await__"):
        return wrap_awaitable(aw)
    raise AlarmkitError(f"{aw!r} is not awaitable; pass a coroutine, a Future or a stub call")

