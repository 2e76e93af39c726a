"""An object's durable storage: one SQLite database, with implicit transactions.

The writes of one turn commit together (workerd's implicit transactions for SQLite-backed
objects); the runtime calls ``commit()`` when the turn ends and ``rollback()`` when the instance
is reset (``_host``: the turn model). KV lives in the same database, so the two share
transactions, as in workerd's SQLite-backed storage. The object's own SQL meets workerd's authorizer and
error texts (``_sqlrules``) and reads the simulation's clock and seeded randomness (``_sqlclock``).
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import zlib
from collections import OrderedDict
from typing import Any, Callable, Iterator

from ..errors import AlarmkitError, SqlError
from . import _sqlclock
from ._sqlrules import INTERNAL, NO_STATEMENT, WRONG_BINDINGS, Authorizer, set_limits, split_statements, workerd_text

__all__ = ["Database", "Cursor", "SqlError", "ConnectionPool"]

# A runaway query (an endless WITH RECURSIVE) is stopped after this many SQLite virtual-machine steps,
# counted per statement by a progress handler called every _TICK steps (none for a small query).
SQL_STEP_LIMIT_ENV = "ALARMKIT_SQL_STEP_LIMIT"
_TICK = 1_000_000


def sql_step_limit() -> int:
    """SQLite steps one statement may take: 100,000,000 (a few seconds of work), or ``$ALARMKIT_SQL_STEP_LIMIT``."""
    text = os.environ.get(SQL_STEP_LIMIT_ENV, "100000000")
    try:
        value = int(text.replace("_", "").replace(",", ""))
    except ValueError:
        value = 0
    if not _TICK <= value <= 10**15:
        raise AlarmkitError(f"{SQL_STEP_LIMIT_ENV} must be an integer in {_TICK:,}..{10**15:,} (SQLite steps per "
                            f"statement), got {text!r}; unset it for 100,000,000")
    return value


def _runaway(db: Database, sql: str, err: sqlite3.Error) -> SqlError | None:
    """The error a statement SQLite interrupted stands for: the step limit's (a ``SqlError`` naming it), or
    what was raised inside the progress handler, which SQLite swallows (a Ctrl-C arriving mid-query,
    re-raised here), or None for an ordinary SQLite error."""
    if str(err) != "interrupted":  # SQLite's text for a statement its progress handler stopped
        return None
    raised, db._raised = db._raised, None
    if raised is not None:
        raise raised
    if db._ticks * _TICK < sql_step_limit():
        raise KeyboardInterrupt  # raised in the handler before its try: the one thing that can be
    return SqlError(f"the query was stopped after {sql_step_limit():,} SQLite steps (an endless WITH RECURSIVE?): "
                    f"{sql[:200]!r}; bound the query, or raise the limit with {SQL_STEP_LIMIT_ENV}=N")


class ConnectionPool:
    """At most ``size`` databases hold an open SQLite connection (about 15-40 KiB each); the
    least recently used ones are parked as their serialized image, zlib-compressed (a
    lease ledger's 2,048-byte image, four 512-byte pages mostly zeros, parks in 290 bytes; level 1
    costs ~10 us to park and ~3 us to reopen, beside SQLite's own connect; RSS per object at 100k
    leases 4,470 -> 2,511 B with the host's lazy ``starting`` set). Parking never happens inside a
    transaction, so it cannot change what a simulation sees."""

    def __init__(self, size: int = 2048) -> None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise AlarmkitError(f"connection pool size must be a positive int, got {size!r}")
        self.size = size
        self.open: OrderedDict[Database, None] = OrderedDict()

    def touch(self, db: Database) -> None:
        opened = self.open
        if db in opened:
            opened.move_to_end(db)
            return
        opened[db] = None
        tries = len(opened) - self.size
        while tries > 0 and len(opened) > self.size:
            tries -= 1
            old = next(iter(opened))
            if old is not db and old._park():
                del opened[old]
            else:  # mid-transaction: it stays open, and goes to the back of the queue
                opened.move_to_end(old)


class Database:
    """The durable part of one object. Survives eviction and restarts; instances do not."""

    __slots__ = ("_conn", "_image", "_kv_ready", "_pool", "_ticks", "_raised", "_auth", "_clock", "_rng_key", "_rng",
                 "savepoints", "__weakref__")

    def __init__(self, pool: ConnectionPool | None = None, clock: Callable[[], int] | None = None,
                 rng_key: str = "") -> None:
        """``clock()``: the virtual epoch ms SQL's 'now' reads; ``rng_key`` seeds SQL's ``random()`` (the
        simulation's seed and the object's name: one seed, one journal)."""
        self._conn: sqlite3.Connection | None = None
        self._image: bytes | None = None  # the parked database: zlib.compress(conn.serialize(), 1)
        self._kv_ready = False
        self._pool = pool
        self._ticks = 0  # progress-handler calls in the current statement
        self._raised: BaseException | None = None  # what the progress handler caught, for ``_runaway``
        self.savepoints = 0  # explicit transactions open (``_txn.Savepoint``): the turn's commit waits for them
        self._auth = Authorizer()
        self._clock = clock or (lambda: 0)
        self._rng_key = rng_key
        self._rng: random.Random | None = None

    def _random(self) -> random.Random:
        if self._rng is None:
            self._rng = random.Random(f"sql:{self._rng_key}")
        return self._rng

    def _tick(self) -> bool:
        try:
            self._ticks += 1  # reset by ``conn``: every statement starts there
            return self._ticks * _TICK >= sql_step_limit()  # True: SQLite stops the statement ("interrupted")
        except BaseException as err:  # noqa: BLE001 - a Ctrl-C now: SQLite would swallow it, _runaway raises it
            self._raised = err
            return True

    @property
    def conn(self) -> sqlite3.Connection:
        conn = self._conn
        if conn is None:
            conn = self._conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            sql_step_limit()  # a bad $ALARMKIT_SQL_STEP_LIMIT is refused here, not at the first long query
            conn.set_progress_handler(self._tick, _TICK)
            conn.set_authorizer(self._auth)
            set_limits(conn)
            _sqlclock.install(conn, self._clock, self._random)
            # workerd's SQLite is built with SQLITE_DEFAULT_FOREIGN_KEYS=1 (build/BUILD.sqlite3): enforced
            conn.execute("PRAGMA foreign_keys = ON" + INTERNAL)
            if self._image is None:
                conn.execute("PRAGMA page_size=512" + INTERNAL)  # small pages keep many small databases cheap
            else:
                conn.deserialize(zlib.decompress(self._image))
                self._image = None
        if self._pool is not None:
            self._pool.touch(self)
        self._ticks = 0
        return conn

    def _park(self) -> bool:
        conn = self._conn
        if conn is None or conn.in_transaction:
            return False
        self._image = zlib.compress(conn.serialize(), 1)
        conn.close()
        self._conn = None
        return True

    # -- transactions -----------------------------------------------------------------
    def _begin(self) -> None:
        conn = self.conn
        if not conn.in_transaction:
            conn.execute("BEGIN" + INTERNAL)

    def commit(self) -> None:
        conn = self._conn  # a parked database has nothing uncommitted
        if conn is not None and conn.in_transaction and not self.savepoints:
            conn.execute("COMMIT" + INTERNAL)

    def rollback(self) -> None:
        conn = self._conn
        self.savepoints = 0  # a reset ends the open explicit transactions with the implicit one
        if conn is not None and conn.in_transaction:
            conn.execute("ROLLBACK" + INTERNAL)
            self._kv_ready = False  # the rolled-back transaction may be the one that created _cf_KV

    # -- SQL ---------------------------------------------------------------------------
    def exec(self, sql: str, params: tuple) -> Cursor:
        """The object's ``sql.exec``: every statement of ``sql`` in order (the bindings go to the last), under
        workerd's authorizer; the last statement's rows. Errors carry workerd's texts (``_sqlrules``)."""
        if not isinstance(sql, str):
            raise SqlError(f"sql.exec needs an SQL string, got {sql!r}")
        stmts = split_statements(sql)
        if not stmts:
            raise SqlError(NO_STATEMENT)
        self._begin()  # opens the connection (or unparks it) and joins the implicit transaction
        if len(stmts) == 1:
            return self._run(stmts[0], params)
        written = 0
        for stmt in stmts[:-1]:
            written += self._run(stmt, ()).rows_written
        cur = self._run(stmts[-1], params)
        cur.rows_written += written
        return cur

    def _run(self, stmt: str, params: tuple) -> Cursor:
        if stmt.endswith(INTERNAL):
            stmt += " "  # never one of alarmkit's own cached statements (prepared unchecked)
        conn, auth = self._conn, self._auth  # open: exec began the transaction
        self._ticks = 0  # each statement has the whole step limit
        auth.start(stmt)
        try:
            cur = conn.execute(stmt, params)
            cols = [d[0] for d in cur.description] if cur.description else []
            rows = cur.fetchall() if cols else []
        except sqlite3.ProgrammingError as err:
            if "number of bindings" in str(err):
                raise SqlError(WRONG_BINDINGS) from None
            raise SqlError(str(err)) from None
        except sqlite3.Error as err:
            if auth.refused is not None:
                raise SqlError(auth.refused) from None
            raise _runaway(self, stmt, err) or SqlError(workerd_text(err, conn, stmt)) from None
        except OverflowError as err:  # an int SQLite's 64 bits cannot hold
            raise SqlError(f"{err} (in {stmt!r} with params {params!r})") from None
        finally:
            auth.stop()
        return Cursor(cols, rows, cur.rowcount if cur.rowcount > 0 else 0)

    def size(self) -> int:
        """``sql.databaseSize``: (pages - free pages) x page size, as workerd's ``getDatabaseSize``."""
        conn = self.conn
        pages = conn.execute("SELECT (SELECT * FROM pragma_page_count) - (SELECT * FROM pragma_freelist_count)"
                             + INTERNAL).fetchone()[0]
        return pages * conn.execute("PRAGMA page_size" + INTERNAL).fetchone()[0]

    # -- KV ----------------------------------------------------------------------------
    def _kv(self) -> None:
        if not self._kv_ready:
            self._begin()
            self.conn.execute(
                "CREATE TABLE IF NOT EXISTS _cf_KV (key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID" + INTERNAL
            )
            self._kv_ready = True

    def kv_get(self, key: str) -> Any:
        _check_key(key)
        self._kv()
        row = self.conn.execute("SELECT value FROM _cf_KV WHERE key = ?" + INTERNAL, (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def kv_put(self, key: str, value: Any) -> None:
        _check_key(key)
        try:
            text = json.dumps(value)
        except (TypeError, ValueError):
            raise AlarmkitError(
                f"storage.put({key!r}, ...) got a {type(value).__name__}, which is not JSON-serialisable; "
                "store dicts, lists, strings, numbers, bools or None"
            ) from None
        self._kv()
        self._begin()  # a write joins the implicit transaction (without it, autocommit: a crash kept it)
        self.conn.execute("INSERT OR REPLACE INTO _cf_KV (key, value) VALUES (?, ?)" + INTERNAL, (key, text))

    def kv_delete(self, key: str) -> bool:
        _check_key(key)
        self._kv()
        self._begin()
        return self.conn.execute("DELETE FROM _cf_KV WHERE key = ?" + INTERNAL, (key,)).rowcount > 0

    def kv_list(self, prefix: str = "") -> dict[str, Any]:
        self._kv()
        rows = self.conn.execute(
            "SELECT key, value FROM _cf_KV WHERE key >= ? AND key < ? ORDER BY key" + INTERNAL,
            (prefix, prefix + "\U0010ffff"),
        ).fetchall()
        return {k: json.loads(v) for k, v in rows}

    def delete_all(self) -> None:
        """``deleteAll()``: every view and table dropped (KV's ``_cf_KV`` too; indexes and triggers go with their
        tables), in the open transaction, as workerd resets the whole database."""
        self._begin()
        conn = self.conn
        rows = conn.execute("SELECT type, name FROM sqlite_master WHERE type IN ('view', 'table') "
                            "AND name NOT LIKE 'sqlite_%' ORDER BY type = 'table'" + INTERNAL).fetchall()
        for kind, name in rows:
            # IF EXISTS: an fts5 table's shadow tables went with it
            conn.execute(f'DROP {kind.upper()} IF EXISTS "{name.replace(chr(34), chr(34) * 2)}"' + INTERNAL)
        self._kv_ready = False

    def read(self, sql: str, params: tuple = ()) -> list[dict]:
        """Committed rows, for inspection from outside the object (never inside a transaction): one statement,
        trusted as alarmkit's own (``_cf_KV`` can be read), kept apart from the object's cached statements."""
        if not isinstance(sql, str):
            raise SqlError(f"a read needs an SQL string, got {sql!r}")
        conn = self.conn
        try:
            cur = conn.execute(sql + INTERNAL, params)
            cols = [d[0] for d in cur.description] if cur.description else []
            return [dict(zip(cols, r)) for r in cur.fetchall()]
        except sqlite3.ProgrammingError as err:
            raise SqlError(WRONG_BINDINGS if "number of bindings" in str(err) else str(err)) from None
        except sqlite3.Error as err:
            raise _runaway(self, sql, err) or SqlError(workerd_text(err, conn, sql)) from None


def _check_key(key: Any) -> None:
    if not isinstance(key, str):
        raise AlarmkitError(f"storage keys are strings, got {key!r}")


class Cursor:
    """The result of ``sql.exec``: rows as dicts, read eagerly (safe across awaits)."""

    __slots__ = ("column_names", "_rows", "rows_written")

    def __init__(self, cols: list[str], rows: list[tuple], rows_written: int) -> None:
        self.column_names = cols
        self._rows = rows
        self.rows_written = rows_written

    def __iter__(self) -> Iterator[dict]:
        cols = self.column_names
        return (dict(zip(cols, r)) for r in self._rows)

    def to_list(self) -> list[dict]:
        return list(self)

    to_array = to_list  # the JavaScript name

    def raw(self) -> list[tuple]:
        return list(self._rows)

    def one(self) -> dict:
        if len(self._rows) != 1:
            got = "no results" if not self._rows else "multiple results"
            raise SqlError(f"Expected exactly one result from SQL query, but got {got}.")
        return dict(zip(self.column_names, self._rows[0]))

    def __len__(self) -> int:
        return len(self._rows)

    def __repr__(self) -> str:
        return f"<Cursor {len(self._rows)} rows {self.column_names}>"
