"""The runtime: the ``Simulation`` (profile, scheduler, journal rows, restarts), alarm delivery
into objects, RPC stubs and namespaces. Objects themselves live in ``_host.Host``.
"""

from __future__ import annotations

import inspect
import sys
from collections import deque
from types import CoroutineType
from typing import Any, Callable

from ._events import WIDTH, EventBuffer, dump
from ._host import _UNSET, Host  # noqa: F401 - _UNSET is re-exported for _facets
from ._kernel import Future, Kernel, Task
from ._object import AlarmInfo, DurableObject, DurableObjectState
from ._scheduler import WorkerdScheduler
from ._storage import ConnectionPool
from .errors import AlarmkitError, HandlerTimeout, ObjectCrashed
from .faults import Faults, UncountedFailure
from .profiles import Profile, get_profile

__all__ = ["Simulation", "Namespace", "Stub", "Host", "SCHEDULERS"]
SCHEDULERS: dict[str, Callable[[Simulation], Any]] = {"workerd": WorkerdScheduler}


def check_method(cls: type, method: str, what: str = "") -> None:
    """An RPC target must be a public method: name the ones there are when it is not."""
    if method.startswith("_"):
        raise AttributeError(method)
    if not callable(getattr(cls, method, None)):
        public = sorted(m for m in dir(cls) if not m.startswith("_") and callable(getattr(cls, m)))
        raise AlarmkitError(f"{what}{cls.__name__} has no method {method!r}; its methods: {public}")


class Stub:
    """A reference to an object; ``await stub.method(*args)`` is an RPC into it."""

    __slots__ = ("_sim", "_host")

    def __init__(self, sim: Simulation, host: Host) -> None:
        self._sim = sim
        self._host = host

    @property
    def id(self) -> str:
        return self._host.name

    def __getattr__(self, method: str) -> Callable[..., Any]:
        check_method(self._host.namespace.cls, method)
        return lambda *args, **kwargs: self._sim.rpc(self._host, method, args, kwargs)

    def __repr__(self) -> str:
        return f"<Stub {self._host.namespace.binding}:{self._host.label}>"


class Namespace:
    """A Durable Object class bound under a name; ``get(name)`` gives a stub."""

    def __init__(self, sim: Simulation, binding: str, cls: type) -> None:
        if not (isinstance(cls, type) and issubclass(cls, DurableObject)):
            raise AlarmkitError(f"namespace {binding!r} needs a DurableObject subclass, got {cls!r}")
        self.sim = sim
        self.binding = binding
        self.cls = cls
        self.hosts: dict[str, Host] = {}

    def get(self, name: str) -> Stub:
        if not isinstance(name, str) or not name:
            raise AlarmkitError(f"object names are non-empty strings, got {name!r}")
        host = self.hosts.get(name)
        if host is None:
            host = self.hosts[name] = Host(self.sim, self, name)
        return Stub(self.sim, host)


class _Env:
    """``env``: every namespace under its binding name."""

    def __repr__(self) -> str:
        return f"<env {sorted(self.__dict__)}>"


