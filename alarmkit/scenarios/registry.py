"""Named scenarios: a function that drives a ``Simulation`` and returns a summary dict.

``run_scenario(name, seed=...)`` builds the simulation (profile, journal, faults), runs the
function, and adds what every run reports: attempts, effects and the event count.
"""

from __future__ import annotations

import inspect
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

from ..errors import ScenarioError

__all__ = ["Scenario", "SCENARIOS", "scenario", "run_scenario", "list_scenarios", "check_params"]


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    fn: Callable[..., dict]
    profile: str = "workerd"
    params: dict[str, Any] = field(default_factory=dict)


SCENARIOS: dict[str, Scenario] = {}


def scenario(name: str, description: str, profile: str = "workerd") -> Callable:
    """Register ``fn(sim, **params) -> dict`` under ``name``; its keyword defaults are its parameters."""

    def register(fn: Callable[..., dict]) -> Callable[..., dict]:
        sig = inspect.signature(fn)
        params = {p.name: p.default for p in list(sig.parameters.values())[1:]}
        SCENARIOS[name] = Scenario(name, description, fn, profile, params)
        return fn

    return register


def list_scenarios() -> list[Scenario]:
    return list(SCENARIOS.values())


def get_scenario(name: str) -> Scenario:
    try:
        return SCENARIOS[name]
    except KeyError:
        raise ScenarioError(f"unknown scenario {name!r}; `alarmkit list` names them: {sorted(SCENARIOS)}") from None


def run_scenario(
    name: str,
    seed: int = 0,
    journal: Any = None,
    profile: str | None = None,
    faults: Any = None,
    **params: Any,
) -> dict:
    """Run a named scenario; return its summary with ``attempts``, ``effects`` and ``events``."""
    from .._runtime import Simulation

    sc = check_params(name, params)
    sim = Simulation(
        profile=profile or sc.profile, seed=seed, journal=journal, scenario=name,
        params={**sc.params, **params}, faults=faults,
    )
    try:
        summary = sc.fn(sim, **params)
    finally:
        sim.close()
    return {"scenario": name, "seed": seed, "profile": sim.profile.name, "run_id": sim.run_id,
            **summarize(sim.events()), **summary, "sim": sim}


def _shape(default: Any) -> str:
    """What a parameter takes, read from its default: 'int', 'bool', 'number', 'text', 'int or null',
    'list of int', '[int, text, int]' (a fixed tuple) or 'any'. Numbers are times and counts, in
    0..2**53; text is valid Unicode (no lone surrogates)."""
    if isinstance(default, bool):
        return "bool"
    if isinstance(default, int):
        return "int"
    if isinstance(default, float):
        return "number"
    if isinstance(default, str):
        return "text"
    if default is None:  # every None default of the built-in scenarios is an optional time or count
        return "int or null"
    if isinstance(default, (list, tuple)) and default:
        shapes = [_shape(d) for d in default]
        if len(set(shapes)) == 1:
            return f"list of {shapes[0]}"
        return "[" + ", ".join(shapes) + "]"
    return "any"


def _fits(value: Any, shape: str) -> bool:
    if shape == "any":
        return True
    if shape == "bool":
        return isinstance(value, bool)
    if shape == "int":  # times and counts: JavaScript's safe integers, as everywhere in alarmkit
        return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 2**53
    if shape == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 2**53
    if shape == "text":
        return isinstance(value, str) and _valid_text(value)
    if shape == "int or null":
        return value is None or _fits(value, "int")
    if not isinstance(value, (list, tuple)):
        return False
    if shape.startswith("list of "):
        return all(_fits(v, shape[len("list of "):]) for v in value)
    parts = _split(shape[1:-1])
    return len(value) == len(parts) and all(_fits(v, s) for v, s in zip(value, parts))


def _valid_text(text: str) -> bool:
    try:
        text.encode("utf-8")  # a lone surrogate ("\ud800") is not text any journal can hold
    except UnicodeEncodeError:
        return False
    return True


def _split(inner: str) -> list[str]:
    """'int, [int, text], text' -> ['int', '[int, text]', 'text'] (commas at depth 0 only)."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(inner):
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            out.append(inner[start:i].strip())
            start = i + 1
    out.append(inner[start:].strip())
    return out


def check_params(name: str, params: dict[str, Any]) -> Scenario:
    """The scenario ``name``, once every parameter in ``params`` is one it takes, shaped like its
    default (a list of ints for ``ttls``...); raises ``ScenarioError`` naming the first that is not."""
    sc = get_scenario(name)
    unknown = sorted(set(params) - set(sc.params))
    if unknown:
        raise ScenarioError(f"scenario {name!r} has no parameter(s) {unknown}; it takes {sorted(sc.params)}")
    for key, value in params.items():
        shape = _shape(sc.params[key])
        if not _fits(value, shape):
            default = json.dumps(sc.params[key])
            bounds = " in 0..2**53" if "int" in shape or "number" in shape else ""
            given = json.dumps(value, default=repr)
            raise ScenarioError(f"scenario {name!r}: {key}={_short(given)} does not fit: parameter {key} takes "
                                f"{shape}{bounds} (default {_short(default)})")
    return sc


def _short(text: str) -> str:
    return text if len(text) <= 80 else text[:77] + "..."


def summarize(events) -> dict:
    """attempts (every alarm() invocation), effects per key, and the event count, from a run's events."""
    fires = events[events["kind"] == "fire"]
    attempts = [
        {"t_ms": int(t), "retry_count": int(r), "object_id": o}
        for t, r, o in zip(fires["t_ms"], fires["retry_count"], fires["object_id"])
    ]
    eff = Counter()
    for d in events.loc[events["kind"] == "effect", "detail"]:
        e = json.loads(d)
        eff[str(e["key"])] += 1
    return {"attempts": attempts, "effects": dict(eff), "events": int(len(events))}
