"""SQL's clock and randomness from the simulation: ``unixepoch()``, ``datetime('now')``, ``CURRENT_TIMESTAMP``,
``random()``, ``randomblob(n)`` and the other date functions read the virtual clock and a seeded source, so
one seed gives one journal (the Agents SDK and Actors write ``DEFAULT (unixepoch())``).

SQLite computes 'now' through its VFS (``xCurrentTime``), which Python cannot replace; it does let a
connection define functions that shadow the built-in ones, and the keywords ``CURRENT_TIMESTAMP``,
``CURRENT_DATE`` and ``CURRENT_TIME`` are calls of functions of those names. So each connection gets
``date``, ``time``, ``datetime``, ``julianday``, ``unixepoch``, ``strftime`` and the three keywords: a call
whose time value is 'now' (or absent) is answered by SQLite's own function, on a scratch connection, with
the virtual time in its place as a Julian day number (exact to the ms); any other call goes there
unchanged; ``timediff`` (SQLite 3.43+) likewise where this Python's SQLite has it, and ``unixepoch('subsec')``
(3.42+) is 'now'. Not covered (docs/runtime.md): the ``'localtime'`` modifier reads the machine's time zone
(workerd runs in UTC).

On workerd 'now' is the machine's real clock (its VFS is the native one): the ``sql_time`` probe records
that it reads as ``Date.now()`` to the second there, as the virtual clock does here.
"""

from __future__ import annotations

import random
import sqlite3
import threading
from typing import Any, Callable

__all__ = ["install"]

_EPOCH_JD = 2440587.5  # the Julian day number of 1970-01-01T00:00:00Z
_MAX_BLOB = 16 * 1024 * 1024  # workerd's SQLite: SQLITE_MAX_ALLOCATION_SIZE=16777216 (build/BUILD.sqlite3)
# name -> position of the time value among the arguments
_DATE_FUNCS = {"date": 0, "time": 0, "datetime": 0, "julianday": 0, "unixepoch": 0, "strftime": 1}
_KEYWORDS = {"current_timestamp": "datetime", "current_date": "date", "current_time": "time"}
_NUMERIC_MODS = ("unixepoch", "auto", "julianday")  # only valid after a numeric time value: after 'now', NULL
_SUBSEC = ("subsec", "subsecond")

_local = threading.local()
_TIMEDIFF: list = [None]  # does this SQLite have timediff() (3.43+)? Asked once


def _builtin(name: str, args: tuple) -> Any:
    """SQLite's own ``name(*args)``, on this thread's scratch connection (no functions shadowed there)."""
    conn = getattr(_local, "conn", None)
    if conn is None:
        conn = _local.conn = sqlite3.connect(":memory:", check_same_thread=False)
    marks = ", ".join("?" * len(args))
    return conn.execute(f"SELECT {name}({marks})", args).fetchone()[0]


def _date_func(name: str, clock: Callable[[], int]) -> Callable[..., Any]:
    at = _DATE_FUNCS[name]

    def fn(*args: Any) -> Any:
        if len(args) > at:
            value = args[at]
            word = value.lower() if isinstance(value, str) else None
            if word in _SUBSEC:  # SQLite 3.42+: unixepoch('subsec') is 'now' to the ms
                return _builtin(name, args[:at] + (_EPOCH_JD + clock() / 86_400_000, value) + args[at + 1:])
            if word != "now":
                return _builtin(name, args)
            mods = args[at + 1:]
            if mods and isinstance(mods[0], str) and mods[0].strip().lower() in _NUMERIC_MODS:
                return None
        elif at == 1 and not args:
            return _builtin(name, args)  # strftime() without a format: SQLite's answer (NULL)
        else:
            mods = ()
        jd = _EPOCH_JD + clock() / 86_400_000
        return _builtin(name, args[:at] + (jd,) + tuple(mods))

    return fn


def _timediff(clock: Callable[[], int]) -> Callable[..., Any]:
    """``timediff(a, b)`` (SQLite 3.43+): either time value may be 'now'."""
    def fn(*args: Any) -> Any:
        jd = _EPOCH_JD + clock() / 86_400_000
        return _builtin("timediff", tuple(jd if isinstance(a, str) and a.lower() == "now" else a for a in args))

    return fn


def _has_timediff() -> bool:
    try:
        _builtin("timediff", ("2026-01-01", "2026-01-01"))
    except sqlite3.OperationalError:
        return False
    return True


def _keyword(name: str, clock: Callable[[], int]) -> Callable[[], Any]:
    func = _KEYWORDS[name]
    return lambda: _builtin(func, (_EPOCH_JD + clock() / 86_400_000,))


def install(conn: sqlite3.Connection, clock: Callable[[], int], rng: Callable[[], random.Random]) -> None:
    """Shadow the date functions, the three keywords, ``random()`` and ``randomblob()`` on ``conn``:
    ``clock()`` is the virtual epoch ms, ``rng()`` the object's seeded source (made on first use)."""
    for name in _DATE_FUNCS:
        conn.create_function(name, -1, _date_func(name, clock))
    for name in _KEYWORDS:
        conn.create_function(name, 0, _keyword(name, clock))
    if _TIMEDIFF[0] is None:
        _TIMEDIFF[0] = _has_timediff()
    if _TIMEDIFF[0]:
        conn.create_function("timediff", 2, _timediff(clock))

    def sql_random() -> int:
        return rng().getrandbits(64) - 2**63  # SQLite's: a signed 64-bit integer

    def sql_randomblob(n: Any) -> bytes:
        try:
            n = int(n)
        except (TypeError, ValueError):
            n = 1
        if n > _MAX_BLOB:
            raise ValueError(f"randomblob({n}) is past workerd's 16 MiB allocation limit")
        return rng().randbytes(max(n, 1))

    conn.create_function("random", 0, sql_random)
    conn.create_function("randomblob", 1, sql_randomblob)
