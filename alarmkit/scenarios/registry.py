"""Named scenarios: a function that drives a ``Simulation`` and returns a summary dict.

``run_scenario(name, seed=...)`` builds the simulation (profile, journal, faults), runs the
function, and returns a ``RunResult``: what every run reports (attempts, effects, the event
count, the obligations) and the scenario's own summary.
"""

from __future__ import annotations

import inspect
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from ..errors import AlarmkitError, ScenarioError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from ..runtime import Simulation

__all__ = ["Scenario", "SCENARIOS", "RunResult", "scenario", "run_scenario", "list_scenarios", "check_params", "attempt_text"]


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    fn: Callable[..., dict]
    profile: str = "workerd"
    params: dict[str, Any] = field(default_factory=dict)
    faults: dict[str, Any] | None = None  # the fault plan a run gets when run_scenario is given none
    setup: str = ""  # Python lines a fresh script runs before ``run_scenario`` can find this scenario
    demonstrates: str = ""  # one line: what the scenario shows (``alarmkit list``, its report); default: description
    kind: str = ""  # correct | platform | failure | anti-pattern (``scenarios.demonstrates``); "" for your own

    def replay_setup(self) -> str:
        """What a replay script (explore's snippets) runs first: ``setup``, else ``import`` of the module
        that registered it (importing it registers it), unless ``import alarmkit`` registers it already
        (the built-ins of ``alarmkit.scenarios``) or it is ``__main__``. ``alarmkit.workers.js.scenarios``
        is alarmkit's but not imported by ``import alarmkit``: its snippets import it."""
        if self.setup:
            return self.setup
        module = getattr(self.fn, "__module__", "") or ""
        if module in ("alarmkit", "alarmkit.scenarios", "__main__", "builtins") or module.startswith("alarmkit.scenarios."):
            return ""
        return f"import {module}  # registers scenario {self.name!r}"

    def check_params(self, params: dict[str, Any], max_work: int | None = None) -> None:
        """Refuse parameters this scenario does not take, or shaped unlike their defaults (a list of
        ints for ``ttls``...; numbers in 0..2**53, valid text): ScenarioError naming the first. Then
        refuse a run whose estimated work (``scenarios.work``) is past ``max_work`` (default 2 million
        units), naming the parameter, the estimate and the option to raise the cap."""
        from .work import check_work

        name = self.name
        unknown = sorted(set(params) - set(self.params))
        if unknown:
            raise ScenarioError(f"scenario {name!r} has no parameter(s) {unknown}; it takes {sorted(self.params)}")
        for key, value in params.items():
            shape = _shape(self.params[key])
            if not _fits(value, shape):
                default = json.dumps(self.params[key])
                bounds = " in 0..2**53" if "int" in shape or "number" in shape else ""
                given = json.dumps(value, default=repr)
                raise ScenarioError(f"scenario {name!r}: {key}={_short(given)} does not fit: parameter {key} takes "
                                    f"{shape}{bounds} (default {_short(default)})")
        check_work(name, self.params, params, max_work)


SCENARIOS: dict[str, Scenario] = {}


def scenario(name: str, description: str, profile: str = "workerd", faults: dict[str, Any] | None = None,
             setup: str = "", demonstrates: str = "", kind: str = "") -> Callable:
    """Register ``fn(sim, **params) -> dict`` under ``name``; its keyword defaults are its parameters.
    ``faults``: a fault plan as plain data (``FaultPlan.to_dict()``) that ``run_scenario`` applies when
    it is given no ``faults`` (the story needs the fault to happen); ``faults=FaultPlan()`` runs without.
    ``setup``: the Python lines a fresh script needs before it can run this scenario by name (explore's
    replay snippets start with them); by default, ``import`` of the module that registered it.
    ``demonstrates``: one line saying what the scenario shows (``alarmkit list`` and its report print it);
    ``kind="anti-pattern"`` marks a bug that shows only under faults: ``alarmkit demo`` then runs ``explore``
    on it and its report shows the counterexample found."""
    from .demonstrates import DEMONSTRATES, KINDS

    if kind and kind not in KINDS:
        raise ScenarioError(f"scenario {name!r}: kind must be one of {list(KINDS)} or empty, got {kind!r}")
    known_kind, known_line = DEMONSTRATES.get(name, ("", ""))

    def register(fn: Callable[..., dict]) -> Callable[..., dict]:
        sig = inspect.signature(fn)
        params = {p.name: p.default for p in list(sig.parameters.values())[1:]}
        if faults is not None:
            from ..runtime.faults import FaultPlan

            FaultPlan.from_dict(faults)  # a bad default plan fails here, at import, naming the field
        SCENARIOS[name] = Scenario(name, description, fn, profile, params, faults, setup,
                                   demonstrates or known_line or description, kind or known_kind)
        return fn

    return register


def list_scenarios() -> list[Scenario]:
    return list(SCENARIOS.values())


