"""Alarm delivery into objects: ``deliver()`` (what every alarm backend calls), the ``alarm()``
handler's task and the handler wall-clock watchdog. ``Simulation`` inherits it; the state it
uses (``kernel``, ``profile``, ``faults``, the event buffer, ``_limits``, ``_watchdog``,
``_pending``) is set up in ``Simulation.__init__``.

This is the hottest code in alarmkit: every lifecycle runs ``deliver``, ``_start_handler`` and
``_alarm_done``. Pieces inlined there say what they stand for and what measured them
(docs/performance.md).
"""

from __future__ import annotations

import inspect
from types import CoroutineType
from typing import TYPE_CHECKING, Any, Callable

from ._host import Host
from ..kernel import Task, wrap_awaitable
from ._object import AlarmInfo
from ..kernel import PENDING
from .._text import text_of
from ..errors import Aborted, AlarmkitError, HandlerTimeout, ObjectCrashed, UncountedFailure

if TYPE_CHECKING:  # pragma: no cover
    from collections import deque

    from ..kernel import Kernel
    from .faults import Faults
    from .profiles import Profile

__all__ = ["AlarmDelivery", "WAKE_FOR_ALARM"]

# the name of the task that wakes an object (or waits out its gate) to deliver an alarm: make_ctx knows
# a constructor run in it is a cold wake by an alarm (Profile.id_name_since)
WAKE_FOR_ALARM = "deliver"


