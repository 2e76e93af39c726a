"""What a Python Worker's code reaches that Python raises no audit event for (so ``_contain``'s hook does
not see it), closed in the worker's own modules: the ``os``, ``atexit``, ``sqlite3`` and ``duckdb`` its
code imports are made for it (``shims``, beside ``_modules``' clock shims; nothing global is patched).

- ``os.mkfifo`` and ``os.mknod`` make a file and are not audited: refused by name; so are ``os._exit`` (the
  process would end, its journal unwritten, with the worker's exit code taken for the run's) and
  ``os.umask`` (the mode of every file alarmkit writes after it).
- ``os.environ`` (and ``os.getenv``, ``os.environb``) holds ``HOME=/session`` only, not the machine's
  environment; changing it is refused as ``os.putenv``/``os.unsetenv`` are (the hook's ``SHARED`` text).
- ``atexit.register`` would run the worker's code after the simulation, outside its clock: refused.
- ``sqlite3.connect`` to a file (also ``sqlite3.Connection(...)``, ``sqlite3.dbapi2``; a 'file:' URI is in
  memory only when its every ``mode`` is ``memory``: ``_contain.sqlite_in_memory``) is refused here (the hook's ``sqlite3.connect`` event is raised inside this
  module, which the hook counts as alarmkit's); an in-memory connection gets an authorizer that refuses
  ``ATTACH`` of a file and ``VACUUM INTO`` (SQLite authorizes both as ``SQLITE_ATTACH`` of the file name; a name
  given as a parameter or an expression, which the authorizer cannot read, is refused too),
  and a statement it refused is a ``WorkerUnsupported`` naming the statement.
- ``duckdb.connect(path)`` to a file is refused; an in-memory one (and ``duckdb.sql``, ``duckdb.execute``...
  at module level, which use one in-memory connection of the worker's) runs with
  ``enable_external_access=false`` locked (``lock_configuration``), so it attaches, reads and writes no
  file; a statement DuckDB refuses for that is a ``WorkerUnsupported`` naming the statement.

Every refusal is one line, ``CALL in the worker's code at FILE:LINE: why; the way out`` (docs/errors.md).
"""

from __future__ import annotations

import atexit as _atexit
import os as _os
import sqlite3 as _sqlite3
import sys
import types
from collections.abc import MutableMapping
from typing import Any, Iterator

from ...errors import MemberUnsupported, WorkerUnsupported
from ._contain import _SQLITE_URI, owner_frame, refusal, sqlite_in_memory

__all__ = ["make_unaudited", "SESSION_ENV", "REAL_SUBMODULES", "PASSED"]

SESSION_ENV = {"HOME": "/session"}  # what a Python Worker sees of its environment
REAL_SUBMODULES = ("os", "sqlite3", "duckdb", "importlib")  # `from duckdb.typing import ...`: the real submodule


PASSED = {__file__}  # the modules whose frames a refusal passes over to the worker's line (``_reach`` too)


def _where() -> str:
    """``file:line`` of the worker's code that made the call (past the frames of ``PASSED``)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename in PASSED:
        frame = frame.f_back
    kind, frame = owner_frame(frame)
    if frame is None or kind == "alarmkit":
        return "a line of the worker's code"
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


def _refuse(call: str, args: tuple, why: str | None = None) -> WorkerUnsupported:
    """``call(args)`` refused: with the hook's text for its kind (``refusal``) or ``why``."""
    where = _where()
    if why is None:
        return refusal(call, args, where)
    shown = refusal(call, args, where).args[0].split(" in the worker's code at ")[0]
    return WorkerUnsupported(f"{shown} in the worker's code at {where}: {why}")


