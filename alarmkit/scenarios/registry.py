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

__all__ = ["Scenario", "SCENARIOS", "scenario", "run_scenario", "list_scenarios"]


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

    sc = get_scenario(name)
    unknown = sorted(set(params) - set(sc.params))
    if unknown:
        raise ScenarioError(f"scenario {name!r} has no parameter(s) {unknown}; it takes {sorted(sc.params)}")
    sim = Simulation(
        profile=profile or sc.profile, seed=seed, journal=journal, scenario=name,
        params={**sc.params, **params}, faults=faults,
    )
    try:
        summary = sc.fn(sim, **params)
    except BaseException:
        sim.close(complete=False)  # the run's row says it was cut short
        raise
    sim.close()
    return {"scenario": name, "seed": seed, "profile": sim.profile.name, "run_id": sim.run_id,
            **summarize(sim.events()), **summary, "sim": sim}


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
