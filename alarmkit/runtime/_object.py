"""What user code sees: ``DurableObject``, its ``ctx`` and ``ctx.storage``, ``AlarmInfo``.

The surface follows the JavaScript API in snake_case (``setAlarm`` -> ``set_alarm``). Storage
calls take effect at once and join the object's turn; the turn's writes commit together when it
ends (``_host``: the turn model). Awaiting a write does not suspend; forgetting ``await`` loses nothing.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Awaitable, Callable, NamedTuple

from .._checks import MAX_MS, shown, text
from ..journal import custom_event
from ..kernel import Future, as_coro
from ._storage import Cursor
from ..errors import AlarmkitError, AlarmTimeError, NoAlarmHandler

if TYPE_CHECKING:  # pragma: no cover
    from ._types import HostView as Host  # a view: _host builds objects

__all__ = ["DurableObject", "DurableObjectState", "Storage", "SqlStorage", "AlarmInfo", "ObjectId"]

# src/workerd/api/actor-state.c++: the message of the TypeError for setAlarm(t <= 0)
SET_ALARM_NONPOSITIVE = "setAlarm() cannot be called with an alarm time <= 0"
# actor-state.c++ assertCanSetAlarm: the TypeError of setAlarm() outside the constructor of a class without alarm()
NO_ALARM_HANDLER = "Your Durable Object class must have an alarm() handler in order to call setAlarm()"


class AlarmInfo(NamedTuple):
    """Passed to ``alarm(info)``: ``retry_count`` counts counted retries; ``is_retry`` is ``retry_count > 0``."""

    retry_count: int
    is_retry: bool
    scheduled_time: int


class ObjectId(str):
    """``ctx.id``: the object's id (a ``str``, the name it was got by) and ``.name``, the name as
    workerd's ``ctx.id.name`` gives it: None where the runtime does not pass it, e.g. in an instance an
    alarm woke cold under a compatibility date before ``Profile.id_name_since``."""

    __slots__ = ("name",)

    def __new__(cls, id_: str, name: str | None) -> ObjectId:
        self = super().__new__(cls, id_)
        self.name = name
        return self


class DurableObject:
    """Base class for simulated objects: ``__init__(ctx, env)``, RPC methods, ``async def alarm(info)``."""

    def __init__(self, ctx: DurableObjectState, env: Any) -> None:
        self.ctx = ctx
        self.env = env


class SqlStorage:
    __slots__ = ("_host",)

    def __init__(self, host: Host) -> None:
        self._host = host

    def exec(self, sql: str, *params: Any) -> Cursor:
        """Run one statement now; rows come back as dicts (``.one()``, ``.to_list()``, iteration)."""
        host = self._host
        host.check_alive()
        cur = host.db.exec(sql, params)
        host.wrote()  # (a read joins the turn too: committing an empty transaction changes nothing)
        return cur

    @property
    def database_size(self) -> int:
        """``sql.databaseSize``: bytes in use (pages less free pages, times the page size)."""
        self._host.check_alive()
        return self._host.db.size()


def alarm_time(value: Any, now: int) -> int:
    """Validate a ``set_alarm`` argument; the stored time is ``max(t, now)`` (actor-state.c++).
    Times past 2**53 ms are refused (``InvalidValue``): the journal could not hold them."""
    if value.__class__ is int and 0 < value <= MAX_MS:  # the usual case, first and cheap
        return value if value > now else now
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise AlarmTimeError(
            f"set_alarm() needs a time in epoch milliseconds (int or float), got {value!r}; "
            "pass something like ctx.now() + 5_000"
        )
    if isinstance(value, float) and not math.isfinite(value):
        # workerd's text for NaN (observed on workerd 2026-11-17), then ours naming the value
        raise AlarmTimeError(
            f"The value cannot be converted because it is not a valid Date. (set_alarm() got {value!r}, "
            "which is not a finite time; pass epoch milliseconds such as ctx.now() + 5_000)"
        )
    if value <= 0:
        raise AlarmTimeError(SET_ALARM_NONPOSITIVE)
    if value > MAX_MS:
        raise AlarmTimeError(
            f"set_alarm() got {shown(value)}, past the last time alarmkit can hold: alarm times are ms in 1..2**53 "
            "(9,007,199,254,740,992, JavaScript's largest safe integer); pass something like ctx.now() + 5_000"
        )
    return max(int(math.floor(value)), now)


class Storage:
    """``ctx.storage``: SQL, KV and the object's one alarm."""

    __slots__ = ("_host", "sql", "_tx")

    def __init__(self, host: Host) -> None:
        self._host = host
        self.sql = SqlStorage(host)
        self._tx: list = []  # the staged alarm at each open savepoint, innermost last (tx_begin / tx_end)

    # -- KV (values are JSON-serialisable) ----------------------------------------------------
    def get(self, key: str | list[str]) -> Future:
        """A read: until it resolves, workerd's input gate holds new calls and alarms to this object."""
        db = self._live()
        if isinstance(key, list):
            return self._host.read({k: v for k in key if (v := db.kv_get(k)) is not None})
        return self._host.read(db.kv_get(key))

    def put(self, key: str | dict[str, Any], value: Any = None) -> Any:
        db = self._live()
        for k, v in (key.items() if isinstance(key, dict) else [(key, value)]):
            db.kv_put(k, v)
        self._host.wrote()
        return self._done(None)

    def delete(self, key: str | list[str]) -> Any:
        db = self._live()
        self._host.wrote()
        if isinstance(key, list):
            return self._done(sum(db.kv_delete(k) for k in key))
        return self._done(db.kv_delete(key))

    def delete_all(self, alarm: bool | None = None) -> Any:
        """``deleteAll()``: delete every key and table. Under a compatibility date with the flag
        ``delete_all_deletes_alarm`` (2026-02-24 on) it deletes the alarm too, as ``delete_alarm()``;
        before it, the alarm survives and fires. ``alarm`` (a Python Worker's own compatibility date) overrides
        the profile's flag."""
        host = self._host
        db = self._live()
        db.delete_all()
        host.wrote()
        if host.sim.profile.flag("delete_all_deletes_alarm") if alarm is None else alarm:
            host.stage_alarm(None)
        return self._done(None)

    def list(self, prefix: str = "") -> Future:
        """A read, as ``get``."""
        return self._host.read(self._live().kv_list(prefix))

    def sync(self) -> Any:
        """``await storage.sync()``: resolves once every write made so far is durable. With writes in
        this turn, awaiting it suspends until the turn's commit (the turn ends); an instance reset before
        then never sees it resolve (its writes are lost). With none, it resolves at once."""
        host = self._host
        host.check_alive()
        if host.turn is None:
            return self._done(None)
        fut = Future()
        host.after_commit(_resolve_if_kept, fut)
        return fut

    def transaction_sync(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn()`` atomically: if it raises, its writes (SQL, KV and the alarm it set or deleted) are
        rolled back and the error propagates (workerd: the ``sql_txsync`` probe)."""
        self.tx_begin()
        try:
            result = fn()
        except BaseException:
            self.tx_end(False)
            raise
        self.tx_end(True)
        return result

    def tx_begin(self) -> None:
        """Open a savepoint: the one rule every transaction API uses (``transaction_sync`` here, the JS host's
        ``transactionSync``): its SQL and KV writes and the alarm staged meanwhile commit or roll back together."""
        self._live().savepoint()
        self._host.wrote()
        self._tx.append(self._host.staged)

    def tx_end(self, commit: bool) -> None:
        """Close the innermost savepoint: keep its writes, or undo them and restore the alarm staged before it."""
        staged = self._tx.pop()
        self._host.db.release(commit)
        if not commit:
            self._host.staged = staged

    # -- the alarm -----------------------------------------------------------------------------
    def get_alarm(self) -> Future:
        """The pending alarm time in ms, or None (None inside ``alarm()`` unless set since it started)."""
        return self._done(self._host.visible_alarm())

    def set_alarm(self, scheduled_time: int | float) -> Future:
        host = self._host
        if host.ctx is None:
            host.check_alive()
        if host.no_alarm and host.current_cause() != "constructor":
            raise NoAlarmHandler(NO_ALARM_HANDLER)
        kernel = host.sim.kernel
        now = kernel.now
        # alarm_time()'s usual case, inlined (with stage_alarm's cause and the handler's done() check,
        # 64,704 -> 62,846 instructions a lifecycle, valgrind, no journal)
        if scheduled_time.__class__ is int and 0 < scheduled_time <= MAX_MS:
            host.stage_alarm(scheduled_time if scheduled_time > now else now)
        else:
            host.stage_alarm(alarm_time(scheduled_time, now))
        return host.settled(None)

    def delete_alarm(self) -> Future:
        self._host.check_alive()
        self._host.stage_alarm(None)
        return self._done(None)

    def _live(self):
        self._host.check_alive()
        return self._host.db

    def _done(self, value: Any) -> Any:
        return self._host.settled(value)


def _resolve_if_kept(fut: Future, err: BaseException | None) -> None:
    if err is None:  # a reset kills the awaiting task: nothing to resolve
        fut.set_result(None)


class DurableObjectState:
    """``ctx``: the object's id, storage, concurrency control, clock and declared effects."""

    def __init__(self, host: Host) -> None:
        self._host = host
        self._kernel = host.sim.kernel
        self.id = ObjectId(host.name, host.name)
        self.storage = Storage(host)

    def now(self) -> int:
        """``Date.now()`` in virtual milliseconds."""
        return self._kernel.now

    @property
    def label(self) -> str:
        """The object's id, or ``parent/facet`` for a facet: how the journal names it (``object_id``)."""
        return self._host.label

    @property
    def object_class(self) -> type:
        """The object's class."""
        return self._host.namespace.cls

    @property
    def parent(self) -> DurableObjectState | None:
        """A facet's hosting parent's ``ctx`` (None for a root object, a namespace's object); raises
        ObjectCrashed once this instance no longer runs."""
        host = self._host
        host.check_alive()
        return None if host.parent is None else host.parent.ctx

    def start(self, aw: Any, name: str = "task") -> Any:
        """Start ``aw`` inside this object without awaiting it (a promise left in flight): one of the
        object's tasks, committing at its awaits and dying with the instance. Returns the task."""
        host = self._host
        host.check_alive()
        return host.spawn(as_coro(aw), name)

    def wait_until(self, aw: Any) -> None:
        """``ctx.waitUntil(promise)``: start ``aw`` now as the object's own background work; the object
        is not evicted as idle until it settles, and it dies with the instance. Returns nothing."""
        self.start(aw, "wait_until")

    def gather(self, *aws: Any) -> Future:
        """Start each awaitable (a stub call, a coroutine) now as one of this object's tasks and return
        one future of the list of their results, in order; the first failure fails it."""
        host = self._host
        host.check_alive()
        return self._kernel.gather(*(a if isinstance(a, Future) else host.spawn(as_coro(a), "gather") for a in aws))

    def call_parent(self, method: str, *args: Any, name: str | None = None) -> Any:
        """A facet's RPC into its hosting parent's ``method(*args)``, started now as one of the facet's
        tasks (``name``, default ``parent:<method>``); await the returned task for the result."""
        host = self._host
        host.check_alive()
        if host.parent is None:
            raise AlarmkitError(f"{host.label} is a root object: call_parent is for facets; use a stub instead")
        return host.spawn(host.sim.rpc(host.parent, method, args, {}), name or f"parent:{method}")

    def abort(self, reason: str = "aborted", retry_alarm: bool = True) -> None:
        """``ctx.abort(reason, {retryAlarm})`` (workerd PR 6996): reset the object now. Uncommitted writes
        are lost, every call in flight fails with ``Aborted``, and so does the caller (this never returns).
        An ``alarm()`` running in the object fails too: retried as a counted failure, or with
        ``retry_alarm=False`` not retried (its alarm is cleared, as after a success)."""
        host = self._host
        host.check_alive()
        if not isinstance(retry_alarm, bool):
            raise AlarmkitError(f"ctx.abort(retry_alarm=...) must be True or False, got {retry_alarm!r}")
        raise host.abort(text("ctx.abort(reason)", reason), retry_alarm)

    def journal_event(self, kind: str, *, scheduled_ms: int | None = None, prev_ms: int | None = None,
                      retry_count: int | None = None, detail: dict | None = None) -> None:
        """Journal a custom event about this object now (``kind`` is yours, e.g. ``"keepalive_fire"``); refused
        as ``sim.journal_event`` refuses (a kind the runtime journals itself, a bad time or detail)."""
        host = self._host
        detail = custom_event(kind, scheduled_ms, prev_ms, retry_count, detail)
        host.sim.log(kind, host, scheduled_ms, prev_ms, retry_count, detail)

    def sleep(self, ms: int) -> Future:
        """A timer inside the object (an external wait: other events may interleave)."""
        self._host.check_alive()
        return self._host.sim.kernel.sleep(ms)

    def block_concurrency_while(self, fn: Callable[[], Awaitable[Any]]) -> Future:
        """Run ``fn()``; no other event is delivered to this object until it finishes."""
        return self._host.block_concurrency_while(fn)

    @property
    def facets(self):
        """``ctx.facets`` (workerd): child objects hosted in this one; not defined on celld (AttributeError)."""
        return self._host.sim.facets_of(self._host)

    def effect(self, name: str, key: Any = None, **detail: Any) -> Future:
        """Declare an external effect (a revoke, an email): journaled, and a place faults can strike."""
        return self._host.effect(name, key, detail)

    def __repr__(self) -> str:
        return f"<ctx of {self._host.label}>"
