"""workerd's rules for the SQL an object runs (``ctx.storage.sql.exec``), in one place: its authorizer
(which statements, tables, pragmas and functions are refused), the texts of its SQL errors, and how it
splits a string of several statements.

Source: workerd ``src/workerd/util/sqlite.c++`` (``SqliteDatabase::isAuthorized``, ``ALLOWED_PRAGMAS``,
``ALLOWED_SQLITE_FUNCTIONS``, ``dbErrorMessage``) and ``src/workerd/api/sql.c++`` (``SqlStorageRegulator``:
names starting ``_cf_`` are reserved, transactions are refused naming ``state.storage.transaction()``).
Recorded on workerd 1.20261117.1 by the ``sql_auth`` and ``sql_errors`` probes (``calibrate/sql_probes.py``).

The authorizer is Python's ``Connection.set_authorizer``: installed once per connection and active only
while the object's own statement is prepared (``Authorizer.active``); alarmkit's own statements (KV,
transactions) run with it off, as workerd's ``TRUSTED`` regulator does. Every such statement ends with
``INTERNAL`` so that Python's statement cache (keyed by the SQL text) never hands one of them, prepared
unchecked, to the object's code: a user text ending so gets a space added (a different cache key).
"""

from __future__ import annotations

import ctypes
import functools
import re
import sqlite3
import sys
from typing import Optional

__all__ = ["Authorizer", "INTERNAL", "LIMITS", "set_limits", "TX_REFUSED", "NO_STATEMENT", "WRONG_BINDINGS", "split_statements",
           "workerd_text"]

INTERNAL = " -- alarmkit"  # the end of every statement alarmkit runs for itself (see the module docstring)

# SqlStorageRegulator::allowTransactions (src/workerd/api/sql.c++), thrown as a plain Error
TX_REFUSED = ("To execute a transaction, please use the state.storage.transaction() or "
              "state.storage.transactionSync() APIs instead of the SQL BEGIN TRANSACTION or SAVEPOINT "
              "statements. The JavaScript API is safer because it will automatically roll back on "
              "exceptions, and because it interacts correctly with Durable Objects' automatic atomic "
              "write coalescing.")
NO_STATEMENT = "SQL code did not contain a statement."  # SqliteDatabase::prepareSql
WRONG_BINDINGS = "Wrong number of parameter bindings for SQL query."  # SqliteDatabase::Query::bindAll

# sqlite3.h action codes
(_CREATE_INDEX, _CREATE_TABLE, _CREATE_TEMP_INDEX, _CREATE_TEMP_TABLE, _CREATE_TEMP_TRIGGER, _CREATE_TEMP_VIEW,
 _CREATE_TRIGGER, _CREATE_VIEW, _DELETE, _DROP_INDEX, _DROP_TABLE, _DROP_TEMP_INDEX, _DROP_TEMP_TABLE,
 _DROP_TEMP_TRIGGER, _DROP_TEMP_VIEW, _DROP_TRIGGER, _DROP_VIEW, _INSERT, _PRAGMA, _READ, _SELECT, _TRANSACTION,
 _UPDATE, _ATTACH, _DETACH, _ALTER_TABLE, _REINDEX, _ANALYZE, _CREATE_VTABLE, _DROP_VTABLE, _FUNCTION, _SAVEPOINT,
 _RECURSIVE) = range(1, 34)
_OK, _DENY = sqlite3.SQLITE_OK, sqlite3.SQLITE_DENY

ALLOWED_FUNCTIONS = frozenset("""
abs changes char coalesce concat concat_ws format glob hex ifnull iif instr last_insert_rowid length like likelihood
likely load_extension lower ltrim max_scalar min_scalar nullif octet_length printf quote random randomblob replace
round rtrim sign soundex substr substring total_changes trim typeof unhex unicode unlikely upper zeroblob
date time datetime julianday unixepoch strftime timediff current_date current_time current_timestamp
avg count group_concat max min string_agg sum total
row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value last_value nth_value
acos acosh asin asinh atan atan2 atanh ceil ceiling cos cosh degrees exp floor ln log log10 log2 mod pi pow power
radians sin sinh sqrt tan tanh trunc
json jsonb json_array jsonb_array json_array_length json_extract jsonb_extract -> ->> json_insert jsonb_insert
json_object jsonb_object json_patch jsonb_patch json_remove jsonb_remove json_replace jsonb_replace json_set jsonb_set
json_type json_valid json_quote json_group_array jsonb_group_array json_group_object jsonb_group_object json_each
json_tree match highlight bm25 snippet rtreecheck
sqlite_rename_column sqlite_rename_table sqlite_rename_test sqlite_drop_column sqlite_rename_quotefix
""".split())

