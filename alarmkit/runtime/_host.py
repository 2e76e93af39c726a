"""One object identity: its durable ``Database`` (which outlives instances) and, while it is
awake, its instance, ``ctx`` and tasks.

The turn model (workerd's, docs/runtime.md "Turns and commits"): a write opens the object's turn,
and the turn's writes commit together when the turn ends, i.e. once the microtasks queued behind the
code that wrote have drained (a zero-delay timer, as workerd's ``kj::evalLater`` in
``ActorSqlite::onWrite``). Awaiting a storage call is not a suspension (``Settled``). A reset (a
crash, ``ctx.abort()``, an injected fault, the 15-minute limit) drops what the turn had not
committed and kills every task in the instance.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ..kernel import task_of
from .._checks import text
from ..kernel import Future, Task
from ._object import DurableObject, DurableObjectState
from ._storage import Database
from ._turn import Settled, settle_future
from ..errors import Aborted, AlarmkitError, InjectedError, ObjectCrashed

if TYPE_CHECKING:  # pragma: no cover
    from ._types import NamespaceView as Namespace, SimView as Simulation  # views: the simulation builds hosts

__all__ = ["Host", "check_method", "owner", "describe", "on_interrupt"]

_UNSET = object()


def check_method(cls: type, method: str, what: str = "") -> None:
    """An RPC target must be a public method: name the ones there are when it is not."""
    if method.startswith("_"):
        raise AttributeError(method)
    if not callable(getattr(cls, method, None)):
        public = sorted(m for m in dir(cls) if not m.startswith("_") and callable(getattr(cls, m)))
        raise AlarmkitError(f"{what}{cls.__name__} has no method {method!r}; its methods: {public}")


class Host:
    """One object identity: durable storage plus, while awake, an instance."""

    __slots__ = (
        "sim", "namespace", "name", "label", "_db", "instance", "ctx", "tasks", "gate", "idle_timer",
        "invocations", "staged", "constructing", "alarm_backend", "parent", "last_active", "facets",
        "code", "locks", "unlocked", "starting", "turn", "finishing", "no_alarm", "alarm_row", "alarm_entry",
        "__weakref__",
    )

    def __init__(self, sim: Simulation, namespace: Namespace, name: str, parent: Host | None = None) -> None:
        self.sim = sim
        self.namespace = namespace
        self.name = text("object names" if parent is None else "facet names", name)  # the journal's object_id
        self.label = name if parent is None else f"{parent.label}/{name}"
        self._db: Database | None = None  # opened on first use: many objects never touch SQL
        self.instance: DurableObject | None = None
        self.ctx: DurableObjectState | None = None
        self.tasks: dict[Task, None] = {}
        self.gate: Future | None = None
        self.idle_timer: list | None = None
        self.last_active = 0
        self.invocations = 0
        self.staged: Any = _UNSET  # an uncommitted set_alarm (int) or delete_alarm (None)
        self.constructing = False
        self.alarm_backend = sim.scheduler
        # the workerd scheduler's state of this object (_scheduler.py), in slots rather than dicts keyed by host:
        # its stored alarm (the durable row; None: no row) and its in-memory Entry
        self.alarm_row: int | None = None
        self.alarm_entry: Any = None
        self.parent = parent
        self.facets: dict[str, Host] = {}  # ctx.facets children (alarmkit/_facets.py), by name
        self.code = sim.buffer.register(namespace.binding, self.label)  # what the journal buffer logs
        # workerd's input gate: storage reads in flight, and delivered events whose code has not started
        # yet (JavaScript runs a call up to its first await at once); new deliveries wait while any
        self.locks = 0
        # delivered tasks holding a lock until their first step ends; None until the first (an empty set is
        # 216 B, 0.2 GiB at 1M objects, and most objects never hold one while idle)
        self.starting: set[Task] | None = None
        self.unlocked: Future | None = None  # what a held delivery awaits: the last read in flight resolved
        self.turn: list | None = None  # the timer that commits this turn's writes (see the module docstring)
        self.no_alarm = False  # the instance's class has no alarm() and set_alarm outside its constructor throws
        self.finishing: list | None = None  # (fn, args): outcomes waiting for this turn's commit

    def __repr__(self) -> str:
        return f"<Host {self.label}>"

    @property
    def db(self) -> Database:
        if self._db is None:
            kernel = self.sim.kernel  # SQL's 'now' and random() (runtime/_sqlclock.py)
            key = f"{self.sim.seed}:{self.namespace.binding}:{self.label}"
            self._db = Database(self.sim.db_pool, lambda: kernel.now, key)
        return self._db

    # -- lifecycle ------------------------------------------------------------------------
    def ensure_live(self) -> DurableObject:
        if self.instance is not None:
            return self.instance
        self.sim.log("construct", self, None, None, None, None)
        self.ctx = self.sim.make_ctx(self)
        self.no_alarm = False  # the constructor may set the alarm of a class without alarm()
        self.constructing = True
        try:
            self.instance = self.namespace.cls(self.ctx, self.sim.env)
        except Exception:
            if self._db is not None:
                self._db.rollback()
            self.staged = _UNSET
            self.ctx = None
            raise
        except BaseException as err:
            self.interrupted(err, "the constructor")
            raise
        finally:
            self.constructing = False
        self.no_alarm = (self.sim.profile.no_alarm_handler == "drop" and self.parent is None  # (facets: their own rule)
                         and not callable(getattr(self.instance, "alarm", None)))
        self._touch()  # its writes commit with the turn (workerd: the constructor runs in the first event's turn)
        return self.instance

    def check_alive(self) -> None:
        if self.ctx is None:
            raise ObjectCrashed(f"object {self.label} is no longer running (it crashed or was evicted)")

    def drop(self, exc: BaseException) -> None:
        """The instance goes away (crash, eviction, restart, abort): the turn's uncommitted writes are
        lost, and outcomes waiting for its commit (an ``alarm()`` that had returned) fail with ``exc``."""
        if self._db is not None:
            self._db.rollback()
        self.staged = _UNSET
        if self.turn is not None:
            self.sim.kernel.cancel(self.turn)
            self.turn = None
        finishing, self.finishing = self.finishing, None
        self.instance = None
        self.ctx = None
        self.gate = None
        self.locks = 0
        self.starting = None
        if self.unlocked is not None:  # held deliveries wake, find the instance gone and fail
            unlocked, self.unlocked = self.unlocked, None
            unlocked.set_result(None)
        self.sim.kernel.cancel(self.idle_timer)
        self.idle_timer = None
        tasks, self.tasks = self.tasks, {}
        for task in tasks:
            task.kill(exc)
        for child in self.facets.values():  # facets live inside their parent's process
            if child.instance is not None:
                child.drop(exc)
        if finishing:
            for fn, args in finishing:
                fn(*args, exc)

    def crash(self, reason: str) -> None:
        self.sim.log("crash", self, None, None, None, {"reason": reason, "tasks": [t.name for t in self.tasks]})
        self.drop(ObjectCrashed(f"object {self.label} crashed: {reason}"))

    def abort(self, reason: str, retry_alarm: bool) -> Aborted:
        """``ctx.abort``: journal ``aborted`` and drop the instance (uncommitted writes are lost, as in a
        crash); every task in it, the caller's included, fails with the returned ``Aborted``."""
        err = Aborted(f"object {self.label} was aborted: {reason}", retry_alarm)
        self.sim.log("aborted", self, None, None, None,
                     {"reason": reason, "retry_alarm": retry_alarm, "tasks": [t.name for t in self.tasks]})
        self.drop(err)
        return err

    def interrupted(self, err: BaseException, where: str) -> ObjectCrashed:
        """A KeyboardInterrupt or SystemExit left user code running in this object: journaled as a
        ``crash`` and the object left as a crash leaves it (its stored alarm stays); the caller re-raises.
        Returns the error the interrupted work fails with (an uncounted failure, as a crash is)."""
        if self.ctx is not None:
            self.crash(f"interrupted: {type(err).__name__} in {where}")
        if not any(n.startswith(INTERRUPTED_NOTE) for n in getattr(err, "__notes__", ())):
            # said where it left user code, for the CLI and a notebook's traceback (the first place only)
            err.add_note(f"{INTERRUPTED_NOTE} object {self.label} ({where}) at {self.sim.kernel.now:,} ms")
        return ObjectCrashed(f"object {self.label} was interrupted by {type(err).__name__} in {where}")

    def evict(self, reason: str = "idle", message: str | None = None) -> None:
        """Drop the running instance (journal kind ``evict``); its calls in flight fail with
        ObjectCrashed(``message``, default ``object X was evicted (reason)``)."""
        if self.instance is None:
            return
        self.sim.log("evict", self, None, None, None, {"reason": reason, "busy": bool(self.tasks)})
        self.drop(ObjectCrashed(message or f"object {self.label} was evicted ({reason})"))

    def _touch(self) -> None:
        # one pending idle timer per object, re-armed lazily: activity only moves last_active
        if self.tasks or self.instance is None:
            return
        self.last_active = self.sim.kernel.now
        if self.idle_timer is None:
            self.idle_timer = self.sim.kernel.call_later(self.sim.profile.idle_evict_ms, self._idle)

    def _idle(self) -> None:
        self.idle_timer = None
        if self.tasks or self.instance is None:
            return  # busy: the end of the last task arms the timer again
        due = self.last_active + self.sim.profile.idle_evict_ms
        if self.sim.kernel.now >= due:
            self.evict("idle")
        else:
            self.idle_timer = self.sim.kernel.call_at(due, self._idle)

    # -- tasks and commits ----------------------------------------------------------------
    def spawn(self, coro, name: str) -> Task:
        task = self.sim.kernel.spawn(coro, name, self._on_suspend)
        self.tasks[task] = None
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: Task) -> None:
        if self.tasks.pop(task, _UNSET) is _UNSET:
            return  # killed with its instance
        if self.starting:
            self._started(task)
        self._touch()  # no commit: the turn commits (a task's end is not a turn's end)

    def _on_suspend(self, task: Task) -> None:
        if self.starting:
            self._started(task)
        sim = self.sim  # with no fault plan (the base Faults), crash_at_suspend is False: not called
        if sim.fault_hooks and sim.faults.crash_at_suspend(self, task):
            self.crash(f"injected at await {task.awaits} of {task.name}")

    def current_cause(self) -> str:
        """Whose write this is, "constructor" or "user": the one rule (the constructor itself, or a
        ``block_concurrency_while`` it started, whose task is named "constructor")."""
        current = self.sim.kernel.current
        if self.constructing or (current is not None and current.name == "constructor"):
            return "constructor"
        return "user"

    # -- turns --------------------------------------------------------------------------
    def wrote(self) -> None:
        """A write joined this turn: open the turn if it is not open (its commit runs once the
        microtasks queued now have drained: workerd's ``kj::evalLater`` commit in ``ActorSqlite::onWrite``)."""
        if self.turn is None:
            kernel = self.sim.kernel
            self.turn = kernel.call_at(kernel.now, self.end_turn)

    def end_turn(self) -> None:
        """The turn ended: commit its writes, then run the outcomes that waited for the commit."""
        if self.turn is not None:
            self.sim.kernel.cancel(self.turn)
            self.turn = None
        if self._db is not None and self._db.savepoints:
            return  # an explicit transaction is open (_txn): the turn commits after it ends
        self.commit()  # not inlined: FacetHost overrides it
        finishing, self.finishing = self.finishing, None
        if finishing:
            for fn, args in finishing:
                fn(*args, None)

    def after_commit(self, fn: Callable, *args: Any) -> None:
        """Call ``fn(*args, err)`` once this turn's writes are durable (``err`` None), or, when the
        instance is reset first, with the reset's error; at once (``err`` None) when no turn is open."""
        if self.turn is None:
            fn(*args, None)
        elif self.finishing is None:
            self.finishing = [(fn, args)]
        else:
            self.finishing.append((fn, args))

    async def output_gate(self, name: str) -> None:
        """Wait until the writes a call's result depends on are durable (workerd's output gate: an
        event's result is held until its turn commits); a reset first fails the call with its error."""
        if self.turn is not None:
            turn_end = Future()
            self.after_commit(settle_future, turn_end)
            await turn_end

    def stage_alarm(self, at: int | None) -> None:
        self.staged = (at, self.current_cause())
        self.wrote()

    def settled(self, value: Any) -> Settled:
        """The awaitable of a storage call whose result is known: awaiting it does not suspend. A result
        of None without fault hooks (no crash point to name this host) is the simulation's one ``none_now``."""
        sim = self.sim
        return sim.none_now if value is None and not sim.fault_hooks else Settled(sim, self, value)

    def visible_alarm(self) -> int | None:
        self.check_alive()
        if self.staged is not _UNSET:
            return self.staged[0]
        return self.alarm_backend.get(self)

    def platform_arm(self, at: int, cause: str) -> None:
        """Arm the object's alarm at once, outside its transactions: the platform's doing (a duplicate)."""
        self.alarm_backend.arm(self, at, cause)

    def commit(self) -> None:
        if self._db is not None:
            self._db.commit()
        if self.staged is _UNSET:
            return
        (at, cause), self.staged = self.staged, _UNSET
        backend = self.alarm_backend
        if at is None:
            backend.disarm(self, cause)
            return
        if cause == "constructor" and at <= self.sim.kernel.now and backend.get(self) is None:
            backend.arm(self, at, cause)  # a constructor that found overdue work and no alarm
            self.sim.log("revive", self, at, None, None, {"cause": "constructor"})
            return
        backend.arm(self, at, cause)

    def block_concurrency_while(self, fn: Callable) -> Task:
        name = "constructor" if self.constructing else "block_concurrency_while"
        task = self.spawn(fn(), name)
        self.gate = task

        def reopen(t: Task) -> None:
            if self.gate is t:
                self.gate = None
            if t.exception() is not None and not isinstance(t.exception(), ObjectCrashed) and self.instance is not None:
                # workerd resets an object whose blockConcurrencyWhile callback throws
                self.crash(f"block_concurrency_while failed: {t.exception()!r}")

        task.add_done_callback(reopen)
        return task

    async def wait_gate(self) -> None:
        """Wait until an event may be delivered: no ``block_concurrency_while`` running and no storage
        read in flight (workerd's input gate; a write or an external wait such as ``ctx.sleep`` lets
        other events in)."""
        while self.gate is not None or self.locks:
            if self.gate is None:
                if self.unlocked is None:
                    self.unlocked = Future()
                await self.unlocked
                self.check_alive()
                continue
            gate = self.gate
            try:
                await gate
            except Exception:
                pass
            self.check_alive()

    def read(self, value: Any) -> Future:
        """The awaitable of a storage read whose ``value`` is known: it resolves as a microtask, and
        until then the input gate holds new calls and alarm deliveries (``wait_gate``)."""
        self.locks += 1
        fut = Future()
        self.sim.kernel.call_soon(self._read_done, fut, value, self.ctx)
        return fut

    def _read_done(self, fut: Future, value: Any, ctx: Any) -> None:
        fut.set_result(value)  # the reader's continuation runs first: a second read locks the gate again
        if ctx is self.ctx:  # else the instance that read died meanwhile: drop() reset the locks
            self.unlock()

    def lock_until_started(self, task: Task) -> None:
        """``task`` (a delivered call or alarm) has not run yet: hold later deliveries until its first
        step ends (its first suspension or its end), so a read at its start locks the gate in time."""
        if not task.awaits and not task.done():
            self.locks += 1
            if self.starting is None:
                self.starting = set()
            self.starting.add(task)

    def _started(self, task: Task) -> None:
        starting = self.starting
        if task in starting:
            starting.discard(task)
            if not starting:
                self.starting = None  # the last one: no empty set kept per idle object
            self.unlock()

    def unlock(self) -> None:
        self.locks -= 1
        if not self.locks and self.unlocked is not None:
            unlocked, self.unlocked = self.unlocked, None
            unlocked.set_result(None)

    # -- effects --------------------------------------------------------------------------
    def effect(self, name: str, key: Any, detail: dict) -> Future:
        text("ctx.effect(name)", name)
        self.check_alive()
        faults = self.sim.faults
        faults.before_effect(self, name, key)
        self.sim.log("effect", self, None, None, None, {"name": name, "key": key, **detail})
        after = faults.after_effect(self, name, key)
        if after == "crash":
            self.crash(f"injected right after effect {name}({key!r})")
            raise ObjectCrashed(f"object {self.label} crashed after effect {name}")
        if after == "throw":
            raise InjectedError(f"injected: effect {name}({key!r}) failed after it ran")
        # external I/O ends the turn: its result comes back in a later event, after this turn's writes
        # committed (workerd's output gate holds the outgoing request until they are durable)
        fut = Future()
        kernel = self.sim.kernel
        kernel.call_at(kernel.now, fut.set_result, None)
        return fut


