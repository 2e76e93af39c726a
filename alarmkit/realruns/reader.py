"""Streaming a trace file: one JSON value at a time, never the whole file in memory.

A trace file is JSON Lines, one JSON array, or lines holding arrays: a sequence of top-level JSON
values separated by whitespace. :func:`iter_values` walks it in 1 MiB chunks: an object is decoded
on its own, a top-level array is entered and its elements decoded one by one, so memory is bounded
by the largest single record (``MAX_RECORD_CHARS``), not by the file.

Everything a hostile file can hold is refused with one ``AlarmkitError`` naming the file, the line
and the way out: bytes that are not UTF-8 (Latin-1, UTF-16, binary), NaN and Infinity (JSON has
neither; Python's decoder would take them), nesting deeper than ``MAX_DEPTH``, a record larger than
``MAX_RECORD_CHARS``, anything other than objects at record level.
"""

from __future__ import annotations

import codecs
import hashlib
import json
from pathlib import Path
from typing import Any, BinaryIO, Iterator

from ..errors import AlarmkitError

__all__ = ["iter_values", "TraceFile", "MAX_RECORD_CHARS", "MAX_DEPTH"]

CHUNK = 1 << 20
MAX_RECORD_CHARS = 64 << 20  # one record (a TraceItem with its logs) larger than this is refused
MAX_DEPTH = 64  # workerd's TraceItems nest about 6 deep; tail.js flattens past 8
_WS = " \t\r\n"


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON (times and counts must be finite numbers)")


_DECODER = json.JSONDecoder(parse_constant=_no_constant)