# ALLOWED_PRAGMAS: name -> signature (plus table_list, table_info and table_xinfo, checked first)
_PRAGMAS = {
    "data_version": "none", "page_size": "none",
    **dict.fromkeys(("case_sensitive_like", "foreign_keys", "defer_foreign_keys", "ignore_check_constraints",
                     "legacy_alter_table", "recursive_triggers", "reverse_unordered_selects"), "bool"),
    "foreign_key_check": "optional_name", "foreign_key_list": "name", "index_info": "name", "index_list": "name",
    "index_xinfo": "name", "quick_check": "number_or_name", "optimize": "number",
}
_BOOLS = ("true", "false", "yes", "no", "on", "off", "1", "0")
_VTABLES = ("fts5", "fts5vocab", "rtree", "rtree_i32")
# workerd's patched SQLite passes a RENAME TO's new name to the authorizer; stock SQLite does not: read it here
_RENAME_TO = re.compile(r"^\s*ALTER\s+TABLE\s+.+?\s+RENAME\s+TO\s+[\"'`\[]?([^\"'`\]\s;]+)", re.I | re.S)


def allowed_name(name: str) -> bool:
    """``SqlStorageRegulator::isAllowedName``: names starting ``_cf_`` (any case) are workerd's own."""
    return len(name) < 4 or name[:4].lower() != "_cf_"


def _int(text: str, unsigned: bool = False) -> bool:
    try:
        n = int(text)
    except ValueError:
        return False
    return 0 <= n < 2**32 if unsigned else -2**31 <= n < 2**31


def _pragma(name: str, arg: Optional[str]) -> bool:
    if name == "table_list":
        return True
    if name in ("table_info", "table_xinfo"):
        return arg is not None and allowed_name(arg)
    sig = _PRAGMAS.get(name)
    if sig is None:
        return False
    if sig == "none":
        return arg is None
    if arg is None:
        return sig != "name"
    if sig == "bool":
        val = arg[1:-1] if len(arg) >= 2 and arg[0] in "'\"" and arg[-1] == arg[0] else arg
        return any(val.lower().startswith(b) for b in _BOOLS)  # strncasecmp on each word's length, as workerd
    if sig in ("name", "optional_name"):
        return allowed_name(arg)
    if sig == "number":
        return _int(arg)
    return _int(arg, unsigned=True) or allowed_name(arg)  # number_or_name


def authorized(action: int, p1: Optional[str], p2: Optional[str], db: Optional[str], rename_to: Optional[str]) -> bool:
    """``SqliteDatabase::isAuthorized`` for an untrusted statement (transactions are refused before this)."""
    if action in (_ALTER_TABLE, _DETACH):  # SQLite passes the database name first for these two (workerd swaps)
        p1, db = p2, p1
        p2 = rename_to if action == _ALTER_TABLE else None
    if db == "temp":
        return action in (_READ, _UPDATE) and p1 is not None and allowed_name(p1)
    if db is not None and db != "main":
        return False
    if action in (_SELECT, _ANALYZE, _RECURSIVE):
        return True
    if action in (_CREATE_TABLE, _DELETE, _DROP_TABLE, _INSERT, _CREATE_VIEW, _DROP_VIEW, _REINDEX, _READ, _UPDATE):
        return p1 is not None and allowed_name(p1)
    if action == _ALTER_TABLE:
        return p1 is not None and allowed_name(p1) and (p2 is None or allowed_name(p2))
    if action in (_CREATE_INDEX, _DROP_INDEX, _CREATE_TRIGGER, _DROP_TRIGGER):
        return p1 is not None and p2 is not None and allowed_name(p1) and allowed_name(p2)
    if action == _PRAGMA:
        return p1 is not None and _pragma(p1.lower(), p2)
    if action == _FUNCTION:
        return p2 is not None and p2.lower() in ALLOWED_FUNCTIONS
    if action in (_CREATE_VTABLE, _DROP_VTABLE):
        return p2 is not None and p2.lower() in _VTABLES and p1 is not None and allowed_name(p1)
    return False  # ATTACH, DETACH, temp objects, COPY, anything unknown


