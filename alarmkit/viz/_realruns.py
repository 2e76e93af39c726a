"""What a report adds for a real (imported or recorded) run: its anomalies, what the trace could not
tell, and figures on time since the run's first event (the wall-clock origin is in the title)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pandas as pd

from ._align import TIME_COLS

__all__ = ["is_real", "real_rows", "relative", "since_start", "origin_text", "retitle_time_axes"]



def is_real(run: dict | None) -> bool:
    params = (run or {}).get("params") or {}
    return isinstance(params, dict) and "imported" in params


def origin_text(t0_ms: int) -> str:
    return datetime.fromtimestamp(t0_ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


def relative(events: pd.DataFrame, t0_ms: int | None = None) -> tuple[pd.DataFrame, int]:
    """Epoch times as milliseconds since ``t0_ms`` (default: the first event), and that origin."""
    t0 = int(events["t_ms"].min()) if t0_ms is None else int(t0_ms)
    out = events.copy()
    for col in TIME_COLS:
        out[col] = out[col] - t0
    return out, t0


def since_start(events: pd.DataFrame) -> pd.DataFrame:
    """A real run's events with times counted from its first event (for figures on a short axis)."""
    return relative(events)[0]


def real_rows(run: dict, events: pd.DataFrame) -> list[tuple[str, str, bool]]:
    """Summary rows of an imported or recorded run (plain text, escaped by the report)."""
    imp: dict[str, Any] = run["params"]["imported"]
    rows = [("imported from", f"{imp.get('file')} ({imp.get('format')})", False)]
    if len(events):
        rows.append(("wall-clock time", f"{origin_text(int(events['t_ms'].min()))} to "
                                        f"{origin_text(int(events['t_ms'].max()))}", False))
    anomalies = imp.get("anomalies") or []
    rows.append(("anomalies", "\n".join(anomalies) if anomalies else "none", bool(anomalies)))
    if imp.get("pending"):
        rows.append(("pending at the end", "\n".join(imp["pending"]), False))
    if imp.get("cannot"):
        rows.append(("not in the trace", "\n".join(imp["cannot"]), False))
    return rows


def retitle_time_axes(fig, text: str = "wall-clock time since t = 0") -> None:
    """A figure of real runs: its x axes say wall-clock time, not virtual time (the unit is kept)."""
    for name in fig.layout:
        if name.startswith("xaxis"):
            axis = fig.layout[name]
            title = axis.title.text if axis.title is not None else None
            if title and title.startswith("virtual time"):
                axis.title.text = title.replace("virtual time", text, 1)
