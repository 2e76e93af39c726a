"""A counterexample played again: into a journal, and beside the correct variant under the same plan."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..journal.invariants import Report, check
from ..scenarios import RunResult, run_scenario

if TYPE_CHECKING:  # pragma: no cover
    import plotly.graph_objects as go


__all__ = ["Comparison", "replay", "compare_with"]


class Finding(Protocol):
    """What a replay reads of a finding (``alarmkit.Counterexample`` has it): typed here so that
    this module needs nothing of ``_findings``, which calls it."""

    scenario: str
    params: dict
    seed: int
    profile: str | None
    plan: Any


def replay(cx: Finding, journal: Any = None, scenario: str | None = None) -> RunResult:
    """Run ``cx`` again (its scenario, seed, parameters, profile and fault plan) into ``journal``;
    with ``scenario``, run that scenario under the same seed and plan instead (its own parameters)."""
    name = scenario or cx.scenario
    params = cx.params if name == cx.scenario else {}
    return run_scenario(name, seed=cx.seed, journal=journal, profile=cx.profile, faults=cx.plan, **params)


@dataclass(eq=False)
class Comparison:
    """A counterexample's run (``bad``) beside the correct variant's run under the same plan (``good``)."""

    counterexample: Finding
    bad: RunResult
    good: RunResult
    labels: tuple[str, str]

    def check(self, **kwargs: Any) -> Report:
        """``check(bad)``: what the counterexample's run lost, did early or late (kwargs go to ``check``)."""
        return check(self.bad, **kwargs)

    def figure(self, **kwargs: Any) -> go.Figure:
        """Both runs on one time axis (``plots.compare``; kwargs such as ``kinds``, ``window``, ``title``)."""
        from ..viz.plots import compare

        return compare({self.labels[0]: self.bad.events, self.labels[1]: self.good.events}, **kwargs)

    def diff(self, **kwargs: Any):
        """``ak.diff`` of the correct run (A) against the counterexample's (B): where they part and why."""
        from ..diff import diff

        return diff(self.good, self.bad, names=(self.labels[1], self.labels[0]), **kwargs)


def compare_with(cx: Finding, correct: str, journal: Any = None,
                 labels: tuple[str, str] | None = None) -> Comparison:
    """Replay ``cx`` and the ``correct`` scenario under the same seed and plan into ``journal``."""
    bad = replay(cx, journal)
    good = replay(cx, journal, scenario=correct)
    return Comparison(cx, bad, good, labels or (cx.scenario, correct))