class Authorizer:
    """The callback ``set_authorizer`` gets. ``start(sql)`` before the object's statement is prepared, ``stop()``
    after; between them every action is judged by workerd's rules. A transaction statement sets ``refused``
    (workerd throws its own Error from inside the authorizer), which the caller raises instead of SQLite's."""

    __slots__ = ("active", "refused", "_rename_to")

    def __init__(self) -> None:
        self.active = False
        self.refused: Optional[str] = None
        self._rename_to: Optional[str] = None

    def start(self, sql: str) -> None:
        self.active, self.refused = True, None
        m = _RENAME_TO.match(sql) if sql[:5].lower() == "alter" else None  # (statements start after whitespace)
        self._rename_to = m.group(1) if m else None

    def stop(self) -> None:
        self.active = False

    def __call__(self, action: int, p1: Optional[str], p2: Optional[str], db: Optional[str], _src: Optional[str]) -> int:
        if not self.active:
            return _OK
        if action in (_TRANSACTION, _SAVEPOINT):
            self.refused = TX_REFUSED
            return _DENY
        return _OK if authorized(action, p1, p2, db, self._rename_to) else _DENY


# SqliteDatabase::setupSecurity's sqlite3_limit calls. Not SQLITE_LIMIT_LENGTH (4 MiB there): the sql_errors
# probe found it not in force on workerd 1.20261117.1 (hex(zeroblob(2097153)), 4,194,306 bytes, was returned)
LIMITS = {
    "SQLITE_LIMIT_SQL_LENGTH": 100_000, "SQLITE_LIMIT_COLUMN": 100,
    "SQLITE_LIMIT_EXPR_DEPTH": 100, "SQLITE_LIMIT_COMPOUND_SELECT": 5, "SQLITE_LIMIT_VDBE_OP": 25_000,
    "SQLITE_LIMIT_FUNCTION_ARG": 127, "SQLITE_LIMIT_ATTACHED": 0, "SQLITE_LIMIT_LIKE_PATTERN_LENGTH": 50,
    "SQLITE_LIMIT_VARIABLE_NUMBER": 100, "SQLITE_LIMIT_TRIGGER_DEPTH": 10, "SQLITE_LIMIT_WORKER_THREADS": 0,
}


def set_limits(conn: sqlite3.Connection) -> None:
    """workerd's limits on ``conn`` (each where this Python's sqlite3 names it)."""
    for name, value in LIMITS.items():
        category = getattr(sqlite3, name, None)
        if category is not None:
            conn.setlimit(category, value)


# -- error texts ----------------------------------------------------------------------------------------------
_PRIMARY = ("SQLITE_OK SQLITE_ERROR SQLITE_INTERNAL SQLITE_PERM SQLITE_ABORT SQLITE_BUSY SQLITE_LOCKED SQLITE_NOMEM "
            "SQLITE_READONLY SQLITE_INTERRUPT SQLITE_IOERR SQLITE_CORRUPT SQLITE_NOTFOUND SQLITE_FULL SQLITE_CANTOPEN "
            "SQLITE_PROTOCOL SQLITE_EMPTY SQLITE_SCHEMA SQLITE_TOOBIG SQLITE_CONSTRAINT SQLITE_MISMATCH SQLITE_MISUSE "
            "SQLITE_NOLFS SQLITE_AUTH SQLITE_FORMAT SQLITE_RANGE SQLITE_NOTADB SQLITE_NOTICE SQLITE_WARNING").split()


