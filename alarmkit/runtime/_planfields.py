"""The parts of a ``FaultPlan`` and the validation of plain values into them.

Every error names the field (``crashes[0].at_await``) and what it allows.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

from .._checks import MAX_MS, text
from .._text import cut, short_repr
from ..errors import AlarmkitError, FaultPlanError, InvalidValue
from .profiles import Latency

# Cloudflare docs (storage API): alarms "can be delayed by up to a minute due to maintenance or failures"
DOCUMENTED_MAX_LATE_MS = 60_000



# -- the parts of a plan -------------------------------------------------------------------------


@dataclass(frozen=True)
class Crash:
    """The process dies when ``task`` suspends for the ``at_await``-th time in its ``invocation``.

    ``task`` is "alarm" (``invocation`` is then the object's alarm() attempt number, the journal's
    ``fire.attempt``), "constructor", "block_concurrency_while" or "rpc:<method>" (the n-th such
    task of the object that reached an await). The writes since the previous await are lost.
    """

    task: str
    invocation: int
    at_await: int
    object: str | None = None


@dataclass(frozen=True)
class EffectThrow:
    """The first ``times`` calls of effect ``effect`` on an object raise ``InjectedError``:
    ``when="after"`` the effect happened first (the seed's lab), ``"before"`` it did not happen."""

    effect: str
    times: int = 1
    when: str = "after"


@dataclass(frozen=True)
class EffectCrash:
    """The process dies right after the ``call``-th call of effect ``effect`` on an object."""

    effect: str
    call: int = 1


@dataclass(frozen=True)
class Evict:
    """At ``at_ms`` the object (every live object if ``object`` is None) is evicted."""

    at_ms: int
    object: str | None = None


@dataclass(frozen=True)
class Restart:
    """At ``at_ms`` the whole runtime goes down for ``downtime_ms``, then reloads its alarms."""

    at_ms: int
    downtime_ms: int = 0


@dataclass(frozen=True)
class ForgetAlarm:
    """At ``at_ms`` the alarm manager loses the object's pending alarm (every object's if ``object``
    is None) while storage keeps its time: ``get_alarm()`` goes on returning it, overdue, and it
    never fires until code sets the alarm again or the runtime restarts. From public threads:
    cloudflare-docs issue 18324 ("getAlarm() was returning a days old alarm time, but it wasn't
    being triggered"), opennextjs-cloudflare issue 929 (a past alarm left in storage; code that arms
    only when none is set never arms again), workerd issue 6396 (the alarm manager forgot an alarm
    that storage still showed). The cause in production is not known; this is its effect."""

    at_ms: int
    object: str | None = None


PARTS = {"crashes": Crash, "effect_throws": EffectThrow, "crash_after_effect": EffectCrash,
          "evictions": Evict, "restarts": Restart, "forgotten_alarms": ForgetAlarm}
INT_LISTS = {
    "handler_throws": "alarm() attempt numbers (1, 2, ...) that throw",
    "uncounted": "alarm() attempt numbers (1, 2, ...) that fail without using up a retry",
    "duplicates": "numbers of successful alarm() runs (1, 2, ...) that are delivered once more",
}
_TASK_KINDS = ("alarm", "constructor", "block_concurrency_while", "rpc:<method>")


# -- validation ------------------------------------------------------------------------------------


def check_name(path: str, value: Any) -> str | None:
    if value is None:
        return value
    try:
        return text(f"fault plan field {path!r}", value)
    except InvalidValue as err:
        raise FaultPlanError(f"{err}; an object name or absent") from None


def _text(path: str, value: Any, what: str) -> str:
    try:
        return text(f"fault plan field {path!r}", value)
    except InvalidValue as err:
        raise FaultPlanError(f"{err} ({what})") from None


def _int(path: str, value: Any, lo: int, what: str) -> int:
    # times and counts alike stop at 2**53: a time past it no journal column holds, a count past it never comes
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= MAX_MS:
        raise FaultPlanError(f"fault plan field {path!r} must be an int >= {lo} and <= 2**53 ({what}), got {_shown(value)}")
    return value


def check_ints(path: str, value: Any) -> tuple[int, ...]:
    if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__iter__"):
        hint = ', or "always"' if path in ("handler_throws", "uncounted") else ""
        raise FaultPlanError(f"fault plan field {path!r} must be a list of {INT_LISTS[path]}{hint}, got {_shown(value)}")
    out = tuple(_int(f"{path}[{i}]", v, 1, INT_LISTS[path].split(" that")[0]) for i, v in enumerate(value))
    return tuple(sorted(set(out)))


_PART_CHECKS = {
    Crash: {"task": None, "invocation": (1, "1 for the first invocation"), "at_await": (1, "the k-th await of the task")},
    EffectThrow: {"effect": None, "times": (1, "how many calls throw"), "when": ("after", "before")},
    EffectCrash: {"effect": None, "call": (1, "1 for the first call of the effect")},
    Evict: {"at_ms": (0, "virtual time in ms")},
    Restart: {"at_ms": (0, "virtual time in ms"), "downtime_ms": (0, "how long the runtime stays down")},
    ForgetAlarm: {"at_ms": (0, "virtual time in ms")},
}


def _shown(value: Any) -> str:
    """A refused value as a message quotes it: its repr, cut to 120 characters (a megabyte name, a
    hundred-thousand-digit text), an int of up to 200 bits in full."""
    if type(value) is int and value.bit_length() <= 200:
        return repr(value)
    return short_repr(value, 120)


def check_parts(path: str, cls: type, value: Any) -> tuple:
    if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__iter__"):
        raise FaultPlanError(
            f"fault plan field {path!r} must be a list of tables with fields {[f.name for f in dataclasses.fields(cls)]}, "
            f"got {_shown(value)}"
        )
    return tuple(_part(f"{path}[{i}]", cls, v) for i, v in enumerate(value))


def _part(path: str, cls: type, value: Any) -> Any:
    names = [f.name for f in dataclasses.fields(cls)]
    if isinstance(value, cls):
        value = part_dict(value, everything=True)
    if not isinstance(value, dict):
        raise FaultPlanError(f"fault plan field {path!r} must be a table with fields {names}, got {_shown(value)}")
    bad = sorted(set(value) - set(names), key=str)  # a key need not be text (a dict from Python)
    if bad:
        hint = " (the k-th await is 'at_await': await is a Python keyword)" if bad[0] == "await" else ""
        key = cut(bad[0], 80) if isinstance(bad[0], str) else short_repr(bad[0], 80)
        raise FaultPlanError(f"unknown fault plan field '{path}.{key}'; allowed fields: {names}{hint}")
    required = [f.name for f in dataclasses.fields(cls) if f.default is dataclasses.MISSING]
    missing = [n for n in required if n not in value]
    if missing:
        raise FaultPlanError(f"fault plan field {path!r} needs {missing[0]!r} (fields: {names})")
    out = {}
    for name in names:
        if name not in value:
            continue
        v, sub = value[name], f"{path}.{name}"
        check = _PART_CHECKS[cls].get(name, "object")
        if name == "object":
            out[name] = check_name(sub, v)
        elif name == "task":
            out[name] = _task(sub, v)
        elif name == "effect":
            out[name] = _text(sub, v, "an effect name as passed to ctx.effect")
        elif isinstance(check[0], str):
            if v not in check:
                raise FaultPlanError(f"fault plan field {sub!r} must be one of {list(check)}, got {_shown(v)}")
            out[name] = v
        else:
            out[name] = _int(sub, v, *check)
    return cls(**out)


def _task(path: str, value: Any) -> str:
    if isinstance(value, str) and (value in _TASK_KINDS[:3] or (value.startswith("rpc:") and len(value) > 4)):
        return _text(path, value, "a task name")
    raise FaultPlanError(f"fault plan field {path!r} must be one of {list(_TASK_KINDS)}, got {_shown(value)}")


def check_latency(value: Any) -> Latency | None:
    if value is None:
        return None
    try:
        lat = Latency.from_value(value)
    except FaultPlanError:
        raise
    except AlarmkitError as err:
        raise FaultPlanError(f"fault plan field 'latency': {err}") from None
    worst = lat.most_ms()
    if worst > DOCUMENTED_MAX_LATE_MS:
        raise FaultPlanError(
            f"fault plan field 'latency' can make a fire {worst} ms late; the documented worst case is a minute "
            f"({DOCUMENTED_MAX_LATE_MS} ms): lower ms, hi or max_ms"
        )
    return lat


def part_dict(part: Any, everything: bool = False) -> dict[str, Any]:
    out = {}
    for f in dataclasses.fields(part):
        v = getattr(part, f.name)
        if everything or f.default is dataclasses.MISSING or v != f.default:
            out[f.name] = v
    return out


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string is a JSON string for these characters
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + "}"
    raise FaultPlanError(f"cannot write {value!r} as TOML")