class Simulation:
    """Durable Objects under a virtual clock, with a runtime profile and a journal.

    >>> sim = Simulation(profile="workerd", seed=0)
    >>> ledger = sim.namespace("LEASES", LeaseLedger).get("ledger")
    >>> sim.call(ledger.grant("a", 300)); sim.run()
    """

    def __init__(
        self,
        profile: str | Profile = "workerd",
        seed: int = 0,
        journal: Any = None,
        scenario: str = "adhoc",
        params: dict | None = None,
        faults: Faults | None = None,
        **profile_changes: Any,
    ) -> None:
        prof = get_profile(profile)
        self.profile = prof.replace(**profile_changes) if profile_changes else prof
        self.kernel = Kernel(seed)
        self.seed = seed
        self.faults = faults or Faults()
        self.fault_hooks = type(self.faults) is not Faults  # the base class's hooks do nothing
        self.env = _Env()
        self.namespaces: dict[str, Namespace] = {}
        self.down = False
        self._up: Future | None = None
        self.scenario = scenario
        self.db_pool = ConnectionPool()
        self.buffer = EventBuffer()
        self._buf = self.buffer.data  # log() appends here, WIDTH values per event
        self._limits: deque = deque()
        self._watchdog: list | None = None
        self._alarm_done_cb = self._alarm_done  # bound once, not per alarm() task
        factory = SCHEDULERS.get(self.profile.scheduler)
        if factory is None:
            raise AlarmkitError(f"profile {self.profile.name!r} names scheduler {self.profile.scheduler!r}; known: {sorted(SCHEDULERS)}")
        self.scheduler = factory(self)
        self.journal = journal
        self.run_id = None
        self._ended = False
        self._flush_len = sys.maxsize if journal is None else journal.batch_size * WIDTH
        if journal is not None:
            self.run_id = journal.start_run(scenario, self.profile.name, seed, params or {}, self.faults.to_dict())
        self.faults.install(self)

    # -- time -----------------------------------------------------------------------------
    @property
    def now(self) -> int:
        return self.kernel.now

    def run(self, until: int | None = None) -> None:
        """Run until nothing is left to do, or until virtual time ``until``."""
        self.kernel.run(until)

    def advance(self, ms: int) -> None:
        self.kernel.advance(ms)

    def step(self) -> bool:
        return self.kernel.step()

    def call(self, aw: Any, limit: int | None = None) -> Any:
        """Drive the simulation until ``aw`` (e.g. ``stub.grant("a", 300)``) completes; return its value."""
        return self.kernel.run_until_complete(aw, limit)

    # -- objects --------------------------------------------------------------------------
    def namespace(self, binding: str, cls: type) -> Namespace:
        if binding in self.namespaces:
            if self.namespaces[binding].cls is not cls:
                raise AlarmkitError(f"binding {binding!r} is already {self.namespaces[binding].cls.__name__}")
            return self.namespaces[binding]
        ns = self.namespaces[binding] = Namespace(self, binding, cls)
        setattr(self.env, binding, ns)
        return ns

    def hosts(self) -> list[Host]:
        return [h for ns in self.namespaces.values() for h in ns.hosts.values()]

    def make_ctx(self, host: Host) -> DurableObjectState:
        return DurableObjectState(host)

    def inspect(self, stub: Stub) -> Inspector:
        return Inspector(self, stub._host)

    def evict(self, stub: Stub, reason: str = "forced") -> None:
        stub._host.evict(reason)

    async def rpc(self, host: Host, method: str, args: tuple, kwargs: dict) -> Any:
        while self.down:
            await self._up
        instance = host.ensure_live()
        await host.wait_gate()
        self.log("call", host, None, None, None, {"method": method})
        result = getattr(instance, method)(*args, **kwargs)
        if inspect.isawaitable(result):
            return await host.spawn(_awaitable(result), f"rpc:{method}")
        host.commit()
        return result

    # -- alarms ---------------------------------------------------------------------------
    def deliver_alarm(self, host: Host, scheduled: int, retry_count: int) -> Future:
        """Run ``alarm(info)`` in the object; resolves to ``(ok, counted)``."""
        out = Future()
        self.deliver(host, scheduled, retry_count, _resolve, out)
        return out

    def deliver(self, host: Host, scheduled: int, retry_count: int, done: Callable[[Any, bool, bool], None], token: Any) -> None:
        """Run ``alarm(info)`` in the object, then call ``done(token, ok, counted)``."""
        host.invocations = n = host.invocations + 1
        now, buf = self.kernel.now, self._buf  # log(), inlined: the fire and handler_ok of every delivery
        buf += (now, host.code, "fire", scheduled, None, retry_count, f'{{"attempt":{n},"late_ms":{now - scheduled}}}')
        if len(buf) >= self._flush_len:
            self.flush()
        if host.instance is not None and host.gate is None:
            self._start_handler(host, scheduled, retry_count, n, done, token)
        else:  # asleep or gated: the constructor (and its block_concurrency_while) runs first
            self.kernel.spawn(self._wake_then_start(host, scheduled, retry_count, n, done, token), "deliver")

    async def _wake_then_start(self, host: Host, scheduled: int, retry_count: int, n: int, done: Callable, token: Any) -> None:
        try:
            host.ensure_live()
            await host.wait_gate()
        except Exception as err:  # noqa: BLE001 - a constructor's error is the attempt's failure
            self._alarm_failed(host, scheduled, retry_count, err, done, token)
            return
        self._start_handler(host, scheduled, retry_count, n, done, token)

    def _start_handler(self, host: Host, scheduled: int, retry_count: int, n: int, done: Callable, token: Any) -> None:
        try:
            if self.fault_hooks:
                self.faults.before_alarm(host, n, retry_count)
            handler = getattr(host.instance, "alarm", None)
            if handler is None:
                raise AlarmkitError(
                    f"{type(host.instance).__name__} has no alarm(info) handler; define async def alarm(self, info)"
                )
            # AlarmInfo(retry_count, is_retry, scheduled_time), without NamedTuple's Python-level __new__
            coro = handler(_new_tuple(AlarmInfo, (retry_count, retry_count > 0, scheduled)))
            if coro.__class__ is not CoroutineType:
                coro = _awaitable(coro) if inspect.isawaitable(coro) else _value(coro)
        except Exception as err:  # noqa: BLE001 - user code or an injected fault
            self._alarm_failed(host, scheduled, retry_count, err, done, token)
            return
        # host.spawn(), with _alarm_done as the one callback (it calls host._task_done first)
        task = Task(self.kernel, coro, "alarm", host._on_suspend, (host, scheduled, retry_count, done, token), False)
        host.tasks[task] = None
        task._callbacks = [self._alarm_done_cb]
        self.kernel.start(task)  # from a timer, the handler runs now: nothing else would run before it
        if not task.done():
            self._watch(task)  # one that finished without suspending cannot overrun its limit

    def _alarm_done(self, task: Task) -> None:
        host, scheduled, retry_count, done, token = task.data
        host._task_done(task)
        if self._limits:
            self._unwatch()
        err = task._exc
        if err is None:
            nxt = host.alarm_backend.get(host)
            self._buf += (self.kernel.now, host.code, "handler_ok", scheduled, None, retry_count,
                          _NEXT_NONE if nxt is None else f'{{"next_ms":{nxt}}}')  # log(), inlined; deliver() flushes
            done(token, True, False)
        else:
            self._alarm_failed(host, scheduled, retry_count, err, done, token)

    def _alarm_failed(self, host: Host, scheduled: int, retry_count: int, err: BaseException, done: Callable, token: Any) -> None:
        counted = not isinstance(err, (ObjectCrashed, UncountedFailure))
        self.log("handler_error", host, scheduled, None, retry_count, _error(err, counted))
        done(token, False, counted)

    def _watch(self, task: Task) -> None:
        """The handler wall-clock limit. Deadlines are now + a constant, so one FIFO suffices."""
        self._limits.append((self.kernel.now + self.profile.handler_limit_ms, task))
        if self._watchdog is None:
            self._watchdog = self.kernel.call_at(self._limits[0][0], self._check_limits)

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
                task.kill(HandlerTimeout(f"alarm() ran past the {limit} ms wall-clock limit"))
        if limits:
            self._watchdog = self.kernel.call_at(limits[0][0], self._check_limits)

    def restart(self, downtime_ms: int = 0) -> None:
        """Take the whole runtime down now and bring it back ``downtime_ms`` later, reloading alarms."""
        if isinstance(downtime_ms, bool) or not isinstance(downtime_ms, int) or downtime_ms < 0:
            raise AlarmkitError(f"restart needs a non-negative int downtime in ms, got {downtime_ms!r}")
        if self.down:
            raise AlarmkitError("the runtime is already down; wait for it to come back before restarting again")
        self.log("restart", None, None, None, None, {"downtime_ms": downtime_ms})
        self.down = True
        self._up = Future()
        for host in self.hosts():
            if host.instance is not None:
                host.drop(ObjectCrashed(f"object {host.label}: the runtime restarted"))
        self.scheduler.shutdown()
        self.kernel.call_later(downtime_ms, self._come_back)

    def _come_back(self) -> None:
        self.down = False
        self.scheduler.reload()
        up, self._up = self._up, None
        up.set_result(None)

    # -- journal --------------------------------------------------------------------------
    def log(self, kind: str, host: Host | None, scheduled: int | None, prev: int | None, retry: int | None, detail: dict | str | None) -> None:
        """Journal one event now. ``detail`` is a dict, or JSON text already (the hot paths')."""
        if detail is not None and detail.__class__ is not str:
            detail = dump(detail)  # now: the buffer holds text, which the GC and Arrow pass over
        buf = self._buf
        buf += (self.kernel.now, None if host is None else host.code, kind, scheduled, prev, retry, detail)
        if len(buf) >= self._flush_len:
            self.flush()

    def flush(self) -> None:
        """Write buffered events to the journal (a checkpoint)."""
        if self.journal is not None and self._buf:
            self.journal.write_events(self.run_id, self.buffer.take())

    @property
    def rows(self) -> list[tuple]:
        """The events not yet written to a journal (all of them without one), as
        ``(seq, t, namespace, object, kind, scheduled, prev, retry, detail)`` tuples."""
        return self.buffer.batch().rows()

    def events(self):
        """This run's events as a DataFrame."""
        if self.journal is None:
            from .journal import rows_to_frame

            return rows_to_frame(None, self.buffer.batch())
        self.flush()
        return self.journal.events(self.run_id)

    def close(self, complete: bool = True) -> None:
        """Flush the journal and mark the run ended (``complete=False``: cut short by an error)."""
        self.flush()
        if self.journal is not None and not self._ended:
            from ._applied import run_record

            self._ended = True
            self.journal.end_run(self.run_id, complete, *run_record(self.faults))

    def __enter__(self) -> Simulation:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close(complete=exc[0] is None)


class Inspector:
    """Read an object's committed state from outside, without waking it."""

    def __init__(self, sim: Simulation, host: Host) -> None:
        self._sim, self._host = sim, host

    def sql(self, query: str, *params: Any) -> list[dict]:
        return self._host.db.read(query, params)

    @property
    def alarm(self) -> int | None:
        return self._host.alarm_backend.get(self._host)

    @property
    def awake(self) -> bool:
        return self._host.instance is not None

    @property
    def instance(self) -> DurableObject | None:
        return self._host.instance


_new_tuple = tuple.__new__
_NEXT_NONE = '{"next_ms":null}'


def _resolve(out: Future, ok: bool, counted: bool) -> None:
    out.set_result((ok, counted))


async def _value(value: Any) -> Any:
    return value


async def _awaitable(aw: Any) -> Any:
    return await aw


def _error(err: BaseException, counted: bool) -> dict:
    return {"error": type(err).__name__, "message": str(err)[:500], "counted": counted}
