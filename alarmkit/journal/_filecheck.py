"""Whether a file may be opened as a journal before DuckDB sees it: a file that is not DuckDB's, or a
write-ahead log beside it that is not DuckDB's, is someone else's and left alone.

A file whose creation was cut short before DuckDB wrote its headers is recognised (``_cut_short``):
DuckDB creates a new database file empty, locks it, then writes three 4,096-byte headers one by one
(the file's, then two of the database's; traced 2026-12-05), so a kill -9 while a journal is created can
leave 0, 4,096 or 8,192 bytes, which DuckDB refuses to open ("not a valid DuckDB database", "Could not
read enough bytes"); every later command called it "not an alarmkit journal" (seen as a 0-byte j4.duckdb
in tests/journal/test_journal_creation.py under load). Such a file holds nothing: opened for writing it is
made again (removed under a lock, so a process still creating it is never cut off), opened read-only it
is refused as a journal whose creation was cut short. An empty file is a new journal, as before.
"""

from __future__ import annotations

import os

from ..errors import AlarmkitError

_HEADERS = 3 * 4096  # what DuckDB writes before a new database file can be opened

__all__ = ["check_duckdb_file"]

_KNOWN_HEADERS = ((b"SQLite format 3\x00", "a SQLite database"), (b"PAR1", "a Parquet file"), (b"PK\x03\x04", "a zip file"))


def _head(p, n: int) -> bytes:
    """The first ``n`` bytes of ``p`` (none when it cannot be read)."""
    try:
        with open(p, "rb") as f:
            return f.read(n)
    except OSError:
        return b""


def _cut_short(p, head: bytes) -> int | None:
    """The size of ``p`` when it is a database file DuckDB had not finished creating (see the module's
    docstring: empty, or DuckDB's file header and at most one of the two database headers), else None."""
    try:
        size = p.stat().st_size
    except OSError:
        return None
    if size == 0 or (size in (4096, 8192) and head[8:12] == b"DUCK"):
        return size
    return None


def _make_again(p, size: int, read_only: bool) -> None:
    """A file ``_cut_short`` found: refused read-only; otherwise removed under a shared lock (it conflicts
    with DuckDB's write lock: a process that holds that is still creating the file, and is left alone, and
    one that comes while we hold ours is refused, not cut off), so DuckDB makes it anew."""
    where = str(p)
    if read_only:
        raise AlarmkitError(f"{where!r} is an alarmkit journal whose creation was cut short before DuckDB wrote its "
                            f"headers ({size:,} of {_HEADERS:,} bytes, no tables) or an empty file: nothing to read; "
                            f"open it once for writing to make it a journal, e.g. `alarmkit run SCENARIO --db {where}`, "
                            "or pass another journal")
    import fcntl

    try:
        f = open(p, "rb")  # read only: a shared lock needs no more, and conflicts with DuckDB's write lock
    except OSError:
        return  # gone or unreadable: DuckDB says what it finds
    with f:
        try:
            fcntl.lockf(f.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return  # another process holds it: DuckDB names the holder
        real = os.path.realpath(p)  # a symlink is the user's: the file it names is made again, through it
        try:
            if os.fstat(f.fileno()).st_size == size and os.path.samestat(os.fstat(f.fileno()), os.stat(real)):
                os.unlink(real)
        except FileNotFoundError:
            return  # another process made it again first: DuckDB opens (or names the holder of) its file


def check_duckdb_file(p, read_only: bool | None = None) -> None:
    """An existing file that does not start as a DuckDB database ("DUCK" at byte 8) is someone else's:
    refused before DuckDB sees it (DuckDB would open a SQLite file by downloading an extension, and read
    a JSON or CSV file as a table). An empty file is a new journal. Raises AlarmkitError naming the file.
    ``read_only``: given (``Journal``), a file whose creation was cut short is refused or made again."""
    wal = p.with_name(p.name + ".wal")
    if wal.exists():
        if not p.exists() or (p.is_file() and p.stat().st_size == 0):  # a WAL with no journal
            raise AlarmkitError(f"{str(wal)!r} lies beside the new journal {str(p)!r}: DuckDB would replay or delete "
                                "it as the journal's write-ahead log; alarmkit leaves it alone: move it, or pass another path")
        # DuckDB replays a WAL beside its database and deletes one it cannot read: a file that does not
        # open as DuckDB's (its first entry, the WAL version: field 100, type 98) is someone else's
        if p.is_file() and wal.is_file() and wal.stat().st_size > 0 and _head(wal, 3) != b"d\x00b":
            raise AlarmkitError(f"{str(wal)!r} lies beside the journal {str(p)!r} and is not a DuckDB write-ahead log: "
                                "DuckDB would delete it; alarmkit leaves it alone: move it, then run again")
    if not p.exists():
        return
    if not p.is_file():  # a FIFO would block the read below for ever; a device is no journal either
        raise AlarmkitError(f"{str(p)!r} is not a regular file (a pipe, a device or a socket), so not an alarmkit "
                            "journal; pass a file path, e.g. --db journal.duckdb")
    try:
        with open(p, "rb") as f:
            head = f.read(16)
    except FileNotFoundError:
        return
    except OSError as err:
        raise AlarmkitError(f"cannot read journal file {str(p)!r}: {err.strerror or err}; check the path or pass another") from None
    if read_only is not None and not wal.exists():
        size = _cut_short(p, head)
        if size is not None:
            _make_again(p, size, read_only)
            return
    if not head or head[8:12] == b"DUCK":
        return
    kind = next((name for magic, name in _KNOWN_HEADERS if head.startswith(magic)), None)
    if kind is None:
        kind = "text" if all(32 <= b < 127 or b in (9, 10, 13) for b in head) else ""
    raise AlarmkitError(f"{str(p)!r} is not an alarmkit journal (not a DuckDB file{': ' * bool(kind)}{kind}); alarmkit "
                        "leaves it alone: pass a new path or a journal file, e.g. --db journal.duckdb")