class _Offset:
    """``sqlite3_error_offset`` (SQLite 3.38+), which Python's sqlite3 does not expose: called through ctypes on
    the connection's ``sqlite3*`` (CPython's ``pysqlite_Connection`` holds it first after the object header).
    Checked once on a scratch connection; where the check fails (another Python, an older SQLite) no offset
    is given, and the texts lack workerd's `` at offset N`` part."""

    def __init__(self) -> None:
        self.lib = None
        try:
            import _sqlite3

            if sys.implementation.name != "cpython":
                return
            lib = ctypes.PyDLL(_sqlite3.__file__)  # the GIL stays held: the authorizer may be called back
            lib.sqlite3_prepare_v2.restype = ctypes.c_int
            lib.sqlite3_prepare_v2.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int,
                                               ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
            lib.sqlite3_finalize.argtypes = [ctypes.c_void_p]
            lib.sqlite3_error_offset.restype = ctypes.c_int
            lib.sqlite3_error_offset.argtypes = [ctypes.c_void_p]
            lib.sqlite3_errmsg.restype = ctypes.c_char_p
            lib.sqlite3_errmsg.argtypes = [ctypes.c_void_p]
            self.lib = lib
            probe, ok = sqlite3.connect(":memory:"), False
            try:
                probe.execute("SELECT nope_probe FROM sqlite_master")
            except sqlite3.Error:
                ok = self._errmsg(probe) == "no such column: nope_probe" and self.offset(probe, "no such column: nope_probe") == 7
            probe.close()
            if not ok:
                self.lib = None
        except (ImportError, OSError, AttributeError, ValueError):
            self.lib = None

    @staticmethod
    def _handle(conn: sqlite3.Connection) -> Optional[int]:
        return ctypes.c_void_p.from_address(id(conn) + object.__basicsize__).value

    def _errmsg(self, conn: sqlite3.Connection) -> Optional[str]:
        handle = self._handle(conn)
        raw = self.lib.sqlite3_errmsg(handle) if handle else None
        return None if raw is None else raw.decode("utf-8", "replace")

    def offset(self, conn: sqlite3.Connection, message: str, stmt: Optional[str] = None) -> int:
        """The offset of the error SQLite holds for ``conn``, or -1 (none, or it is not ``message``'s). A
        statement Python's cache held is re-prepared by SQLite inside its step, which loses the offset: then
        ``stmt`` is prepared once more (never stepped) to find it, as workerd's first prepare would."""
        if self.lib is None:
            return -1
        handle = self._handle(conn)
        at = self.lib.sqlite3_error_offset(handle) if self._errmsg(conn) == message else -1
        if at < 0 and stmt is not None:
            out = ctypes.c_void_p()
            data = stmt.encode("utf-8", "surrogatepass")
            rc = self.lib.sqlite3_prepare_v2(handle, data, len(data), ctypes.byref(out), None)
            if out.value:
                self.lib.sqlite3_finalize(out)
            if rc != 0 and self._errmsg(conn) == message:
                at = self.lib.sqlite3_error_offset(handle)
        return at


_OFFSET: Optional[_Offset] = None


def workerd_text(err: sqlite3.Error, conn: Optional[sqlite3.Connection], stmt: Optional[str] = None) -> str:
    """``dbErrorMessage``: SQLite's message, `` at offset N`` where SQLite has one, ``: SQLITE_X`` (the primary
    code's name) and `` (extended: SQLITE_X_Y)`` where the extended code differs. Read at once after the error."""
    global _OFFSET
    msg = str(err)
    code = getattr(err, "sqlite_errorcode", None)
    if code is None:
        return msg
    if conn is not None:
        if _OFFSET is None:
            _OFFSET = _Offset()
        at = _OFFSET.offset(conn, msg, stmt if code == 1 else None)  # SQLITE_ERROR: a parse error may have one
        if at >= 0:
            msg += f" at offset {at}"
    primary = code & 0xFF
    msg += f": {_PRIMARY[primary] if primary < len(_PRIMARY) else f'SQLITE_{primary}'}"
    name = getattr(err, "sqlite_errorname", None)
    if code != primary and name and not name.startswith("SQLITE_UNKNOWN"):
        msg += f" (extended: {name})"
    return msg


# -- several statements in one exec -------------------------------------------------------------------------
_TOKENS = re.compile(r"""'(?:[^']|'')*'?|"(?:[^"]|"")*"?|`(?:[^`]|``)*`?|\[[^\]]*\]?|--[^\n]*\n?|/\*.*?(?:\*/|$)|;""", re.S)
_WS = " \t\n\r\v\f"


@functools.lru_cache(maxsize=2048)  # an object runs the same few texts again and again
def split_statements(sql: str) -> tuple[str, ...]:
    """The statements of ``sql`` in order, as workerd prepares them one after another: each starts after the
    whitespace that follows the one before (so an error's offset counts from there); a ``;`` ends a statement
    only where SQLite would (``sqlite3.complete_statement``: not inside a string, a comment or a trigger's
    body). Pieces that hold only comments are not statements; () if none is left."""
    out, start = [], 0
    for m in _TOKENS.finditer(sql):
        if m.group() != ";" or not sqlite3.complete_statement(sql[start:m.end()]):
            continue
        out.append(sql[start:m.end()])
        start = m.end()
        while start < len(sql) and sql[start] in _WS:
            start += 1
    if start < len(sql):
        out.append(sql[start:])
    out = [s.lstrip(_WS) for s in out]
    return tuple(s for s in out if _has_code(s))


def _has_code(stmt: str) -> bool:
    """Anything but whitespace, comments and ``;``."""
    rest = _TOKENS.sub(lambda m: " " if m.group().startswith(("--", "/*", ";")) else m.group(), stmt)
    return bool(rest.strip(_WS))