class AlarmDelivery:
    """``Simulation``'s alarm delivery (see the module docstring)."""

    kernel: Kernel
    profile: Profile
    faults: Faults
    fault_hooks: bool
    _limits: deque
    _watchdog: list | None
    _pending: tuple[int, int] | None

    def deliver(self, host: Host, scheduled: int, retry_count: int, done: Callable[[Any, bool, bool], None], token: Any) -> None:
        """Run ``alarm(info)`` in the object, then call ``done(token, ok, counted)``: how every
        ``AlarmBackend`` delivers an alarm (the one delivery API)."""
        host.invocations = n = host.invocations + 1
        self.log_packed("fire", host, scheduled, n, retry_count)
        if host.instance is not None and host.gate is None and not host.locks:
            self._start_handler(host, scheduled, retry_count, n, done, token)
        else:  # asleep or gated (a read in flight): the constructor (and its block_concurrency_while) runs first
            self.kernel.spawn(self._wake_then_start(host, scheduled, retry_count, n, done, token), WAKE_FOR_ALARM)

    async def _wake_then_start(self, host: Host, scheduled: int, retry_count: int, n: int, done: Callable, token: Any) -> None:
        try:
            host.ensure_live()
            await host.wait_gate()
        except Exception as err:  # noqa: BLE001 - a constructor's error is the attempt's failure
            # workerd does not count it (Profile.constructor_failure_counted): a constructor that never
            # recovers is retried on the backoff ladder for ever, never abandoned
            counted = self.profile.constructor_failure_counted or host.instance is not None
            self._alarm_failed(host, scheduled, retry_count, err, done, token, counted)
            return
        except BaseException as err:  # the object crashed with it (Host.ensure_live): an uncounted failure
            self._alarm_failed(host, scheduled, retry_count, host.interrupted(err, "the constructor"), done, token)
            raise
        self._start_handler(host, scheduled, retry_count, n, done, token)

    def _start_handler(self, host: Host, scheduled: int, retry_count: int, n: int, done: Callable, token: Any) -> None:
        try:
            if self.fault_hooks:
                self.faults.before_alarm(host, n, retry_count)
            handler = getattr(host.instance, "alarm", None)
            if handler is None and self.profile.no_alarm_handler == "drop":
                self._no_handler(host, scheduled, retry_count, done, token)
                return
            if handler is None:
                raise AlarmkitError(
                    f"{type(host.instance).__name__} has no alarm(info) handler; define async def alarm(self, info)"
                )
            # AlarmInfo(retry_count, is_retry, scheduled_time), without NamedTuple's Python-level __new__
            coro = handler(_new_tuple(AlarmInfo, (retry_count, retry_count > 0, scheduled)))
            if coro.__class__ is not CoroutineType:
                coro = wrap_awaitable(coro) if inspect.isawaitable(coro) else _value(coro)
        except Exception as err:  # noqa: BLE001 - user code or an injected fault
            self._alarm_failed(host, scheduled, retry_count, err, done, token)
            return
        except BaseException as err:  # KeyboardInterrupt, SystemExit: journaled, the object crashed, then raised
            self._alarm_failed(host, scheduled, retry_count, host.interrupted(err, "alarm"), done, token)
            raise
        data = (host, scheduled, retry_count, done, token)
        kernel = self.kernel
        if not self.fault_hooks and not kernel._ready and kernel.current is None and coro.__class__ is CoroutineType:
            # From a timer, with nothing else due first, the handler runs now, driven without a Task until it
            # first truly suspends: one that only awaits settled storage calls ends in this send (its crash
            # points need the Task's await count, so a fault plan takes the Task path below)
            try:
                fut = coro.send(None)
            except StopIteration:
                if self.cpu_ms:
                    kernel.charge(self.cpu_ms, None, (host,))
                host._touch()  # what _task_done does for a task
                host.after_commit(self._alarm_end, None, data, None)
                if kernel.take_next(host.turn):  # the turn's commit would be the next step: it is, in place
                    host.end_turn()
                return
            except Exception as err:  # noqa: BLE001 - the handler's failure is the attempt's
                if self.cpu_ms:
                    kernel.charge(self.cpu_ms, None, (host,))
                host._touch()
                host.after_commit(self._alarm_end, None, data, err)
                return
            except BaseException as err:  # KeyboardInterrupt, SystemExit: journaled, the object crashed, then raised
                self._alarm_failed(host, scheduled, retry_count, host.interrupted(err, "alarm"), done, token)
                raise
            task = Task(kernel, coro, "alarm", host._on_suspend, data, False)  # it suspended: a Task takes over
            host.tasks[task] = None
            task._callbacks = [self._alarm_done_cb]
            task._suspend(fut)
            if task._value is PENDING and task._exc is None:
                self._watch(task)
            return
        # host.spawn(), with _alarm_done as the one callback (it calls host._task_done first)
        task = Task(kernel, coro, "alarm", host._on_suspend, data, False)
        host.tasks[task] = None
        task._callbacks = [self._alarm_done_cb]
        kernel.start(task)  # from a timer, the handler runs now: nothing else would run before it
        if task._value is PENDING and task._exc is None:  # not task.done(), inlined; one that finished
            if not task.awaits:  # without suspending needs neither the gate nor the watchdog
                host.lock_until_started(task)  # a microtask was waiting: the input gate holds others till it runs
            self._watch(task)

    def _alarm_done(self, task: Task) -> None:
        host = task.data[0]
        if self.cpu_ms:  # Simulation(cpu_time=N): the run cost N ms of the isolate's time
            self.kernel.charge(self.cpu_ms, None, (host,))
        host._task_done(task)
        if self._watchdog is not None:
            self._unwatch()
        # the handler ended, its turn may not have: the outcome waits for the commit (the writes of a handler
        # that threw commit too), and a reset later in the turn (ctx.abort(), a crash) fails it instead
        # (workerd: the event's result waits on the output gate)
        host.after_commit(self._alarm_end, task, task.data, task._exc)

    def _alarm_end(self, task: Task | None, data: tuple, exc: BaseException | None, reset: BaseException | None) -> None:
        """The outcome of an ``alarm()`` (``task``: None when it ran without one) once its turn committed,
        or the reset that dropped the turn first."""
        host, scheduled, retry_count, done, token = data
        err = exc if reset is None else reset
        if reset is None and task is not None and self.fault_hooks and host.ctx is not None:
            # the handler's end is a crash point too, after its turn committed and before the alarm manager
            # learns the outcome: the process dies there and the alarm runs again (at-least-once delivery)
            task.awaits += 1
            if self.faults.crash_at_suspend(host, task):
                host.crash(f"injected at the end of alarm() (await {task.awaits}), after its writes committed")
                err = ObjectCrashed(f"object {host.label} crashed after alarm() returned, before the alarm was cleared")
        if err is None:
            nxt = host.alarm_backend.get(host)
            self.log_packed("handler_ok", host, scheduled, nxt, retry_count)
            done(token, True, False)
        else:
            self._alarm_failed(host, scheduled, retry_count, err, done, token)

    def _no_handler(self, host: Host, scheduled: int, retry_count: int, done: Callable, token: Any) -> None:
        """A due alarm of a class without ``alarm()``: dropped, not retried, with a warning once per class
        until the next restart (workerd: ``runAlarm`` logs "Attempted to run a scheduled alarm without a
        handler, ..." once per isolate, again in the new isolate after a restart, and returns retry = false;
        the alarm manager deletes the alarm)."""
        cls = type(host.instance)
        detail = {"error": "NoAlarmHandler", "message": f"{cls.__name__} has no alarm() handler: the alarm is dropped",
                  "counted": False, "retry": False}
        warned = self.__dict__.setdefault("_warned_no_alarm", set())
        if cls not in warned:
            warned.add(cls)
            detail["warning"] = f"{cls.__name__} has no alarm() handler; its due alarms are dropped (warned once)"
        self.log("handler_error", host, scheduled, None, retry_count, detail)
        done(token, False, False, False)

    def _alarm_failed(self, host: Host, scheduled: int, retry_count: int, err: BaseException, done: Callable, token: Any,
                      counted: bool | None = None) -> None:
        if counted is None:
            counted = not isinstance(err, (ObjectCrashed, UncountedFailure))
        if err.__class__ is Aborted and not err.retry_alarm:  # ctx.abort(reason, retry_alarm=False)
            self.log("handler_error", host, scheduled, None, retry_count, {**_error(err, False), "retry": False})
            done(token, False, False, False)
            return
        self.log("handler_error", host, scheduled, None, retry_count, _error(err, counted))
        done(token, False, counted)

    def _watch(self, task: Task) -> None:
        """The handler wall-clock limit. Deadlines are now + a constant, so one FIFO suffices.

        The watchdog timer is armed lazily: most handlers end in the instant they began (an awaited
        ``set_alarm`` suspends only until the next microtask), and a timer armed for them would be
        cancelled again. So the first deadline's timer is *pending*, its place among timers reserved
        now, and is armed at the end of the instant (``Kernel.at_instant_end``) only if a handler is
        still running then: timers fire exactly as when it was armed at once, cancelled at the last
        handler's end (``_unwatch``). Measured by benchmarks/bench_instructions.py: a call_at, a cancel and a heap entry saved per
        lifecycle, 67,809 -> 64,704 instructions (valgrind, no journal)."""
        limits = self._limits
        if self._watchdog is None:
            if self._pending is not None:
                while limits and limits[0][1].done():  # what _unwatch did at their ends
                    limits.popleft()
                if not limits:  # ... and then cancelled the watchdog
                    self._pending = None
            limits.append((self.kernel.now + self.profile.handler_limit_ms, task))
            if self._pending is None:
                self._pending = (limits[0][0], self.kernel.reserve())
                self.kernel._instant_end.append(self._arm_watchdog)  # at_instant_end(), without its check
        else:
            limits.append((self.kernel.now + self.profile.handler_limit_ms, task))

    def _arm_watchdog(self) -> None:
        """The instant is over: arm the pending watchdog if a handler still runs (see ``_watch``)."""
        pending, self._pending = self._pending, None
        limits = self._limits
        while limits and (limits[0][1]._value is not PENDING or limits[0][1]._exc is not None):  # done(), inlined
            limits.popleft()
        if limits and pending is not None:
            self._watchdog = self.kernel.call_at(pending[0], self._check_limits, seq=pending[1])

    def _unwatch(self) -> None:
        """Drop finished handlers from the front; with none left, no watchdog keeps the clock going."""
        limits = self._limits
        while limits and limits[0][1].done():
            limits.popleft()
        if not limits and self._watchdog is not None:
            self.kernel.cancel(self._watchdog)
            self._watchdog = None

    def _check_limits(self) -> None:
        self._watchdog = None
        limits, now, limit = self._limits, self.kernel.now, self.profile.handler_limit_ms
        while limits and (limits[0][1].done() or limits[0][0] <= now):
            deadline, task = limits.popleft()
            if not task.done():
                err = HandlerTimeout(f"alarm() ran past the {limit} ms wall-clock limit")
                host = task.data[0]
                if self.profile.limit_resets and host.ctx is not None:
                    # workerd aborts the object (IoContext's limit, context.abort()): a new instance for the
                    # retry, the turn's uncommitted writes gone, every call in it failing too
                    self.log("aborted", host, None, None, None, {"reason": str(err), "retry_alarm": True,
                                                                  "tasks": [t.name for t in host.tasks]})
                    host.drop(err)
                else:
                    task.kill(err)
        if limits:
            self._watchdog = self.kernel.call_at(limits[0][0], self._check_limits)


_new_tuple = tuple.__new__


async def _value(value: Any) -> Any:
    return value


def _error(err: BaseException, counted: bool) -> dict:
    return {"error": type(err).__name__, "message": text_of(err, 500), "counted": counted}
