"""Values crossing between a Python Worker and the runtime, converted as workers-runtime-sdk 1.9.5 converts
them (``workers/rpc.py``: ``python_to_rpc`` on the way out, ``python_from_rpc`` on the way in; workerd's
``src/pyodide/internal/introspection.py`` applies them to every RPC's arguments and result):

- ``None`` goes out as JS ``null`` and comes back as ``None``; a JS object comes back as a ``JsDict`` (a
  ``dict`` whose keys also read as attributes), a JS array as a ``list``, a ``Map`` as a ``dict``;
- a value is copied on the way (structured clone): the callee's changes never reach the caller's object;
- a ``tuple``, ``bytearray`` or an awaitable is refused (``TypeError: ... cannot be sent over RPC``), as
  ``_raise_on_disabled_type`` refuses them; a ``datetime`` travels as a JS ``Date`` and comes back as a
  naive ``datetime`` (``fromtimestamp``); other Python objects cannot be cloned (``DataCloneError``).
"""

from __future__ import annotations

import datetime as _dt
import inspect
from typing import Any

__all__ = ["JsDict", "to_rpc", "from_rpc", "clone", "storable"]

MAX_DEPTH = 200  # nesting a clone follows before refusing: V8's structured clone has a similar stack bound


class JsDict(dict):
    """A JS object as the SDK hands it to Python: a dict whose keys read as attributes (``row.n``)."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = value


class JsDate:
    """A JS ``Date`` in flight (what a ``datetime`` becomes, and ``js.Date.new()``): epoch ms."""

    __slots__ = ("ms",)

    def __init__(self, ms: float) -> None:
        self.ms = ms

    def getTime(self) -> float:
        return self.ms

    valueOf = getTime

    def toISOString(self) -> str:
        if self.ms != self.ms or abs(self.ms) > 8.64e15:
            raise ValueError("RangeError: Invalid time value")  # JavaScript's Invalid Date
        t = _dt.datetime(1970, 1, 1) + _dt.timedelta(milliseconds=self.ms)
        return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(self.ms) % 1000:03d}Z"

    def __repr__(self) -> str:
        return "Date(Invalid Date)" if self.ms != self.ms or abs(self.ms) > 8.64e15 else f"Date({self.toISOString()})"


def _refuse(value: Any) -> TypeError:
    return TypeError(f"{type(value).__name__} cannot be sent over RPC.")


def to_rpc(value: Any, depth: int = 0) -> Any:
    """``python_to_rpc``: the JS value (modelled as plain Python data) ``value`` becomes; raises TypeError
    for what the SDK refuses and for what structured clone cannot copy."""
    if depth > MAX_DEPTH:
        raise TypeError(f"DataCloneError: value nested deeper than {MAX_DEPTH} levels cannot be cloned")
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return value
    if isinstance(value, (tuple, bytearray)):
        raise _refuse(value)
    if inspect.isawaitable(value):
        raise TypeError(f"Awaitable {type(value)} cannot be sent over RPC.")
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, (str, int, float)) or isinstance(k, bool):
                raise TypeError(f"DataCloneError: an object key must be text or a number, got {type(k).__name__}")
            out[str(k)] = to_rpc(v, depth + 1)
        return out
    if isinstance(value, list):
        return [to_rpc(v, depth + 1) for v in value]
    if isinstance(value, (set, frozenset)):
        return {to_rpc(v, depth + 1) for v in value}
    if isinstance(value, _dt.datetime):
        return JsDate(value.timestamp() * 1000)
    if isinstance(value, JsDate):
        return JsDate(value.ms)
    raise TypeError(f"DataCloneError: {type(value).__name__} object could not be cloned "
                    "(send dicts, lists, text, numbers, bools, None or datetimes)")


def from_rpc(value: Any) -> Any:
    """``python_from_rpc``: the Python value a JS value (plain data from ``to_rpc``) arrives as."""
    if isinstance(value, dict):
        return JsDict({k: from_rpc(v) for k, v in value.items()})
    if isinstance(value, list):
        return [from_rpc(v) for v in value]
    if isinstance(value, JsDate):
        return _dt.datetime.fromtimestamp(value.ms / 1000, _dt.timezone.utc).replace(tzinfo=None)
    return value


def clone(value: Any) -> Any:
    """A value sent over RPC as the receiver gets it: ``from_rpc(to_rpc(value))``."""
    return from_rpc(to_rpc(value))


def storable(key: str, value: Any) -> Any:
    """What ``storage.put(key, value)`` keeps: JSON-shaped data (the journal's and alarmkit's KV format).
    Raises TypeError naming the key for a value the simulation's storage cannot hold."""
    js = to_rpc(value)

    def check(v: Any) -> Any:
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if isinstance(v, dict):
            return {k: check(x) for k, x in v.items()}
        if isinstance(v, list):
            return [check(x) for x in v]
        if isinstance(v, JsDate):
            return v.ms
        raise TypeError(f"storage.put({key!r}, ...): alarmkit keeps JSON-shaped values (dicts, lists, text, numbers, "
                        f"bools, None); a {type(v).__name__} inside is not one (store it as a list or text)")

    return check(js)
