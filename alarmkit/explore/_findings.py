"""What an exploration returns: ``Exploration`` (the table, the findings, the warnings) and
``Counterexample`` (a minimal plan and seed, printable as a snippet that reproduces it)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..runtime import entries, summary_line
from ._shrink import snippet
from ..runtime.faults import FaultPlan

if TYPE_CHECKING:  # pragma: no cover
    from ._replay import Comparison
    from ..scenarios import RunResult

__all__ = ["Checked", "Counterexample", "Exploration", "plan_warnings"]


@dataclass
class Counterexample:
    """A minimal fault plan and seed under which ``scenario`` violates ``invariant``."""

    scenario: str
    invariant: str
    object: str | None
    message: str
    plan: FaultPlan
    seed: int
    params: dict = field(default_factory=dict)
    profile: str | None = None
    found_in: str = ""  # the run key it was shrunk from
    shrink_runs: int = 0
    setup: str = ""  # the lines a fresh script runs first so that it finds the scenario (Scenario.replay_setup)

    def snippet(self) -> str:
        return snippet(self.scenario, self.plan, self.seed, self.params, self.profile, self.setup)

    def replay(self, journal: Any = None, scenario: str | None = None) -> RunResult:
        """Run this counterexample again into ``journal`` (a ``RunResult``); ``scenario``: run another
        scenario (e.g. the correct variant) under the same seed and plan."""
        from ._replay import replay

        return replay(self, journal, scenario)

    def diff(self, journal: Any = None, **kwargs: Any):
        """``ak.diff`` of the same seed without the fault plan (A) against this counterexample's run (B):
        the first divergence is where the faults changed the run (kwargs go to ``diff``)."""
        from ..diff import diff
        from ..scenarios import run_scenario

        bad = self.replay(journal)
        good = run_scenario(self.scenario, seed=self.seed, journal=journal, profile=self.profile, faults=FaultPlan(),
                            **self.params)
        return diff(good, bad, names=("without the faults", "with the faults"), **kwargs)

    def compare(self, correct: str, journal: Any = None, labels: tuple[str, str] | None = None) -> Comparison:
        """Replay this and the ``correct`` scenario under the same plan: ``.bad``, ``.good``,
        ``.check()`` (of the bad run) and ``.figure(kinds=..., window=..., title=...)``."""
        from ._replay import compare_with

        return compare_with(self, correct, journal, labels)

    def to_dict(self) -> dict[str, Any]:
        return {"scenario": self.scenario, "invariant": self.invariant, "object": self.object,
                "message": self.message, "faults": self.plan.to_dict(), "seed": self.seed,
                "found_in": self.found_in, "snippet": self.snippet()}

    @property
    def where(self) -> str:
        """``on OBJECT``, or ``(the whole run)`` for an invariant of no one object (a drive's expect)."""
        return "(the whole run)" if self.object is None else f"on {self.object}"

    def __str__(self) -> str:
        return f"{self.invariant} {self.where}: {self.message}\n{self.snippet()}"


def _n(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


# what an all-clear may say for each invariant checked, in the order it says them (journal/invariants.py);
# those in _OWED are measured against the scenario's obligations
_HELD = {"lost": "no lost work", "early_effect": "no effect before its time",
         "late": "no work later than its bound (where an obligation gives one)",
         "dropped_wakeup": "no wake-up dropped", "alarm_pushed_past_due": "no wake-up pushed past its due time",
         "early_fire": "no early alarm", "concurrent_alarm": "no overlapping alarm",
         "runaway_retries": "no runaway retries", "expect": "no failed expectation",
         "library_dropped": "no library schedule dropped"}
_OWED = ("lost", "early_effect", "late", "dropped_wakeup", "alarm_pushed_past_due")


@dataclass(frozen=True)
class Checked:
    """What an exploration really checked, counted from its table: the invariants checked, the runs,
    how many of them raised, and the faults that were applied (injected, not just planned). Every
    all-clear sentence is made here, from these counts, so it never says more than was done."""

    invariants: tuple[str, ...]
    runs: int
    runs_raised: int
    faults_applied: int
    runs_with_faults: int
    obligations: int = -1  # obligations checked over all runs; -1 when the table does not say
    unstated: tuple[str, ...] = ()  # invariants with nothing to check here (expect without an expect list)

    @classmethod
    def of(cls, table: pd.DataFrame, invariants: tuple[str, ...], unstated: tuple[str, ...] = ()) -> Checked:
        injected = table["faults_injected"].astype("int64") if len(table) else pd.Series([], dtype="int64")
        owed = int(table["obligations"].fillna(0).astype("int64").sum()) if "obligations" in table else -1
        return cls(tuple(invariants), int(len(table)), int((table["error"] != "").sum()) if len(table) else 0,
                   int(injected.sum()), int((injected > 0).sum()), owed, tuple(unstated))

    def counts(self) -> str:
        """``7 invariants checked over 20 runs, 14 faults applied (in 12 runs)``."""
        faults = (f"{_n(self.faults_applied, 'fault')} applied (in {_n(self.runs_with_faults, 'run')})"
                  if self.faults_applied else "no fault applied in any run")
        return f"{_n(len(self.invariants), 'invariant')} checked over {_n(self.runs, 'run')}, {faults}"

    def all_clear(self, warned: bool) -> str:
        """The sentence for an exploration with no counterexample, saying what it rests on."""
        if self.runs == 0 or not self.invariants:
            return f"nothing was checked ({self.counts()})"
        if self.faults_applied == 0:
            return (f"{self.counts()}: no violation found, but this says nothing about faults (ask for random "
                    "runs with --seeds N, or crash points with --crash-points all)")
        under = "under the faults that applied (see the warning)" if warned else "under these faults"
        owed = self.obligations != 0  # lost, early, late and dropped work are measured against obligations
        held = [p for name, p in _HELD.items() if name in self.invariants and (owed or name not in _OWED)]
        said = f"{', '.join(held) or 'no violation'} {under}: {self.counts()}"
        if not owed and any(name in _OWED for name in self.invariants):
            said += "; the scenario declares no obligations, so lost, early, late or dropped work was not checked"
        skipped = [name for name in _HELD if name not in self.invariants and name not in self.unstated]
        if skipped:  # asked for fewer than all: what was left out is said, never claimed
            said += f"; not checked (not asked for): {', '.join(skipped)}"
        if self.runs_raised:
            said += f"; {_n(self.runs_raised, 'run')} raised out of the scenario and were checked only up to there"
        return said

    def to_dict(self) -> dict[str, Any]:
        return {"invariants": list(self.invariants), "runs": self.runs, "runs_raised": self.runs_raised,
                "faults_applied": self.faults_applied, "runs_with_faults": self.runs_with_faults,
                "obligations": self.obligations}


@dataclass
class Exploration:
    """What ``explore`` found: ``table`` (one row per run), ``counterexamples``, ``duplicates``, and
    ``warnings`` (entries of the given fault plan that injected nothing in any run)."""

    scenario: str
    table: pd.DataFrame
    counterexamples: list[Counterexample]
    duplicates: pd.DataFrame
    wall_s: float
    out: Path | None = None
    warnings: list[str] = field(default_factory=list)
    invariants: tuple[str, ...] | None = None  # the invariants each run was checked against (None: all)
    missing: str = ""  # set when the run was cut short: which runs are not in the table, journal or folder
    notes: list[str] = field(default_factory=list)  # what the checks did not cover, said after them (a drive with no expect)
    unstated: tuple[str, ...] = ()  # invariants with nothing to check (expect: a scenario, a drive without expect)

    @property
    def checked(self) -> Checked:
        """What was checked: invariants, runs, faults applied (the counts behind every sentence)."""
        from ..journal.invariants import INVARIANTS

        chosen = self.invariants if self.invariants is not None else INVARIANTS
        return Checked.of(self.table, tuple(chosen), self.unstated)

    @property
    def ok(self) -> bool:
        """No violation, no run that raised, and every entry of the given plan injected a fault."""
        t = self.table
        return (not self.counterexamples and int(t["violations"].sum()) == 0 and not (t["error"] != "").any()
                and not self.warnings)

    @property
    def exit_code(self) -> int:
        """``alarmkit explore``'s exit code: 1 when a run broke an invariant (a counterexample, a violation), 0 when
        none did (usage errors exit 2 before any run). A run that raised out of the scenario's own script is said
        in the report, not counted here: it was checked up to there, and what it showed broke nothing."""
        broken = bool(self.counterexamples) or int(self.table["violations"].sum()) > 0
        return 1 if broken else 0

    @property
    def runs(self) -> int:
        return len(self.table)

    def report(self) -> str:
        t = self.table
        bad = int((t["violations"] > 0).sum())
        kinds = ", ".join(f"{n} {k}" for k, n in t["kind"].value_counts().sort_index().items())
        lines = [f"{self.scenario}: {len(t)} runs ({kinds}) in {self.wall_s:.1f} s; {bad} with violations; "
                 f"{int(t['stuck'].gt(0).sum())} with stuck work"]
        lines += [f"warning: {w}" for w in self.warnings]
        if not self.counterexamples:
            lines.append(self.checked.all_clear(bool(self.warnings)))
        else:
            lines.append(f"checked: {self.checked.counts()}")
        lines += [f"note: {n}" for n in self.notes]
        for cx in self.counterexamples:
            lines += ["", f"{cx.invariant} {cx.where} (shrunk from {cx.found_in} in {cx.shrink_runs} runs):",
                      f"  {cx.message}"]
            found = t.loc[t["key"] == cx.found_in, "run_id"] if "run_id" in t else []
            if len(found) and not pd.isna(found.iloc[0]):  # journaled: where to look at the run it came from
                lines.append(f"  found in run {int(found.iloc[0])} of the journal "
                             f"(`alarmkit export --db FILE --run {int(found.iloc[0])}` draws it)")
            lines += ["", cx.snippet()]
        errors = t[t["error"] != ""]
        if len(errors):
            lines += ["", f"{len(errors)} run(s) raised out of the scenario, e.g. {errors['key'].iloc[0]}: "
                          f"{errors['error'].iloc[0]}"]
        drawn = t[(t["kind"] == "random") & (t["unapplied"] > 0)]
        if len(drawn) and not self.warnings:
            lines += ["", f"{len(drawn)} random plan(s) had entries that injected nothing (drawn from the fault-free "
                          "run, an earlier fault can take the run elsewhere); the table's unapplied_why says which"]
        if len(self.duplicates):
            d = self.duplicates
            lines += ["", f"duplicates (at-least-once, not failures): {len(d)} key(s) ran more than once in "
                          f"{int(t['duplicates'].gt(0).sum())} runs, at most {int(d['max_count'].max())} times"]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        t = self.table
        return {
            "scenario": self.scenario,
            "runs": int(len(t)),
            "runs_with_violations": int((t["violations"] > 0).sum()),
            "runs_with_stuck_work": int(t["stuck"].gt(0).sum()),
            "checked": self.checked.to_dict(),
            "violations": [cx.to_dict() for cx in self.counterexamples],
            "warnings": list(self.warnings),
            "notes": list(self.notes),
            "errors": [{"key": k, "error": e} for k, e in zip(t["key"], t["error"]) if e][:20],
            "duplicates": self.duplicates.to_dict(orient="records"),
            "wall_s": round(self.wall_s, 3),
        }

    def __repr__(self) -> str:
        return f"<Exploration {self.scenario}: {self.runs} runs, {len(self.counterexamples)} counterexample(s)>"


def plan_warnings(base: FaultPlan, table: pd.DataFrame) -> list[str]:
    """The entries of the plan every run shares (``base``) that injected nothing in any run, as one
    line: ``2 of 3 plan entries never applied: effect_throws[0]: effect 'revok' is not ...``."""
    labels = entries(base)
    if not labels or table.empty:
        return []
    total = dict.fromkeys(labels, 0)
    for text in table["faults_applied"]:
        counts = json.loads(text or "{}")
        for key in labels:
            total[key] += counts.get(key, 0)
    missing = [k for k, n in total.items() if n == 0]
    if not missing:
        return []
    why = json.loads(table["unapplied_why"].iloc[0] or "{}")  # the first run: the base plan, unchanged
    return [summary_line(len(labels), {k: why.get(k, "never matched") for k in missing})]