# -- os -------------------------------------------------------------------------------------------------
class _Environ(MutableMapping):
    """The worker's ``os.environ``: its own copy of ``SESSION_ENV``; a change is refused as the process's is."""

    def __init__(self, data: dict) -> None:
        self._data = dict(data)

    def __getitem__(self, key: Any) -> Any:
        return self._data[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        raise _refuse("os.putenv", (key, value))

    def __delitem__(self, key: Any) -> None:
        raise _refuse("os.unsetenv", (key,))

    def __iter__(self) -> Iterator:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"environ({self._data!r})"

    def copy(self) -> dict:
        return dict(self._data)


def _os_module() -> types.ModuleType:
    mod = types.ModuleType("os", "os, with the worker's own environment and no unaudited file making")
    mod.__dict__.update({k: v for k, v in vars(_os).items() if not k.startswith("__")})
    environ = _Environ(SESSION_ENV)
    environb = _Environ({k.encode(): v.encode() for k, v in SESSION_ENV.items()})

    def getenv(key: str, default: Any = None) -> Any:
        return environ.get(key, default)

    def getenvb(key: bytes, default: Any = None) -> Any:
        return environb.get(key, default)

    def mkfifo(path: Any, *args: Any, **kwargs: Any) -> None:
        raise _refuse("os.mkfifo", (path, *args))

    def mknod(path: Any, *args: Any, **kwargs: Any) -> None:
        raise _refuse("os.mknod", (path, *args))

    def _exit(status: Any, *args: Any) -> None:
        raise _refuse("os._exit", (status,), "it ends at once the process every object and alarmkit share: the "
                      "journal unwritten, the run unreported, its exit code taken for the run's; raise an exception "
                      "(or return) from the handler")

    def umask(mask: Any, *args: Any) -> None:
        raise _refuse("os.umask", (mask,), "it changes the process every object and alarmkit share (the mode of "
                      "every file alarmkit writes after it), outside the simulation; leave it as it is")

    mod.__dict__.update(environ=environ, environb=environb, getenv=getenv, getenvb=getenvb, mkfifo=mkfifo,
                        mknod=mknod, _exit=_exit, umask=umask)
    return mod


# -- atexit ---------------------------------------------------------------------------------------------
def _atexit_module() -> types.ModuleType:
    mod = types.ModuleType("atexit", "atexit, whose register is refused: it would run after the simulation")
    mod.__dict__.update({k: v for k, v in vars(_atexit).items() if not k.startswith("__")})

    def register(func: Any, *args: Any, **kwargs: Any) -> Any:
        raise _refuse("atexit.register", (func,), "a callback at the process's exit runs after the simulation, "
                      "outside its clock and its journal; do the work in the handler (or a task it starts), or "
                      "in the code that drives the simulation")

    def private(name: str) -> Any:
        def call(*args: Any) -> Any:
            raise _refuse(f"atexit.{name}", args, "the process's exit callbacks are alarmkit's and every object's; "
                          "running or clearing them acts outside the simulation: leave them as they are")
        return call

    mod.register, mod._run_exitfuncs, mod._clear = register, private("_run_exitfuncs"), private("_clear")
    return mod


# -- sqlite3 --------------------------------------------------------------------------------------------
def _uri(args: tuple, kwargs: dict) -> bool:
    """Whether a ``connect``'s 'file:' names are URIs (its ``uri``, the 7th argument after the name)."""
    return _SQLITE_URI or bool(kwargs.get("uri", args[6] if len(args) > 6 else False))


_FILE_WHY = ("a file written outside the simulation, which alarmkit does not do; keep the data in ctx.storage "
             "(kv, sql), or bind a fake of the store (load_worker(..., bindings={'FILES': my_fake}))")


def _authorizer(refused: list, uri: bool) -> Any:
    def authorize(action: int, arg1: Any, arg2: Any, db: Any, trigger: Any) -> int:
        if action == _sqlite3.SQLITE_ATTACH and not sqlite_in_memory(arg1, uri):  # None: `ATTACH ?`, an expression
            refused.append(arg1)
            return _sqlite3.SQLITE_DENY
        return _sqlite3.SQLITE_OK
    return authorize


def _checked(conn: Any, call: str, run: Any, sql: Any, *args: Any) -> Any:
    """``run(sql, *args)``; refused by our authorizer: a ``WorkerUnsupported`` naming the statement."""
    conn._refused.clear()
    try:
        return run(sql, *args)
    except _sqlite3.DatabaseError:
        if not conn._refused:
            raise
        file = conn._refused[0]
        file = f"the file {file!r}" if file is not None else "a file whose name is a parameter or an expression"
        raise _refuse(call, (sql,), f"it writes {file} outside the simulation (ATTACH of a file, VACUUM "
                      "INTO), which alarmkit does not do; attach ':memory:', or keep the data in ctx.storage.sql") \
            from None


class _Cursor(_sqlite3.Cursor):
    def execute(self, sql: Any, *args: Any) -> Any:
        return _checked(self.connection, "sqlite3.Cursor.execute", super().execute, sql, *args)

    def executemany(self, sql: Any, *args: Any) -> Any:
        return _checked(self.connection, "sqlite3.Cursor.executemany", super().executemany, sql, *args)

    def executescript(self, sql: Any) -> Any:
        return _checked(self.connection, "sqlite3.Cursor.executescript", super().executescript, sql)


def _member(call: str) -> MemberUnsupported:
    """A SQLite extension (a native library loaded into the process) refused as the member is read."""
    return MemberUnsupported(f"{call} in the worker's code at {_where()}: an extension is a native library "
                             "loaded into the process every object and alarmkit share, outside the simulation "
                             "(its code reaches files, the network, anything); keep to SQLite's own functions")


class _Connection(_sqlite3.Connection):
    """An in-memory connection of the worker's (``sqlite3.connect``, or ``sqlite3.Connection`` called or
    subclassed): our authorizer stays in front of any it sets."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        database = args[0] if args else kwargs.get("database")
        if not sqlite_in_memory(database, _uri(args, kwargs)):
            raise _refuse("sqlite3.connect", (database,))
        super().__init__(*args, **kwargs)
        self._refused: list = []
        self._ours = _authorizer(self._refused, _uri(args, kwargs))
        super().set_authorizer(self._ours)

    def set_authorizer(self, callback: Any) -> None:
        if callback is None:
            super().set_authorizer(self._ours)
            return

        def both(*a: Any) -> int:
            mine = self._ours(*a)
            return mine if mine != _sqlite3.SQLITE_OK else callback(*a)

        super().set_authorizer(both)

    @property
    def enable_load_extension(self) -> Any:
        raise _member("sqlite3.Connection.enable_load_extension")

    @property
    def load_extension(self) -> Any:
        raise _member("sqlite3.Connection.load_extension")

    def cursor(self, factory: Any = _Cursor) -> Any:
        return super().cursor(factory if isinstance(factory, type) and issubclass(factory, _Cursor) else _Cursor)

    def execute(self, sql: Any, *args: Any) -> Any:
        return self.cursor().execute(sql, *args)

    def executemany(self, sql: Any, *args: Any) -> Any:
        return self.cursor().executemany(sql, *args)

    def executescript(self, sql: Any) -> Any:
        return self.cursor().executescript(sql)


def _sqlite3_module() -> types.ModuleType:
    mod = types.ModuleType("sqlite3", "sqlite3, in memory only: no file connected, attached or vacuumed into")
    mod.__dict__.update({k: v for k, v in vars(_sqlite3).items() if not k.startswith("__")})

    def connect(database: Any, *args: Any, **kwargs: Any) -> Any:
        if not sqlite_in_memory(database, _uri((database, *args), kwargs)):
            raise _refuse("sqlite3.connect", (database,))
        factory = kwargs.get("factory")
        if not (isinstance(factory, type) and issubclass(factory, _Connection)):  # a subclass of its own stays
            kwargs["factory"] = _Connection
        return _sqlite3.connect(database, *args, **kwargs)

    mod.connect, mod.Connection, mod.dbapi2 = connect, _Connection, mod  # `from sqlite3 import dbapi2`: this one
    return mod


# -- duckdb ---------------------------------------------------------------------------------------------
_LOCKED = {"enable_external_access": False, "lock_configuration": True}
_DUCK_WHY = ("DuckDB would read or write a file outside the simulation (ATTACH, COPY, read_csv...), which alarmkit "
             "does not do; keep the data in ctx.storage, or pass it in as a Python value")


class _LockedDuckDB:
    """An in-memory DuckDB connection of the worker's, external access off and locked; a statement refused
    for it is a ``WorkerUnsupported`` naming the statement."""

    def __init__(self, duckdb: Any, con: Any) -> None:
        object.__setattr__(self, "_duckdb", duckdb)
        object.__setattr__(self, "_con", con)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._con, name)
        if not callable(value) or name.startswith("__"):
            return value
        duckdb = self._duckdb

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                out = value(*args, **kwargs)
            except duckdb.PermissionException:
                shown = args[:1] if args else tuple(kwargs.values())[:1]
                raise _refuse(f"duckdb.{name}", shown, _DUCK_WHY) from None
            return self if out is self._con else out

        return call

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: Any) -> None:
        self._con.close()


def _duckdb_module() -> types.ModuleType | None:
    try:
        import duckdb
    except ImportError:
        return None
    mod = types.ModuleType("duckdb", "duckdb, in memory only, with external access (files) off and locked")
    mod.__dict__.update({k: v for k, v in vars(duckdb).items() if not k.startswith("__")})
    default: list = []

    def connect(database: Any = ":memory:", read_only: bool = False, config: Any = None, **kwargs: Any) -> Any:
        name = str(database) if isinstance(database, (str, _os.PathLike)) else database
        if not (isinstance(name, str) and (name in ("", ":memory:") or name.startswith(":memory:"))):
            raise _refuse("duckdb.connect", (database,))
        settings = {**(config or {}), **_LOCKED} if isinstance(config, dict) else dict(_LOCKED)
        return _LockedDuckDB(duckdb, duckdb.connect(name, read_only=read_only, config=settings))

    def default_connection() -> Any:
        """The worker's one in-memory connection that ``duckdb.sql(...)`` and the like use."""
        if not default:
            default.append(_LockedDuckDB(duckdb, duckdb.connect(":memory:", config=dict(_LOCKED))))
        return default[0]

    def module_level(name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            kwargs.pop("connection", None)  # never another connection than the worker's own
            return getattr(default_connection(), name)(*args, **kwargs)
        return call

    methods = set(dir(duckdb.DuckDBPyConnection))
    for key, value in list(mod.__dict__.items()):
        if key in methods and callable(value) and not isinstance(value, type) and not key.startswith("_"):
            setattr(mod, key, module_level(key))
    mod.connect, mod.default_connection = connect, default_connection
    return mod


def make_unaudited() -> dict[str, types.ModuleType]:
    """The worker's ``os`` (and ``os.path``), ``atexit``, ``sqlite3`` and, when installed, ``duckdb``."""
    os_mod = _os_module()
    sqlite3 = _sqlite3_module()
    shims = {"os": os_mod, "os.path": _os.path, "atexit": _atexit_module(), "sqlite3": sqlite3,
             "sqlite3.dbapi2": sqlite3}
    duck = _duckdb_module()
    if duck is not None:
        shims["duckdb"] = duck
    return shims
