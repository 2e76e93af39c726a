"""What user code sees: ``DurableObject``, its ``ctx`` and ``ctx.storage``, ``AlarmInfo``.

The surface follows the JavaScript API in snake_case (``setAlarm`` -> ``set_alarm``). Storage
calls take effect at once and join the object's turn; the turn's writes commit together when it
ends (``_host``: the turn model). Awaiting a write does not suspend; forgetting ``await`` loses nothing.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Awaitable, Callable, NamedTuple

from .._checks import shown, text
from ..journal import custom_event
from ..kernel import Future, as_coro
from ._storage import Cursor
from ._txn import Savepoint, Transaction
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


# workerd's setAlarm(kj::Date) argument (jsg/value.h DateWrapper::tryUnwrap and toKjDate, util.c++
# typeErrorMessage); each text observed on workerd 1.20261117.1 (calibration probe set_alarm_values)
SET_ALARM_NOT_A_DATE = "Failed to execute 'setAlarm' on 'DurableObjectStorage': parameter 1 is not of type 'date'."
SET_ALARM_INVALID_DATE = "The value cannot be converted because it is not a valid Date."
SET_ALARM_AFTER_2189 = "This API doesn't support dates after 2189."
SET_ALARM_BEFORE_1687 = "This API doesn't support dates before 1687."
# kj::Date holds int64 nanoseconds: a time is taken while ms * 1e6 < 2**63 (as a double), i.e. up to this ms
SET_ALARM_LAST_MS = 9_223_372_036_854


def alarm_time(value: Any, now: int) -> int:
    """Validate a ``set_alarm`` argument as workerd's ``setAlarm`` does, with its texts (then a hint):
    a number or a Date only (not a string, None, a bool); finite; ``ms * 1e6`` inside int64 nanoseconds
    (``SET_ALARM_LAST_MS``, "after 2189"); fractions truncated toward zero; then ``<= 0`` refused. The
    stored time is ``max(t, now)`` (actor-state.c++)."""
    if value.__class__ is int and 0 < value <= SET_ALARM_LAST_MS:  # the usual case, first and cheap
        return value if value > now else now
    hint = f" (set_alarm() got {shown(value)}; pass epoch milliseconds such as ctx.now() + 5_000)"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise AlarmTimeError(SET_ALARM_NOT_A_DATE + hint)
    if isinstance(value, float) and not math.isfinite(value):
        raise AlarmTimeError(SET_ALARM_INVALID_DATE + hint)
    if float(value) * 1e6 >= 2.0**63:
        raise AlarmTimeError(SET_ALARM_AFTER_2189 + hint)
    if float(value) * 1e6 <= -(2.0**63):
        raise AlarmTimeError(SET_ALARM_BEFORE_1687 + hint)
    ms = int(value)  # static_cast<int64_t>: toward zero (0.5 -> 0, -0.5 -> 0, 1.9 -> 1)
    if ms <= 0:
        raise AlarmTimeError(SET_ALARM_NONPOSITIVE)
    return max(ms, now)


class Storage:
    """``ctx.storage``: SQL, KV and the object's one alarm."""

    __slots__ = ("_host", "sql")

    def __init__(self, host: Host) -> None:
        self._host = host
        self.sql = SqlStorage(host)

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
        """Run ``fn()`` atomically: if it raises, its writes and the alarm it set or deleted are rolled
        back and the error propagates (``_txn``: one rule for both hosts)."""
        savepoint = Savepoint(self._host)
        try:
            result = fn()
        except BaseException:
            savepoint.rollback()
            raise
        savepoint.commit()
        return result

    def transaction(self, fn: Callable[[Transaction], Awaitable[Any]]) -> Future:
        """``await ctx.storage.transaction(fn)``: ``await fn(txn)`` with no other event delivered meanwhile
        (workerd runs it inside ``blockConcurrencyWhile``). If it raises, its writes and alarm are rolled back
        and the error propagates; ``txn.rollback()`` rolls them back and the call resolves with ``fn``'s value."""
        host = self._host
        host.check_alive()
        storage = self

        async def body() -> tuple[bool, Any]:
            savepoint = Savepoint(host)
            try:
                result = await fn(Transaction(storage, savepoint))
            except Exception as err:  # packed away, as workerd does: a throw rolls back, it does not reset the object
                savepoint.rollback()
                return False, err
            savepoint.commit()
            return True, result

        async def outcome() -> Any:
            ok, value = await host.block_concurrency_while(body)
            if not ok:
                raise value
            return value

        return outcome()

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
        if scheduled_time.__class__ is int and 0 < scheduled_time <= SET_ALARM_LAST_MS:
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
