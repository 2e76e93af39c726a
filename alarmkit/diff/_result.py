"""``RunDiff``: what ``diff`` found between two runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

__all__ = ["RunDiff", "Divergence", "TABLE_COLUMNS"]

TABLE_COLUMNS = ["object", "kind", "status", "what", "t_a", "t_b", "delta_ms", "scheduled_a", "scheduled_b", "retry_count",
                 "late_a", "late_b", "seq_a", "seq_b"]


@dataclass
class Divergence:
    """The first event present in one run and not the other, or with another outcome.

    ``run`` is "a", "b" or "both" (a changed outcome); ``t_ms`` the virtual time (as aligned) where
    it happens; ``row`` its index in ``RunDiff.table()``; ``chain`` the object's events that led to
    it in each run (from the arm that set the alarm: the moves, the fires, the retries), as
    DataFrames keyed by run name."""

    object: str
    t_ms: int
    run: str
    status: str
    kind: str
    text: str
    row: int
    chain: dict[str, pd.DataFrame] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.text


@dataclass
class RunDiff:
    """Two runs aligned per object and per alarm.

    ``first_divergence`` (None when the runs agree), ``table()`` (one row per differing event),
    ``counts`` (per object: fires, retries, abandonments, effects, duplicates in each run and their
    difference), ``invariants`` (violations and obligation outcomes found in one run and not the
    other), ``summary()`` (a few plain sentences), ``figure()`` (the two runs as paired lanes).
    ``notes`` says what could not be compared or checked, and why. ``largest_ms``: the largest
    time difference between two matched events (0 unless a tolerance let it pass); ``shift_ms``:
    B's time minus A's when every event the two runs share is that one time apart (a run shifted
    as a whole), else None."""

    names: tuple[str, str]
    align: str
    tolerance_ms: int
    matched: int
    events: tuple[int, int]
    differences: pd.DataFrame
    counts: pd.DataFrame
    invariants: pd.DataFrame
    first_divergence: Divergence | None
    paired_by_order: list[tuple[Any, Any, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    checked: bool = False
    lanes: pd.DataFrame | None = field(default=None, repr=False)  # every aligned event, for the figure
    largest_ms: int = 0  # the largest time difference of two matched events (within the tolerance)
    shift_ms: int | None = None  # B's time minus A's when every event both hold is that far apart

    @property
    def same(self) -> bool:
        """No differing event, no count and no invariant that differs."""
        return self.differences.empty and self.invariants.empty

    def table(self) -> pd.DataFrame:
        """One row per differing event (the rows the figure draws strong), in time order."""
        return self.differences[TABLE_COLUMNS].copy()

    def summary(self) -> str:
        """A few plain sentences: where the runs part, why, and what differs after."""
        from ._summary import sentences

        return "\n".join(sentences(self))

    def figure(self, **kw: Any):
        """One time axis, the two runs as paired lanes per object (see ``alarmkit.diff.figure``)."""
        from .figure import diff_figure

        return diff_figure(self, **kw)

    def __repr__(self) -> str:
        fd = self.first_divergence
        head = "same" if self.same else f"{len(self.differences)} differing event{'s' * (len(self.differences) != 1)}"
        where = "" if fd is None else f"; first divergence on {fd.object} at {fd.t_ms} ms ({fd.status})"
        return f"<RunDiff {self.names[0]} vs {self.names[1]}: {head}, {self.matched} matched{where}>"
