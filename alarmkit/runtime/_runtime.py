"""The runtime: the ``Simulation`` (profile, scheduler, journal rows, restarts), alarm delivery
into objects, RPC stubs and namespaces. Objects themselves live in ``_host.Host``.
"""

from __future__ import annotations

import inspect
import os
import sys
import time
import warnings
from collections import Counter, deque
from typing import Any, Callable

from ..journal import WIDTH, EventBuffer, EventRow, dump
from ._backend import AlarmBackend
from ..kernel import (EVENT_LIMIT, NO_LIMIT, STEP_LIMIT, TIME_LIMIT_MS, WALL_LIMIT_S, MEMORY_LIMIT_MB, KernelLimit, SimLimit, check_limit, task_of,
                      check_seconds, check_megabytes)
from ._loops import WINDOW, budget_events, check_events, look_ahead
from .._checks import MAX_MS, text, time_ms
from ..journal import custom_event
from ._delivery import WAKE_FOR_ALARM, AlarmDelivery
from ._celld import CelldScheduler
from ._cpu import cpu_charge
from ._facets import facets_of
from ._host import Host, describe, on_interrupt, owner
from ._stubs import Env, Inspector, Namespace, Stub
from ..kernel import Future, Kernel, Task, as_coro, wrap_awaitable
from ._object import DurableObjectState, ObjectId
from ._scheduler import WorkerdScheduler
from ._storage import ConnectionPool
from ._turn import Settled
from ..errors import AlarmkitError, JournalWriteError, ObjectCrashed
from .faults import Faults
from .profiles import Profile, get_profile

__all__ = ["Simulation", "Namespace", "Stub", "Host", "SCHEDULERS"]
# every alarm backend a profile can name (Profile.scheduler), registered here and nowhere else
SCHEDULERS: dict[str, Callable[[Simulation], AlarmBackend]] = {"workerd": WorkerdScheduler, "celld": CelldScheduler}


