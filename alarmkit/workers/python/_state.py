"""What a Python Worker's Durable Object holds as ``self.ctx``: the JS-named ``DurableObjectState`` and
its ``storage`` (``get``, ``put``, ``list``, ``deleteAll``, ``setAlarm``, ``sql.exec``...), each call made
on the simulation's own ``ctx`` so journal, faults, the input gate and commit points are alarmkit's.

Values come back converted as the SDK's ``_BindingWrapper`` converts them (``_convert``): a stored object
is a ``JsDict``, ``list()`` gives a ``dict`` (a JS ``Map`` ``.to_py()``), SQL rows are ``JsDict``s.
Keyword arguments are the trailing options object Pyodide makes of them (``list(prefix="a", limit=2)``
is ``list({prefix: "a", limit: 2})``), and a dict passed positionally works the same.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
from typing import Any, Callable

from ...runtime import Future
from ._convert import JsDate, JsDict, from_rpc, storable
from ._surface import refuse

__all__ = ["JsState", "JsStorage", "JsSql", "JsKv", "JsCursor", "JsId", "ExecutionContext", "DELETE_ALL_DELETES_ALARM"]

# workerd src/workerd/io/compatibility-date.capnp, deleteAllDeletesAlarm: enabled from this date
DELETE_ALL_DELETES_ALARM = "2026-02-24"
LIST_OPTIONS = {"start", "startAfter", "end", "prefix", "reverse", "limit", "allowConcurrency", "noCache"}


def _then(fut: Any, fn: Callable[[Any], Any]) -> Future:
    """A future of ``fn(value)`` once ``fut`` resolves (synchronously chained: the read's input-gate
    lock is released after the reader's continuation is queued, as for the unconverted read)."""
    out = Future()

    def done(f: Any) -> None:
        if f.exception() is not None:
            out.set_exception(f.exception())
        else:
            try:
                out.set_result(fn(f.result()))
            except Exception as err:  # noqa: BLE001 - the conversion's error is the read's error
                out.set_exception(err)

    fut.add_done_callback(done)
    return out


def _options(args: tuple, kwargs: dict, allowed: set[str], what: str) -> dict:
    if not args and not kwargs:  # the usual call: no options
        return {}
    opts: dict = {}
    for a in args:
        if a is None:
            continue
        if not isinstance(a, dict):
            raise TypeError(f"{what}: options are keyword arguments or one dict, got {type(a).__name__}")
        opts.update(a)
    opts.update(kwargs)
    unknown = sorted(set(opts) - allowed)
    if unknown:
        raise TypeError(f"{what}: unknown option {unknown[0]!r}; options: {sorted(allowed)}")
    return opts


def _alarm_ms(value: Any) -> Any:
    if isinstance(value, _dt.datetime):  # python_to_rpc: a datetime travels as a JS Date
        return value.timestamp() * 1000
    if isinstance(value, JsDate):
        return value.ms
    return value


class JsId(str):
    """A Durable Object id: ``toString()`` (64 hex digits, stable for the name), ``name``, ``equals``.
    As a ``str`` it is the object's name, as alarmkit's ids are."""

    __slots__ = ("name", "_hex")

    def __new__(cls, binding: str, object_name: str, name: str | None, unique: bool = False) -> JsId:
        self = super().__new__(cls, object_name)
        self.name = name
        # a unique id's object is named by its hex; a named one's hex is derived from the name, stable per binding
        self._hex = object_name if unique else hashlib.sha256(f"{binding}\0{object_name}".encode("utf-8", "surrogatepass")).hexdigest()
        return self

    def toString(self) -> str:
        return self._hex

    def equals(self, other: Any) -> bool:
        return isinstance(other, JsId) and other._hex == self._hex


class JsCursor:
    """``sql.exec``'s cursor: ``toArray()``, ``one()``, iteration (rows as ``JsDict``), ``raw()``,
    ``columnNames``, ``rowsRead``, ``rowsWritten``, ``next()``."""

    def __init__(self, cursor: Any) -> None:
        self._cur = cursor
        self._it = None

    def toArray(self) -> list:
        return [JsDict(r) for r in self._cur]

    def one(self) -> JsDict:
        return JsDict(self._cur.one())

    def raw(self) -> list:
        return [list(r) for r in self._cur.raw()]

    def __iter__(self):
        return (JsDict(r) for r in self._cur)

    def next(self) -> JsDict:
        if self._it is None:
            self._it = iter(self)
        row = next(self._it, None)
        return JsDict(done=True) if row is None else JsDict(done=False, value=row)

    @property
    def columnNames(self) -> list[str]:
        return list(self._cur.column_names)

    @property
    def rowsRead(self) -> int:
        return len(self._cur)

    @property
    def rowsWritten(self) -> int:
        return self._cur.rows_written


class JsSql:
    """``ctx.storage.sql``: ``exec(query, *bindings)``; ``databaseSize``; ``Cursor`` (the class of what
    ``exec`` returns). ``Statement`` is refused by name (``_surface``)."""

    Cursor = JsCursor

    def __init__(self, storage: Any) -> None:
        self._sql = storage.sql

    def __getattr__(self, name: str) -> Any:
        refuse("ctx.storage.sql", name, "SqlStorage")

    def exec(self, query: str, *bindings: Any) -> JsCursor:
        return JsCursor(self._sql.exec(query, *bindings))

    @property
    def databaseSize(self) -> int:
        return self._sql.database_size


def _key(key: Any, what: str) -> str:
    if not isinstance(key, str):
        raise TypeError(f"storage.kv.{what}: keys are text (str), got {type(key).__name__}")
    return key


class JsKv:
    """``ctx.storage.kv``: the synchronous key-value API of a SQLite-backed object (workerd's
    ``SyncKvStorage``, src/workerd/api/sync-kv.h): ``get(key)`` (the value or None), ``put(key, value)``,
    ``delete(key)`` (True if it was there), ``list(prefix=, start=, startAfter=, end=, reverse=, limit=)``
    (``[key, value]`` pairs in key order). The same keys as ``get``/``put``; writes join the turn."""

    def __init__(self, ctx: Any) -> None:
        self._ctx = ctx

    def _db(self) -> Any:
        host = self._ctx._host
        host.check_alive()
        return host.db

    def get(self, key: Any) -> Any:
        return from_rpc(self._db().kv_get(_key(key, "get")))

    def put(self, key: Any, value: Any) -> None:
        self._ctx.storage.put(_key(key, "put"), storable(key, value))

    def delete(self, key: Any) -> bool:
        db = self._db()
        self._ctx._host.wrote()  # joins the turn, as a put does
        return bool(db.kv_delete(_key(key, "delete")))

    def list(self, *options: Any, **kw: Any) -> list:
        opts = _options(options, kw, LIST_OPTIONS, "storage.kv.list")
        limit = opts.get("limit")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise TypeError(f"storage.kv.list: limit must be a positive integer, got {limit!r}")
        return [[k, v] for k, v in _pick(self._db().kv_list(opts.get("prefix", "")), opts, limit).items()]


def _pick(found: dict, opts: dict, limit: int | None) -> dict:
    """``list``'s options applied to the keys found under the prefix (a ``dict`` in their order)."""
    keys = sorted(found)
    if "start" in opts:
        keys = [k for k in keys if k >= opts["start"]]
    if "startAfter" in opts:
        keys = [k for k in keys if k > opts["startAfter"]]
    if "end" in opts:
        keys = [k for k in keys if k < opts["end"]]
    if opts.get("reverse"):
        keys.reverse()
    if limit is not None:
        keys = keys[:limit]
    return {k: from_rpc(found[k]) for k in keys}



class JsStorage:
    """``ctx.storage`` with workerd's names (see the module docstring)."""

    def __init__(self, ctx: Any, compat: str) -> None:
        self._ctx = ctx
        self._s = ctx.storage
        self._compat = compat
        self.sql = JsSql(self._s)
        self.kv = JsKv(ctx)

    def get(self, key: Any, *options: Any, **kw: Any) -> Future:
        _options(options, kw, {"allowConcurrency", "noCache"}, "storage.get")
        return _then(self._s.get(list(key) if isinstance(key, (list, tuple)) else key), from_rpc)

    def put(self, key: Any, value: Any = None, *options: Any, **kw: Any) -> Any:
        if isinstance(key, dict):
            _options((value, *options), kw, {"allowUnconfirmed", "noCache"}, "storage.put")
            return self._s.put({k: storable(k, v) for k, v in key.items()})
        _options(options, kw, {"allowUnconfirmed", "noCache"}, "storage.put")
        return self._s.put(key, storable(key, value))

    def delete(self, key: Any, *options: Any, **kw: Any) -> Any:
        _options(options, kw, {"allowUnconfirmed", "noCache"}, "storage.delete")
        return self._s.delete(list(key) if isinstance(key, (list, tuple)) else key)

    def list(self, *options: Any, **kw: Any) -> Future:
        """``list({start, startAfter, end, prefix, reverse, limit})``: a ``dict`` in key order."""
        opts = _options(options, kw, LIST_OPTIONS, "storage.list")
        limit = opts.get("limit")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise TypeError(f"storage.list: limit must be a positive integer, got {limit!r}")

        return _then(self._s.list(opts.get("prefix", "")), lambda found: _pick(found, opts, limit))

    def deleteAll(self, *options: Any, **kw: Any) -> Any:
        """Every key and SQL table gone; the alarm too from compatibility date 2026-02-24 (workerd's
        ``deleteAllDeletesAlarm``, src/workerd/api/actor-state.c++ ``DurableObjectStorage::deleteAll``)."""
        _options(options, kw, {"allowUnconfirmed", "noCache"}, "storage.deleteAll")
        self._s.delete_all(alarm=False)  # keys and tables (workerd's _cf_ tables are out of the object's SQL)
        if self._compat >= DELETE_ALL_DELETES_ALARM:
            return self._s.delete_alarm()
        return self._s.sync()

    def getAlarm(self, *options: Any, **kw: Any) -> Any:
        _options(options, kw, {"allowConcurrency"}, "storage.getAlarm")
        return self._s.get_alarm()

    def setAlarm(self, scheduled_time: Any, *options: Any, **kw: Any) -> Any:
        _options(options, kw, {"allowUnconfirmed"}, "storage.setAlarm")
        return self._s.set_alarm(_alarm_ms(scheduled_time))

    def deleteAlarm(self, *options: Any, **kw: Any) -> Any:
        _options(options, kw, {"allowUnconfirmed"}, "storage.deleteAlarm")
        return self._s.delete_alarm()

    def sync(self) -> Any:
        return self._s.sync()

    def transactionSync(self, fn: Callable[[], Any]) -> Any:
        return self._s.transaction_sync(fn)

    async def transaction(self, fn: Callable[[Any], Any]) -> Any:
        """``transaction(async txn => ...)``: ``fn(txn)`` with ``txn`` this storage (``get``/``put``/...) and
        ``txn.rollback()``, run by the runtime's ``Storage.transaction`` (runtime/_txn.py): a throw rolls back
        the writes and the alarm and rethrows; ``rollback()`` rolls back and the call returns ``fn``'s value."""
        storage = self

        async def body(txn: Any) -> Any:
            result = fn(_TxnView(storage, txn))
            if hasattr(result, "__await__"):
                result = await result
            return result

        return await self._s.transaction(body)

    def __getattr__(self, name: str) -> Any:  # the bookmarks: refused by name (_surface)
        refuse("ctx.storage", name, "DurableObjectStorage")


class ExecutionContext:
    """A ``WorkerEntrypoint``'s ``ctx``: ``waitUntil`` (started now, runs on) and ``passThroughOnException``."""

    def __init__(self, sim: Any) -> None:
        self._sim = sim

    def waitUntil(self, aw: Any) -> None:
        self._sim.spawn(aw, "waitUntil")

    wait_until = waitUntil

    def passThroughOnException(self) -> None:
        pass


class JsState:
    """A Durable Object's ``ctx``: ``id``, ``storage``, ``blockConcurrencyWhile`` (also a decorator),
    ``waitUntil``, ``abort``, ``props`` (``{}``, as workerd gives an object started without props). WebSocket
    hibernation, ``facets``, ``exports`` and ``container`` are refused by name (``_surface``)."""

    def __init__(self, ctx: Any, binding: str, compat: str, unique: bool = False) -> None:
        self._ctx = ctx
        # an object made from newUniqueId/idFromString has no name (workerd: ctx.id.name is undefined)
        self.id = JsId(binding, str(ctx.id), None if unique else ctx.id.name, unique)
        self.storage = JsStorage(ctx, compat)
        self.props = JsDict()

    def blockConcurrencyWhile(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn()`` with no other event delivered meanwhile; returns the awaitable of its result."""
        return self._ctx.block_concurrency_while(fn)

    def waitUntil(self, aw: Any) -> None:
        self._ctx.wait_until(aw)

    def abort(self, reason: str | None = None) -> None:
        """Reset the object now (alarmkit's ``ctx.abort``): this never returns."""
        self._ctx.abort("Durable Object abort requested" if reason is None else str(reason))

    def __getattr__(self, name: str) -> Any:
        refuse("ctx", name, "DurableObjectState")


class _TxnView:
    """``txn`` of the Python Workers ``transaction``: the storage's methods, and ``rollback()``."""

    __slots__ = ("_storage", "_txn")

    def __init__(self, storage: Any, txn: Any) -> None:
        self._storage = storage
        self._txn = txn

    def rollback(self) -> None:
        self._txn.rollback()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._storage, name)
