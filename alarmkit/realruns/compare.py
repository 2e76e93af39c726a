"""Real against simulated: one recorded or imported run beside a simulated run of the same scenario.

Both runs are aligned on their first request (the first ``call`` event; a run without calls on its
first event): t = 0 is that request in each. ``differences`` lists what differs: alarm() runs (time
since the first request, retry count, outcome), and effects by name and key. Objects are paired in
the order they first appear (a real object is named by ``ctx.id.name``, a simulated one by its label).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd

from ..viz import align, first_request_ms  # noqa: F401 - re-exported
from ..errors import AlarmkitError

__all__ = ["align", "differences", "compare_real", "export_comparison", "EPOCH_MS"]

EPOCH_MS = 10**12  # times above this (2001-09-09) are epoch milliseconds, not virtual time from 0
def _runs(events: pd.DataFrame) -> list[dict]:
    out = []
    ends = events[events["kind"].isin(["handler_ok", "handler_error"])]
    for _, f in events[events["kind"] == "fire"].iterrows():
        end = ends[(ends["object_id"] == f["object_id"]) & (ends["seq"] > f["seq"])].head(1)
        out.append({"object": f["object_id"], "t_ms": int(f["t_ms"]),
                    "retry_count": None if pd.isna(f["retry_count"]) else int(f["retry_count"]),
                    "outcome": None if end.empty else ("ok" if end.iloc[0]["kind"] == "handler_ok" else "error")})
    return out


def _effects(events: pd.DataFrame) -> Counter:
    c: Counter = Counter()
    for d in events.loc[events["kind"] == "effect", "detail"]:
        v = json.loads(d) if isinstance(d, str) else {}
        c[(str(v.get("name")), json.dumps(v.get("key")))] += 1
    return c


def differences(real: pd.DataFrame, simulated: pd.DataFrame, *, tolerance_ms: int = 250) -> list[str]:
    """Readable lines, one per difference; alarm() run times within ``tolerance_ms`` count as equal.

    An empty list means: the same number of alarm() runs, the same retry counts and outcomes, run
    times within the tolerance, the same effects the same number of times.
    """
    a, b = align(real), align(simulated)
    ra, rb = _runs(a), _runs(b)
    lines = []
    if len(ra) != len(rb):
        lines.append(f"alarm() runs: real {len(ra)}, simulated {len(rb)}")
    for i, (x, y) in enumerate(zip(ra, rb), 1):
        if abs(x["t_ms"] - y["t_ms"]) > tolerance_ms:
            lines.append(f"run {i}: real at +{x['t_ms']} ms, simulated at +{y['t_ms']} ms "
                         f"({x['t_ms'] - y['t_ms']:+d} ms; tolerance {tolerance_ms} ms)")
        if x["retry_count"] != y["retry_count"]:
            lines.append(f"run {i}: retry_count real {x['retry_count']}, simulated {y['retry_count']}")
        if x["outcome"] != y["outcome"]:
            lines.append(f"run {i}: outcome real {x['outcome'] or 'not in the trace'}, simulated {y['outcome']}")
    for x in ra[len(rb):]:
        lines.append(f"real only: alarm() at +{x['t_ms']} ms (retry_count {x['retry_count']}, {x['outcome']})")
    for y in rb[len(ra):]:
        lines.append(f"simulated only: alarm() at +{y['t_ms']} ms (retry_count {y['retry_count']}, {y['outcome']})")
    ea, eb = _effects(a), _effects(b)
    for key in sorted(set(ea) | set(eb)):
        if ea[key] != eb[key]:
            lines.append(f"effect {key[0]}({key[1]}): real ×{ea[key]}, simulated ×{eb[key]}")
    return lines


def compare_real(real: pd.DataFrame, simulated: pd.DataFrame, labels: tuple[str, str] = ("real", "simulated"),
                 **kw: Any):
    """``plots.compare`` of the two runs, both aligned on their first request."""
    from ..viz.plots import compare

    from ..viz import retitle_time_axes

    fig = compare({labels[0]: real, labels[1]: simulated}, align="first_request",
                  title=kw.pop("title", f"{labels[0]} vs {labels[1]} · t = 0 at each run's first request"), **kw)
    retitle_time_axes(fig, "time since the first request (wall-clock for the real run, virtual for the simulated)")
    return fig


def export_comparison(journal: Any, real_run: int, sim_run: int, path: str | Path, *, tolerance_ms: int = 250) -> Path:
    """One HTML page: the aligned comparison figure and the differences listed above it."""
    from ..viz.report import report_html

    real, sim = journal.events(real_run), journal.events(sim_run)
    rr, rs = journal.run(real_run), journal.run(sim_run)
    labels = (f"run {real_run} · {rr['scenario']} ({rr['profile']})", f"run {sim_run} · {rs['scenario']} ({rs['profile']})")
    diffs = differences(real, sim, tolerance_ms=tolerance_ms)
    rows = [("real", labels[0], False), ("simulated", labels[1], False), ("aligned on", "each run's first request", False),
            ("differences", "\n".join(diffs) if diffs else f"none (alarm() times within {tolerance_ms} ms)", bool(diffs))]
    from .._files import write_text
    from ..viz.report import is_report

    return write_text(path, report_html([compare_real(real, sim, labels)], "real vs simulated", rows,
                                        clock="time since each run's first request"),
                      ours=is_report, what="report", reading=(journal.path,) if getattr(journal, "path", None) else ())