class Simulation(AlarmDelivery):
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
        step_limit: int | None = STEP_LIMIT,
        time_limit_ms: int | None = TIME_LIMIT_MS,
        start_ms: int = 0,
        cpu_time: str | int | None = None,
        event_limit: int | None = EVENT_LIMIT,
        wall_limit_s: float | None = WALL_LIMIT_S,
        memory_limit_mb: int | None = MEMORY_LIMIT_MB,
        **profile_changes: Any,
    ) -> None:
        """``step_limit``, ``time_limit_ms`` and ``event_limit`` bound each ``run()`` and ``call()``, and
        ``wall_limit_s`` and ``memory_limit_mb`` one step of a Python Worker's code (see ``kernel/_budget``).
        ``start_ms`` is the clock's first reading, in 0..2**53: 0 (the default), or a real epoch such as
        ``1_767_225_600_000`` so ``Date.now()``-style values look real; the journal then opens with a
        ``clock_start`` event that figures subtract, so they show time since the start either way.
        ``cpu_time``: what running code costs the virtual clock (docs/runtime.md, "The clock while code runs"):
        None (the default: nothing, deterministic), ``"measured"`` (each step's real time in whole ms: ends
        determinism) or an int of ms each ``alarm()`` run costs (deterministic, for teaching)."""
        _check_arguments(journal, faults, params)  # before anything is made: a bad one changes nothing
        self.cpu_ms = cpu_charge(cpu_time)
        prof = get_profile(profile)
        self.profile = prof.replace(**profile_changes) if profile_changes else prof
        self.start_ms = time_ms("Simulation(start_ms=...)", start_ms)
        self.kernel = Kernel(seed, step_limit, time_limit_ms, start_ms=self.start_ms)
        self.event_limit, self.wall_limit_s, self.memory_limit_mb = event_limit, wall_limit_s, memory_limit_mb
        self._event_cap = self._run_seq = NO_LIMIT  # the event seq this run() or call() stops past, and its first
        self.kernel.end_ms = MAX_MS  # the journal's times stop at 2**53 ms: a run reaching past it stops, naming why
        self.kernel.on_interrupt, self.kernel.describe = on_interrupt, describe
        if cpu_time is not None and cpu_time != 0:
            self.kernel.on_charge = self._charged
            if cpu_time == "measured":
                self.kernel.cpu_clock = time.perf_counter_ns
        self.seed = seed
        self.faults = faults or Faults()
        self.fault_hooks = type(self.faults) is not Faults  # the base class's hooks do nothing
        self.none_now = Settled(self, None, None)  # every settled None result's await (Host.settled)
        self.env = Env()
        self.namespaces: dict[str, Namespace] = {}
        self.down = False
        self._up: Future | None = None
        self.scenario = text("scenario", scenario)
        self._write_failed = False  # an automatic flush could not write a batch (the journal kept it)
        self.db_pool = ConnectionPool()
        self.buffer = EventBuffer()
        self._buf = self.buffer.data  # log() appends here, WIDTH values per event
        self._limits: deque = deque()  # (deadline, task) of every alarm() running, in start order
        self._watchdog: list | None = None  # the kernel timer checking the first deadline, once armed
        self._pending: tuple[int, int] | None = None  # its (deadline, seq) while not armed yet (see _watch)
        self._alarm_done_cb = self._alarm_done  # bound once, not per alarm() task
        self.spin_at, self.spins = -1, 0  # awaits of settled storage calls at one instant (_host.Settled)
        self.scheduler = self._make_scheduler()
        self.journal = journal
        self.run_id = None
        self._ended = False
        self._flush_len = sys.maxsize if journal is None else journal.batch_size * WIDTH
        self._written: list = []  # the latest events of the last batch flushed (for loop_seen)
        if journal is not None:
            self.run_id = journal.start_run(scenario, self.profile.name, seed, params or {}, self.faults.to_dict())
        if self.start_ms:
            self.log("clock_start", None, None, None, None, {"start_ms": self.start_ms})
        self.faults.install(self)

    def _make_scheduler(self) -> AlarmBackend:
        factory = SCHEDULERS.get(self.profile.scheduler)
        if factory is None:
            raise AlarmkitError(f"profile {self.profile.name!r} names scheduler {self.profile.scheduler!r}; known: {sorted(SCHEDULERS)}")
        return factory(self)

    def configure(self, **profile_changes: Any) -> None:
        """Change profile settings (``Profile.replace`` names) before anything has happened (no event
        journaled yet); the alarm scheduler is made again for the new profile. Raises AlarmkitError after."""
        if self.buffer.seq0 + len(self.buffer) > 1 + (self.start_ms != 0):  # clock_start is not an event that ran
            raise AlarmkitError(
                f"configure({', '.join(sorted(profile_changes))}=...) must come before anything has run "
                f"(this simulation has journaled events); pass the settings to Simulation(...) instead"
            )
        self.profile = self.profile.replace(**profile_changes)
        self.scheduler = self._make_scheduler()
        for host in self.hosts():  # made but never run: nothing is stored in the old scheduler
            host.alarm_backend = self.scheduler

    # -- time -----------------------------------------------------------------------------
    def _charged(self, ms: int, fn: Any, args: tuple) -> None:
        """Journal a cpu charge: whose code ran, for how long (the fires it delayed show it as lateness)."""
        what = "alarm()" if fn is None else describe(fn, args)
        host = args[0] if fn is None and args else owner(task_of(fn, args))
        for x in () if host is not None else args:
            x = getattr(x, "host", x)  # a scheduler's entry holds its host
            if isinstance(x, Host):
                host = x
                break
        self.log("cpu", host, None, None, None, {"ms": ms, "mode": "measured" if fn is not None else "fixed",
                                                "what": what})

    @property
    def now(self) -> int:
        return self.kernel.now

    def run(self, until: int | None = None) -> None:
        """Run until nothing is left to do, or until virtual time ``until``."""
        self._budget_events()
        self.kernel.run(until)

    def advance(self, ms: int) -> None:
        self.kernel.advance(ms)

    def step(self) -> bool:
        return self.kernel.step()

    step_limit = KernelLimit()  # kernel steps one run() or call() may take at one virtual instant (None: no limit)
    event_limit = SimLimit(check_limit)  # journal events one run() or call() may add (None: no limit)
    wall_limit_s = SimLimit(check_seconds)  # wall-clock seconds one step of a Python Worker's code may run
    memory_limit_mb = SimLimit(check_megabytes)  # MB one step of a Python Worker's code may grow resident memory
    time_limit_ms = KernelLimit()  # virtual time one run() or call() with no until/limit may cover (None: no limit)

    def call(self, aw: Any, limit: int | None = None) -> Any:
        """Drive the simulation until ``aw`` (e.g. ``stub.grant("a", 300)``) completes; return its value."""
        self._budget_events()
        return self.kernel.run_until_complete(aw, limit)

    _budget_events, _look_ahead, _check_events = budget_events, look_ahead, check_events  # runtime/_loops.py

    # -- the scenario API: what a scenario script does from outside the objects -------------------
    def call_at(self, t_ms: int, fn: Callable[..., Any], *args: Any) -> Any:
        """Call ``fn(*args)`` at virtual time ``t_ms`` (not before now: InternalError); returns a handle
        for ``cancel``. E.g. ``sim.call_at(1_500, sim.evict, stub, "died")``."""
        return self.kernel.call_at(t_ms, fn, *args)

    def cancel(self, handle: Any) -> None:
        """Cancel what ``call_at`` scheduled, if it has not run yet."""
        self.kernel.cancel(handle)

    def spawn(self, aw: Any, name: str = "task") -> Task:
        """Start ``aw`` (e.g. ``stub.deliver(batch)``) now without waiting for it; the returned task
        has ``done()``, ``result()``, ``exception()`` and ``add_done_callback(fn)``. A stub call
        starts only when spawned or awaited (see docs/scenario-api.md, "Concurrent calls")."""
        return self.kernel.spawn(as_coro(aw), name)

    def gather(self, *aws: Any) -> Future:
        """Start every awaitable not started yet (in order, now) and return one future of the list of
        their results; the first failure fails it. ``sim.call(sim.gather(a.m(), b.m()))`` runs both."""
        return self.kernel.gather(*aws)

    def journal_event(self, kind: str, stub: Stub | None = None, *, scheduled_ms: int | None = None,
                      prev_ms: int | None = None, retry_count: int | None = None, detail: dict | None = None) -> None:
        """Journal a custom event now (``kind`` is yours, e.g. ``"deploy"``), about ``stub``'s object
        or about the whole runtime (no stub). Inside an object use ``ctx.journal_event``. A kind the
        runtime journals itself (``fire``, ``arm``...), a time outside 0..2**53 ms or a detail that is not
        a dict is refused (``InvalidValue``)."""
        detail = custom_event(kind, scheduled_ms, prev_ms, retry_count, detail)
        self.log(kind, None if stub is None else stub._host, scheduled_ms, prev_ms, retry_count, detail)

    # -- objects --------------------------------------------------------------------------
    def namespace(self, binding: str, cls: type) -> Namespace:
        text("namespace bindings", binding)
        if binding in self.namespaces:
            if self.namespaces[binding].cls is not cls:
                raise AlarmkitError(f"binding {binding!r} is already {self.namespaces[binding].cls.__name__}")
            return self.namespaces[binding]
        ns = self.namespaces[binding] = Namespace(self, binding, cls)
        setattr(self.env, binding, ns)
        return ns

    # alarmkit.workers.load_worker, set when that package is imported (alarmkit/__init__ does): the runtime
    # does not import the layer above it
    worker_loader: Callable[..., Any] | None = None

    def load_worker(self, path: Any = None, bindings: dict | None = None, wrangler: Any = None,
                    compatibility_date: str | None = None, compatibility_flags: Any = None) -> Any:
        """Load a Cloudflare Worker's module (``.py``; ``.js``/``.ts`` with the JS host) unchanged; its
        Durable Objects become objects of this simulation. Returns a ``Worker`` (docs/workers.md).
        ``compatibility_flags`` (default: the wrangler file's) as wrangler's, e.g. ``["nodejs_compat"]``."""
        if Simulation.worker_loader is None:
            raise AlarmkitError("alarmkit.workers is not loaded: import alarmkit.workers first")
        return Simulation.worker_loader(self, path, bindings, wrangler, compatibility_date, compatibility_flags)

    def hosts(self) -> list[Host]:
        return [h for ns in self.namespaces.values() for h in ns.hosts.values()]

    def make_ctx(self, host: Host) -> DurableObjectState:
        ctx = DurableObjectState(host)
        current = self.kernel.current
        if current is not None and current.name == WAKE_FOR_ALARM and not self.profile.id_name_on_cold_alarm():
            ctx.id = ObjectId(host.name, None)  # woken cold by an alarm: no name (Profile.id_name_since)
        return ctx

    def facets_of(self, host: Host):
        """``ctx.facets`` of ``host`` (what ``DurableObjectState.facets`` returns)."""
        return facets_of(host)

    def inspect(self, stub: Stub) -> Inspector:
        return Inspector(self, stub._host)

    def evict(self, stub: Stub, reason: str = "forced") -> None:
        stub._host.evict(reason)

    async def rpc(self, host: Host, method: str, args: tuple, kwargs: dict, check: Callable[[], None] | None = None) -> Any:
        """Call ``method(*args, **kwargs)`` in ``host``'s instance (waking it), as a stub does.

        ``check`` (a facet stub's): called before the call, after its gate opens (also when that
        wait fails) and raising to fail the call; then the result waits for the facet's output gate."""
        if check is not None:
            check()
        while self.down:
            await self._up
        instance = host.ensure_live()
        if check is None:
            await host.wait_gate()
        else:
            try:
                await host.wait_gate()
            except ObjectCrashed:
                check()
                raise
            check()
        self.log("call", host, None, None, None, {"method": method})
        try:
            result = getattr(instance, method)(*args, **kwargs)
        except Exception:
            raise
        except BaseException as err:  # a method that is not async: its object crashes (and the caller's task, which it leaves)
            host.interrupted(err, f"rpc:{method}")
            raise
        if inspect.isawaitable(result):
            task = host.spawn(wrap_awaitable(result), f"rpc:{method}")
            host.lock_until_started(task)
            value = await task
        else:
            value = result  # its writes commit with the turn
        await host.output_gate(f"rpc:{method}")
        return value

    # -- alarms ---------------------------------------------------------------------------
    # delivery: deliver(), the handler and its watchdog live in _delivery.AlarmDelivery

    def restart(self, downtime_ms: int = 0) -> None:
        """Take the whole runtime down now and bring it back ``downtime_ms`` later, reloading alarms."""
        time_ms("restart(downtime_ms)", downtime_ms)
        if self.down:
            raise AlarmkitError("the runtime is already down; wait for it to come back before restarting again")
        self.log("restart", None, None, None, None, {"downtime_ms": downtime_ms})
        self.down = True
        self._up = Future()
        for host in self.hosts():
            if host.instance is not None:
                host.drop(ObjectCrashed(f"object {host.label}: the runtime restarted"))
        self.scheduler.shutdown()
        self.__dict__.pop("_warned_no_alarm", None)  # workerd warns once per isolate: the restart starts new ones
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
        self.append_row(self.kernel.now, None if host is None else host.code, kind, scheduled, prev, retry, detail)

    def log_packed(self, kind: str, host: Host, scheduled: int | None, number: int | None, retry: int | None) -> None:
        """Journal a hot event (``fire``, ``handler_ok``) packed: its one number where ``prev_scheduled_ms``
        goes and the host's code negated, no detail text; the journal renders it (journal/_events.py)."""
        self.append_row(self.kernel.now, ~host.code, kind, scheduled, number, retry, None)

    def append_row(self, *row: Any) -> None:
        """The one place a journal row enters the buffer (``WIDTH`` values), flushed at the batch size.
        A call per row costs about 250 instructions over an inline append (benchmarks/bench_instructions.py):
        kept as the one copy."""
        buf = self._buf
        buf += row
        if len(buf) >= self._flush_len:
            self._auto_flush()  # also at the event budget's looks (runtime/_loops.py)

    def flush(self) -> None:
        """Write buffered events to the journal (a checkpoint). If the batch cannot be written,
        raises ``JournalWriteError``; its events are kept in ``journal.unwritten``, none lost."""
        if self.journal is not None and self._buf:
            self._written = self._buf[-WINDOW * WIDTH:]  # what the limit's message reads, if it falls soon after
            try:
                self.journal.write_events(self.run_id, self.buffer.take())
            finally:
                self._look_ahead()  # the buffer starts again: the limit's event is nearer its start

    def _auto_flush(self) -> None:
        # A flush at the batch size happens inside a step: raising there would leave an alarm half
        # delivered. The journal kept the events; say so now, and again (raising) at close().
        self._check_events()  # before the flush: the loop is read from the buffered events
        if self.journal is None or len(self._buf) < self.journal.batch_size * WIDTH:
            self._look_ahead()  # a look at the limit's event, not a batch yet
            return
        try:
            self.flush()
        except JournalWriteError as err:
            self._write_failed = True
            warnings.warn(f"{err}; the simulation carries on", RuntimeWarning, stacklevel=3)

    @property
    def rows(self) -> list[EventRow]:
        """The events not yet written to a journal (all of them without one), as ``EventRow`` values."""
        return self.buffer.batch().rows()

    def alarms(self) -> dict[str, int | None]:
        """Each object's stored alarm now (None: no alarm), by label: what a finished run leaves behind.
        Objects of different namespaces that share a name are keyed ``"BINDING:name"``, each of them."""
        hosts = list(self.hosts())
        twice = {x for x, n in Counter(h.label for h in hosts).items() if n > 1}
        return {(f"{h.namespace.binding}:{h.label}" if h.label in twice else h.label): h.alarm_backend.get(h)
                for h in hosts}

    def events(self):
        """This run's events as a DataFrame."""
        if self.journal is None:
            from ..journal import rows_to_frame

            return rows_to_frame(None, self.buffer.batch())
        self.flush()
        return self.journal.events(self.run_id)

    def close(self, complete: bool = True) -> None:
        """Flush the journal and mark the run ended (``complete=False``: cut short by an error).
        Raises ``JournalWriteError`` if any event of this run could not be written (the journal
        keeps them in ``journal.unwritten``); the run is then marked incomplete."""
        try:
            self.flush()
        except JournalWriteError:
            self._write_failed = True
            raise
        finally:
            if self.journal is not None and not self._ended:
                from ._applied import run_record

                self._ended = True
                self.journal.end_run(self.run_id, complete and not self._write_failed, *run_record(self.faults))
        if self._write_failed:
            raise self.journal._kept(f"run {self.run_id} is incomplete: a batch could not be written during it", "warned then")

    def __enter__(self) -> Simulation:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close(complete=exc[0] is None)


def _check_arguments(journal: Any, faults: Any, params: Any) -> None:
    """``Simulation``'s objects of the wrong kind, refused by name (not an AttributeError deep inside)."""
    if journal is not None and not (hasattr(journal, "start_run") and hasattr(journal, "batch_size")):
        shown = repr(journal) if isinstance(journal, (str, bytes, os.PathLike)) else type(journal).__name__
        raise AlarmkitError(f"journal is a Journal or None, got {shown[:80]}; open the file first: "
                            "Simulation(journal=Journal('journal.duckdb'))")
    if faults is not None and not isinstance(faults, Faults):
        shown = repr(faults) if isinstance(faults, (str, int, float)) else type(faults).__name__
        raise AlarmkitError(f"faults is a FaultPlan (or another Faults object) or None, got {shown[:80]}; "
                            "e.g. Simulation(faults=FaultPlan(handler_throws=[1])), or FaultPlan.from_dict(d) for a dict")
    if params is not None and not isinstance(params, dict):
        raise AlarmkitError(f"params is a dict of the scenario's parameters (journaled with the run) or None, "
                            f"got {type(params).__name__}")