INTERRUPTED_NOTE = "raised in the simulated code of"


def owner(task: Task | None) -> Host | None:
    """The object a task runs in (its suspensions are that host's commit points), if any."""
    host = getattr(getattr(task, "on_suspend", None), "__self__", None)
    return host if isinstance(host, Host) else None


def on_interrupt(task: Task, err: BaseException) -> None:
    """The kernel's hook: a KeyboardInterrupt or SystemExit left a task; crash its object, if it has one."""
    host = owner(task)
    if host is not None:
        host.interrupted(err, task.name)


# alarmkit's own steps, in the words of the code that caused them (never an internal name in a message)
_PLAIN = {"_read_done": "a storage read (get or list, awaited in a loop?)",
          "end_turn": "the commit of a turn's writes", "_resume": "an await of a settled storage call",
          "_idle": "the idle eviction (profile.idle_evict_ms after the last request)",
          "_come_back": "the runtime's return after a restart",
          "_check_limits": "the handler time-limit watchdog", "_commit_fails": "a failing commit",
          "_tick": "celld's waker tick", "launch": "the drive script's next request"}


def describe(fn: Callable, args: tuple) -> str:
    """Whose work a step or timer is, for ``RunawayError``: the task and the object."""
    task = task_of(fn, args)
    host = owner(task)
    for x in () if host is not None else (getattr(fn, "__self__", None), *args):
        x = getattr(x, "host", x)  # a scheduler's entry holds its host
        if isinstance(x, Host):
            host = x
            break
    if task is not None:
        what = f"task {task.name!r}"
    elif getattr(fn, "__name__", "") in ("_fire", "_timer"):  # the workerd and celld alarm timers
        what = "the next alarm() delivery"
    else:
        name = getattr(fn, "__name__", "")
        what = _PLAIN.get(name) or getattr(fn, "__qualname__", repr(fn))
    if host is None:
        return what
    tries = f" (alarm() attempts so far: {host.invocations:,})" if host.invocations else ""
    return f"{what} of object {host.namespace.binding}:{host.label}{tries}"
