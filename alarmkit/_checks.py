"""Values checked where they enter: virtual times and names.

A time that reaches the journal must fit its BIGINT columns, and a name must be text DuckDB can
store; a bad one found only at the flush would cost the batch. So every public way in (``set_alarm``,
``run(until=)``, ``advance``, ``call(limit=)``, ``sleep``, ``restart``, fault plans, profiles,
object and namespace names) refuses it at once, naming the value and the range.
"""

from __future__ import annotations

import operator
from typing import Any

from .errors import InvalidValue

__all__ = ["MAX_MS", "RANGE", "time_ms", "text", "shown"]

# JavaScript's safe integers end at 2**53: every time a Durable Object can hold is an int of ms in 0..2**53
MAX_MS = 2**53
RANGE = "an int of ms in 0..2**53 (9,007,199,254,740,992, JavaScript's largest safe integer)"


def time_ms(what: str, value: Any, lo: int = 0) -> int:
    """``value`` if it is an int in ``lo..MAX_MS``; else ``InvalidValue`` naming ``what``."""
    if value.__class__ is int and lo <= value <= MAX_MS:
        return value
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):  # ints, numpy's too; not floats
        raise InvalidValue(f"{what} must be {RANGE}, got {type(value).__name__} {shown(value)}")
    value = operator.index(value)
    if value < lo:
        raise InvalidValue(f"{what} must be {RANGE}{f' and >= {lo:,}' if lo else ''}, got {value:,}")
    if value > MAX_MS:
        raise InvalidValue(f"{what} must be {RANGE}, got {shown(value)}")
    return int(value)  # a plain int in the journal, whatever kind of int it was


def text(what: str, value: Any) -> str:
    """``value`` if it is a non-empty str that UTF-8 can encode (no lone surrogates such as "\\ud800")."""
    if value.__class__ is str and value and (value.isascii() or _encodable(value)):
        return value
    if not isinstance(value, str) or not value:
        raise InvalidValue(f"{what} must be a non-empty string, got {value!r}")
    if not _encodable(value):
        bad = next(i for i, c in enumerate(value) if 0xD800 <= ord(c) <= 0xDFFF)
        raise InvalidValue(
            f"{what} must be valid text, got {value!r}: a lone surrogate {value[bad]!r} at position {bad} "
            "cannot be stored; decode bytes with errors='replace' or pick another name"
        )
    return str(value)


def shown(value: Any) -> str:
    """A value for a message: ints with separators, a huge one by its size."""
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}" if value.bit_length() < 128 else f"an int of {value.bit_length()} bits"
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


def _encodable(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
