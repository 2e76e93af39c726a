"""What an import checked: anomalies, and the counts every all-clear or anomaly sentence is made from.

A sentence such as "anomalies: none" is only true of what was looked at. ``Checks`` counts, while
the importer builds the run, how many first runs were checked for lateness, how many scheduled
times for retries and an exhausted ladder, how many arms for a missing fire, and what was not
checked and why (no scheduledTime, records that name no object, outcomes that are not workerd's,
identical records dropped). ``verdict`` and ``cannot`` turn those counts into the sentences.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from .._text import clean

__all__ = ["Anomaly", "Checks", "utc"]


def utc(ms: int | None) -> str:
    if ms is None:
        return "?"
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


@dataclass(frozen=True)
class Anomaly:
    kind: str  # late_fire | retries | ladder_exhausted | duplicate_fire | arm_without_fire
    object: str
    t_ms: int
    message: str
    guess: bool = False  # entrypoint-level: the records name no object, several may share the entrypoint
    group: Any = field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "object": self.object, "t_ms": self.t_ms, "message": self.message,
                "entrypoint_level_guess": self.guess}

    def __str__(self) -> str:
        head = f"{self.kind} · {clean(self.object)} at {utc(self.t_ms)}: "
        if self.guess:
            head += "entrypoint-level guess (the records name no object; several objects may share it): "
        return head + clean(self.message)


def _n(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


@dataclass
class Checks:
    """Counts of what the anomaly checks looked at and what they could not."""

    runs: int = 0  # alarm() runs in the trace
    late_checked: int = 0  # first runs checked for lateness
    sequences: int = 0  # (object, scheduled time) groups checked for retries and an exhausted ladder
    duplicate_checked: int = 0
    arms: int = 0  # arms seen (each checked for a fire by its time plus grace)
    pending: int = 0
    no_scheduled: int = 0  # alarm() runs without scheduledTime: no lateness, retry, ladder or duplicate check
    no_time: int = 0
    guessed_runs: int = 0
    mixed_groups: int = 0
    mixed_dropped: int = 0
    duplicates: int = 0  # identical records dropped
    unjudged: dict[str, int] = field(default_factory=dict)  # outcome value -> runs (not workerd's, or "unknown")

    def to_dict(self) -> dict:
        return {k: (dict(v) if isinstance(v, dict) else v) for k, v in self.__dict__.items()}

    def checked(self) -> str:
        parts = [f"lateness of {_n(self.late_checked, 'first run')}",
                 f"retries and ladder of {_n(self.sequences, 'scheduled time')}",
                 f"{_n(self.arms, 'arm')} for a fire"]
        return "checked " + ", ".join(parts)

    def verdict(self, found: int) -> str:
        """``none`` or the count, with what was checked and what was not, in the same sentence."""
        head = "none" if not found else str(found)
        notes = [self.checked()]
        if self.pending:
            notes.append(f"{_n(self.pending, 'arm')} still pending")
        skipped = self.skipped()
        if skipped:
            notes.append("not checked: " + "; ".join(skipped))
        if self.duplicates:
            notes.append(f"{_n(self.duplicates, 'identical record')} dropped")
        if not self.runs and not self.arms:
            notes.append("the trace holds no alarm() run and no arm, so nothing was there to check")
        return f"{head} ({'; '.join(notes)})"

    def skipped(self) -> list[str]:
        out = []
        if self.no_scheduled:
            out.append(f"{_n(self.no_scheduled, 'alarm() run')} without scheduledTime (no lateness, retry, "
                       "ladder or duplicate check for them)")
        if self.no_time:
            out.append(f"{_n(self.no_time, 'alarm() run')} without any time")
        if self.mixed_groups:
            out.append(f"{_n(self.mixed_groups, 'entrypoint group')} holding runs of several objects (runs under "
                       f"1 s apart; {_n(self.mixed_dropped, 'claim')} withheld)")
        if self.guessed_runs:
            out.append(f"duplicate fires of {_n(self.guessed_runs, 'run')} that name no object")
        for value, n in sorted(self.unjudged.items()):
            what = "workerd's own 'unknown'" if value == "unknown" else "not a workerd outcome"
            out.append(f"outcome {clean(value)!r} ({what}) on {_n(n, 'run')}: counted neither ok nor failed")
        return out

    def cannot(self) -> list[str]:
        """The "not in this trace" lines for what the checks skipped."""
        out = []
        if self.no_scheduled:
            out.append(f"scheduled times: {_n(self.no_scheduled, 'alarm() run')} carry no scheduledTime; the "
                       "lateness, retry, ladder and duplicate checks were not made for them")
        if self.unjudged:
            vals = ", ".join(f"{clean(v)!r} x{n}" for v, n in sorted(self.unjudged.items()))
            out.append(f"outcomes not judged: {vals} (workerd's outcomes: src/workerd/io/outcome.capnp); no "
                       "handler_ok/handler_error was made for them and they count toward no retry or ladder")
        return out