def get_scenario(name: str) -> Scenario:
    try:
        return SCENARIOS[name]
    except KeyError:
        raise ScenarioError(f"unknown scenario {name!r}; `alarmkit list` names them: {sorted(SCENARIOS)}") from None


@dataclass(eq=False)
class RunResult:
    """One scenario run: what every run reports, the scenario's own ``summary``, and the simulation.

    ``result.events`` is the run's journal rows (a DataFrame); ``result["key"]`` reads the scenario's
    own summary (``result.summary["key"]``); ``result.sim`` is the finished simulation, for inspection.
    """

    scenario: str
    seed: int
    profile: str
    run_id: int | None
    params: dict[str, Any]
    attempts: list[dict]  # every alarm() invocation: t_ms, retry_count, object_id
    effects: dict[str, int]  # effect runs per key
    event_count: int
    obligations: list = field(default_factory=list)  # what the scenario owes (for check())
    horizon_ms: int | None = None
    grace_ms: int | None = None
    summary: dict[str, Any] = field(default_factory=dict)
    sim: Simulation | None = field(default=None, repr=False)
    unapplied: dict[str, str] = field(default_factory=dict)  # plan entries that injected nothing -> why

    @property
    def events(self) -> pd.DataFrame:
        """The run's events, as ``Journal.events(run_id)`` returns them."""
        if self.sim is None:
            raise AlarmkitError("this RunResult has no simulation; read its events with Journal.events(run_id)")
        return self.sim.events()

    @property
    def verdict(self) -> Any:
        """The run's ``Verdict`` (``alarmkit._verdict``): its obligations and every invariant checked with
        ``ak.check``, each broken one with its object, time and one-line cause; said first by the CLI,
        the report and the explorer. Without the simulation nothing can be checked, and it says so."""
        from ..journal import Verdict, verdict_of

        if self.sim is None:
            return Verdict(None, 0, (), note="this result has no simulation to check; run it again with run_scenario")
        cached = self.__dict__.get("_verdict")
        if cached is None:
            cached = self.__dict__["_verdict"] = verdict_of(self).with_warnings(self._scenario_warnings())
        return cached

    def _scenario_warnings(self) -> list:
        """The scenario's own warnings: rows it reports left (``rows_left``: work owed and never done) and,
        for an anti-pattern that held without faults, that it held only because no fault hit it."""
        from ..journal import Finding

        out = []
        left = self.summary.get("rows_left")
        if left:
            shown = ", ".join(str(x) for x in list(left)[:8]) + (f" … and {len(left) - 8} more" if len(left) > 8 else "")
            out.append(Finding("rows left", None, None, f"rows left · {len(left)} row(s) still in the table at the end "
                               f"({shown}): the scenario's work is to remove each one when it is due"))
        sc = SCENARIOS.get(self.scenario)
        hit = self.sim is not None and bool(self.events["kind"].isin(["fault", "crash", "restart"]).any())
        if sc is not None and sc.kind == "anti-pattern" and not hit:
            out.append(Finding("anti-pattern held without faults", None, None,
                               f"anti-pattern held without faults · {sc.demonstrates}; its bug shows only under "
                               f"faults: `alarmkit explore {self.scenario}` finds the plan that breaks it"))
        if self.unapplied:  # a fault asked for and never injected: the run says nothing about it
            from ..runtime import summary_line

            line = summary_line(len(self.sim.faults.applied()), self.unapplied)
            out.append(Finding("fault plan not applied", None, None, f"fault plan not applied · {line}"))
        return out

    def __getitem__(self, key: str) -> Any:
        try:
            return self.summary[key]
        except KeyError:
            if key in self.__dataclass_fields__:
                raise KeyError(f"{key!r} is an attribute: result.{key}") from None
            raise KeyError(f"scenario {self.scenario!r} reported no {key!r}; it reported {sorted(self.summary)}") from None

    def __contains__(self, key: str) -> bool:
        return key in self.summary

    def get(self, key: str, default: Any = None) -> Any:
        return self.summary.get(key, default)

    def to_dict(self) -> dict[str, Any]:
        """Plain data (no simulation, no params): the fields, ``events`` the event count, then the summary."""
        out = {"scenario": self.scenario, "seed": self.seed, "profile": self.profile, "run_id": self.run_id,
               "attempts": self.attempts, "effects": self.effects, "events": self.event_count}
        for k in ("obligations", "horizon_ms", "grace_ms"):
            if getattr(self, k) is not None:
                out[k] = getattr(self, k)
        return {**out, **self.summary}


