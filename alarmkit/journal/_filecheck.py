"""Whether a file may be opened as a journal before DuckDB sees it: a file that is not DuckDB's, or a
write-ahead log beside it that is not DuckDB's, is someone else's and left alone."""

from __future__ import annotations

from ..errors import AlarmkitError

__all__ = ["check_duckdb_file"]

_KNOWN_HEADERS = ((b"SQLite format 3\x00", "a SQLite database"), (b"PAR1", "a Parquet file"), (b"PK\x03\x04", "a zip file"))


def _head(p, n: int) -> bytes:
    """The first ``n`` bytes of ``p`` (none when it cannot be read)."""
    try:
        with open(p, "rb") as f:
            return f.read(n)
    except OSError:
        return b""


def check_duckdb_file(p) -> None:
    """An existing file that does not start as a DuckDB database ("DUCK" at byte 8) is someone else's:
    refused before DuckDB sees it (DuckDB would open a SQLite file by downloading an extension, and read
    a JSON or CSV file as a table). An empty file is a new journal. Raises AlarmkitError naming the file."""
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
    if not head or head[8:12] == b"DUCK":
        return
    kind = next((name for magic, name in _KNOWN_HEADERS if head.startswith(magic)), None)
    if kind is None:
        kind = "text" if all(32 <= b < 127 or b in (9, 10, 13) for b in head) else ""
    raise AlarmkitError(f"{str(p)!r} is not an alarmkit journal (not a DuckDB file{': ' * bool(kind)}{kind}); alarmkit "
                        "leaves it alone: pass a new path or a journal file, e.g. --db journal.duckdb")
