"""The report's rows for a library's own schedules (the Agents SDK's, Actors'), read from the run's
``lib_*`` events (``alarmkit.journal.library_schedules``): one line per schedule, as the library saw it."""

from __future__ import annotations

import pandas as pd

from ..journal import library_schedules
from .._text import fmt_ms

SHOW_SCHEDULES = 12  # the summary names this many schedules; the timeline marks every one


def library_rows(events: pd.DataFrame) -> list[tuple[str, str, bool]]:
    """``("library schedules", text, bad)``: bad when a library dropped one; none when no library kept any."""
    if events is None or not len(events) or not events["kind"].astype(str).str.startswith("lib_").any():
        return []
    df = library_schedules(events)
    counts = df["outcome"].value_counts()
    head = f"{len(df):,} kept by " + ", ".join(sorted(df["library"].dropna().astype(str).unique())) + ": " + ", ".join(
        f"{int(n):,} {k}" for k, n in counts.items())
    lines = [head] + [_line(r) for r in df.head(SHOW_SCHEDULES).itertuples()]
    if len(df) > SHOW_SCHEDULES:
        lines.append(f"… and {len(df) - SHOW_SCHEDULES:,} more (the timeline marks each one)")
    return [("library schedules", "\n".join(lines), bool((df["outcome"] == "dropped").any()))]


def _line(r) -> str:
    due = fmt_ms(int(r.due_ms)) if not pd.isna(r.due_ms) else "?"
    text = f"{r.object} · {r.library} {r.id} {r.callback}() ({r.type}) due {due}: {r.outcome}"
    if not pd.isna(r.ended_ms) and r.outcome != "pending":
        text += f" at {fmt_ms(int(r.ended_ms))}"
    if not pd.isna(r.attempts) and r.outcome in ("dropped", "failed, moved on"):
        text += f" after {int(r.attempts)} attempt{'s' if int(r.attempts) != 1 else ''}"
    if isinstance(r.error, str) and r.error:
        text += f": {r.error}"
    return text