class TraceFile:
    """An open trace file read as a stream; ``sha256`` and ``bytes_read`` grow as it is read."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.name = self.path.name
        self.sha = hashlib.sha256()
        self.bytes_read = 0
        self.line = 1  # the line of the buffer's first character
        self._cache = (0, 1, 1)  # (position, its line, self.line then) of the last _line answer

    def _chunks(self, f: BinaryIO) -> Iterator[str]:
        head = f.read(CHUNK)  # the whole first chunk: a NUL anywhere in it says binary before a bad byte does
        if head[:2] in (b"\xff\xfe", b"\xfe\xff"):
            raise AlarmkitError(f"{self.name} is UTF-16 text (a byte-order mark); alarmkit reads UTF-8 JSON: "
                                f"convert it, e.g. iconv -f UTF-16 -t UTF-8 {self.name} > trace.jsonl")
        dec = codecs.getincrementaldecoder("utf-8")("strict")
        raw = head
        if raw.startswith(codecs.BOM_UTF8):
            raw = raw[3:]
        offset = 0
        while True:
            self.sha.update(raw)
            self.bytes_read += len(raw)
            if b"\x00" in raw:
                at = offset + raw.index(b"\x00")
                raise AlarmkitError(f"{self.name} is not a text file (a NUL byte at byte {at}: binary, or UTF-16 "
                                    "without a byte-order mark); pass a JSON Lines or JSON array file in UTF-8")
            try:
                text = dec.decode(raw, final=not raw)
            except UnicodeDecodeError as err:
                bad = raw[err.start:err.start + 1]
                raise AlarmkitError(f"{self.name} is not UTF-8 text (byte 0x{bad.hex() or '??'} near byte "
                                    f"{offset + err.start}; Latin-1 or another encoding?); convert it to UTF-8, "
                                    f"e.g. iconv -f LATIN1 -t UTF-8 {self.name} > trace.jsonl") from None
            offset += len(raw)
            if text:
                yield text
            if not raw:
                return
            raw = f.read(CHUNK)

    def values(self) -> Iterator[tuple[int, Any]]:
        """Every record-level JSON value with the line it starts on (top-level arrays are entered)."""
        with open(self.path, "rb") as f:
            yield from self._values(self._chunks(f))

    def _values(self, chunks: Iterator[str]) -> Iterator[tuple[int, Any]]:
        buf, pos, eof = "", 0, False
        depth = 0  # 1 inside a top-level array

        def more() -> bool:
            nonlocal buf, pos, eof
            if eof:
                return False
            try:
                nxt = next(chunks)
            except StopIteration:
                eof = True
                return False
            self.line += buf.count("\n", 0, pos)
            buf, pos = buf[pos:] + nxt, 0
            self._cache = (0, self.line, self.line)
            return True

        while True:
            while True:  # skip whitespace (and the commas between array elements)
                while pos < len(buf) and buf[pos] in _WS:
                    pos += 1
                if pos < len(buf) or not more():
                    break
            if pos >= len(buf):
                if depth:
                    raise AlarmkitError(f"{self.name}:{self._line(buf, pos)} is not JSON (the array is not closed); "
                                        "the file must be JSON Lines or one JSON array")
                return
            c = buf[pos]
            if depth and c == "]":
                depth, pos = 0, pos + 1
                continue
            if not depth and c == "[":
                depth, pos = 1, pos + 1
                continue
            while True:
                try:
                    value, end = _DECODER.raw_decode(buf, pos)
                except RecursionError:
                    raise AlarmkitError(f"{self.name}:{self._line(buf, pos)} nests too deep for a trace record; "
                                        "pass trace events as produced by workerd or Logpush") from None
                except ValueError as err:
                    at_end = getattr(err, "pos", 0) >= len(buf) - 1 or str(err).startswith("Unterminated string")
                    # a record cut by the read boundary can fail anywhere in it ("fal" of false, "1e" of 1e3),
                    # not only at the buffer's end: read on while the file has more and the record may be whole
                    if len(buf) - pos < MAX_RECORD_CHARS and more():
                        continue
                    if at_end and len(buf) - pos >= MAX_RECORD_CHARS:
                        raise AlarmkitError(f"{self.name}:{self._line(buf, pos)}: one record is over "
                                            f"{MAX_RECORD_CHARS >> 20} MiB; a trace event is far smaller: "
                                            "split the file into records") from None
                    msg = getattr(err, "msg", str(err))
                    raise AlarmkitError(f"{self.name}:{self._line(buf, getattr(err, 'pos', pos))} is not JSON "
                                        f"({msg}); the file must be JSON Lines or one JSON array") from None
                break
            line = self._line(buf, pos)
            if _depth(value) > MAX_DEPTH:
                raise AlarmkitError(f"{self.name}:{line} nests deeper than {MAX_DEPTH} levels; a trace record "
                                    "is a few levels deep: pass trace events as produced by workerd or Logpush")
            pos = end
            if depth:
                while pos < len(buf) and buf[pos] in _WS:
                    pos += 1
                if pos >= len(buf):
                    more()
                    while pos < len(buf) and buf[pos] in _WS:
                        pos += 1
                if pos < len(buf) and buf[pos] == ",":
                    pos += 1
                elif not (pos < len(buf) and buf[pos] == "]"):
                    raise AlarmkitError(f"{self.name}:{self._line(buf, pos)} is not JSON (expecting ',' or ']' "
                                        "in the array); the file must be JSON Lines or one JSON array")
            if isinstance(value, list) and not depth:
                for item in value:
                    yield line, item
            else:
                yield line, value
            if pos > CHUNK:  # drop what is read, counting its lines
                self.line += buf.count("\n", 0, pos)
                buf, pos = buf[pos:], 0
                self._cache = (0, self.line, self.line)

    def _line(self, buf: str, pos: int) -> int:
        # counted on from the last answer (records come in order): a count from the buffer's start
        # each time made an 80 MB file take 6x longer to read
        pos = max(0, min(pos, len(buf)))
        at, line, base = self._cache
        if base != self.line or pos < at:
            at, line = 0, self.line
        line += buf.count("\n", at, pos)
        self._cache = (pos, line, self.line)
        return line


def _depth(v: Any) -> int:
    best, stack = 0, [(v, 1)]
    while stack:
        x, d = stack.pop()
        if d > best:
            best = d
            if best > MAX_DEPTH:
                return best
        if isinstance(x, dict):
            stack.extend((y, d + 1) for y in x.values() if isinstance(y, (dict, list)))
        elif isinstance(x, list):
            stack.extend((y, d + 1) for y in x if isinstance(y, (dict, list)))
    return best


def iter_values(path: str | Path) -> Iterator[tuple[int, Any]]:
    """``TraceFile(path).values()``: (line, value) for each record-level JSON value."""
    return TraceFile(path).values()