def run_scenario(
    name: str,
    seed: int = 0,
    journal: Any = None,
    profile: str | None = None,
    faults: Any = None,
    max_work: int | None = None,
    cpu_time: Any = None,
    **params: Any,
) -> RunResult:
    """Run a named scenario; a ``RunResult`` (attempts, effects, event count, obligations, its summary).
    Without ``faults``, a scenario registered with a default plan runs under a fresh copy of it.
    ``max_work`` caps the run's estimated work (``scenarios.work``; default 2 million units, about 1 GB).
    ``cpu_time`` is ``Simulation(cpu_time=...)``: what running code costs the clock (docs/runtime.md)."""
    from ..runtime import Simulation

    sc = check_params(name, params, max_work)
    if faults is None and sc.faults is not None:
        from ..runtime.faults import FaultPlan

        faults = FaultPlan.from_dict(sc.faults)
    sim = Simulation(
        profile=profile or sc.profile, seed=seed, journal=journal, scenario=name,
        params={**sc.params, **params}, faults=faults, cpu_time=cpu_time,
    )
    try:
        summary = dict(sc.fn(sim, **params) or {})
    except BaseException:
        sim.close(complete=False)  # the run's row says it was cut short
        raise
    sim.close()
    from ..runtime import unapplied

    counts = summarize(sim.events())
    return RunResult(
        scenario=name, seed=seed, profile=sim.profile.name, run_id=sim.run_id, params={**sc.params, **params},
        attempts=counts["attempts"], effects=counts["effects"], event_count=counts["events"],
        obligations=list(summary.pop("obligations", [])), horizon_ms=summary.pop("horizon_ms", None),
        grace_ms=summary.pop("grace_ms", None), summary=summary, sim=sim,
        unapplied=unapplied(sim.faults) if hasattr(sim.faults, "applied") else {},
    )


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


def check_params(name: str, params: dict[str, Any], max_work: int | None = None) -> Scenario:
    """The scenario ``name``, once ``params`` pass its ``check_params`` (ScenarioError otherwise)."""
    sc = get_scenario(name)
    sc.check_params(params, max_work)
    return sc


def _short(text: str) -> str:
    return text if len(text) <= 80 else text[:77] + "..."


def summarize(events) -> dict:
    """attempts (every alarm() invocation), effects per key, and the event count, from a run's events.

    Each attempt says how it ended: ``outcome`` is ``ok``, ``threw`` (``error``: the exception's type and
    the first line of its message), ``abandoned`` (it threw and the platform gave up after it), ``crashed``
    (the object died mid-run: a crash, a kill, a broken facet) or ``unfinished`` (the run ended first)."""
    attempts: list[dict] = []
    open_by_object: dict[Any, dict] = {}  # the object's alarm() run that has not ended yet
    last_threw: dict[Any, dict] = {}  # the object's last attempt that threw (an ``abandoned`` row follows it)
    wanted = events["kind"].isin(list(_ENDS) + ["fire", "abandoned"])
    rows = events.loc[wanted, ["kind", "t_ms", "retry_count", "object_id", "detail"]]
    for kind, t, r, o, detail in zip(rows["kind"], rows["t_ms"], rows["retry_count"], rows["object_id"], rows["detail"]):
        if kind == "fire":
            a = {"t_ms": int(t), "retry_count": int(r), "object_id": o, "outcome": "unfinished", "error": None}
            attempts.append(a)
            open_by_object[o] = a
            continue
        if kind == "abandoned":
            a = last_threw.pop(o, None)
            if a is not None:
                a["outcome"] = "abandoned"
            continue
        a = open_by_object.pop(o, None)
        if a is None:
            continue
        a["outcome"] = _ENDS[kind]
        if kind == "handler_ok":
            continue
        a["error"] = _first_line(detail, kind)
        if kind == "handler_error":
            last_threw[o] = a
    eff = Counter()
    for d in events.loc[events["kind"] == "effect", "detail"]:
        e = json.loads(d)
        eff[str(e["key"])] += 1
    return {"attempts": attempts, "effects": dict(eff), "events": int(len(events))}


# how an alarm() run ends, by the event that ends it
_ENDS = {"handler_ok": "ok", "handler_error": "threw", "crash": "crashed", "facet_broken": "crashed",
         "actor_broken": "crashed", "aborted": "crashed", "evict": "crashed"}  # an eviction mid-run kills it


def attempt_text(a: dict) -> str:
    """``ok``, ``threw InjectedError: boom``, ``abandoned after InjectedError: boom``: how an attempt ended."""
    outcome = a.get("outcome", "unfinished")
    if not a.get("error"):
        return outcome
    return f"{outcome} {'after ' if outcome == 'abandoned' else ''}{a['error']}"


def _first_line(detail: Any, kind: str) -> str:
    """``InjectedError: lab: the handler throws`` from a ``handler_error`` row's detail (or the crash's kind)."""
    try:
        d = json.loads(detail) if isinstance(detail, str) else {}
    except ValueError:
        d = {}
    if not isinstance(d, dict):
        d = {}
    error = str(d.get("error") or d.get("reason") or kind)
    message = str(d.get("message") or "").strip().splitlines()
    return f"{error}: {message[0]}" if message else error
