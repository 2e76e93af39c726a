"""The calibration report: a terminal table, timelines of real and simulated runs on one axis,
the timing bands, and one self-contained HTML page (``alarmkit.report.report_html``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import plotly.graph_objects as go

from ..errors import AlarmkitError
from ..viz.plots import compare, esc
from ..viz.report import report_html
from .catalogue import PROBES
from .importer import canonical_object

if TYPE_CHECKING:  # pragma: no cover
    from .calibration import Calibration

__all__ = ["OVERLAY_KINDS", "band_figure", "details_figure", "overlay_events", "overlay_figure", "probe_diff", "text_table",
           "write_html"]

OVERLAY_KINDS = ["construct", "evict", "restart", "call", "arm", "disarm", "fire", "fire_skipped", "handler_ok",
                 "handler_error", "retry_scheduled", "abandoned", "revive", "effect", "crash", "facet_broken"]
_READS = {"events", "state"}  # the probes' own polling, journaled as calls by the simulator only


def _fmt(v: Any) -> str:
    if isinstance(v, str):
        return v
    return json.dumps(v, default=str)


def overlay_events(cal: "Calibration", probe: str) -> dict[str, pd.DataFrame]:
    """``{label: events}`` of the probe's real and simulated runs, both in ms from the probe anchor."""
    if probe not in cal.observed:
        raise AlarmkitError(f"no probe {probe!r} in this calibration; probes: {list(cal.observed)}")
    if cal.journal is None or probe not in cal.real_runs or probe not in cal.sim_runs:
        raise AlarmkitError(f"probe {probe!r} has no journal runs on both sides (did it fail?): "
                            f"{cal.observed[probe].get('error') or cal.simulated.get(probe, {}).get('error')}")
    real = cal.journal.events(cal.real_runs[probe])
    sim = cal.journal.events(cal.sim_runs[probe]).copy()
    res = cal.simulated[probe]
    t0 = res.get("t0_ms") or 0
    for col in ("t_ms", "scheduled_ms", "prev_scheduled_ms"):
        sim[col] = sim[col] - t0
    sim["object_id"] = [canonical_object(o) for o in sim["object_id"]]
    is_read = [k == "call" and isinstance(d, str) and json.loads(d).get("method") in _READS
               for k, d in zip(sim["kind"], sim["detail"])]
    sim = sim[~pd.Series(is_read, index=sim.index)]
    if res.get("restart_at") is not None and res.get("probe") == "revival":  # the revival starts at the restart
        sim = sim[sim["t_ms"] >= res["restart_at"] - 500]
    spec = PROBES.get(probe)
    return {f"real workerd {cal.version}": real,
            f"simulator (profile {spec.sim.get('profile', 'workerd') if spec else 'workerd'})": sim}


def overlay_figure(probe: str, cal: "Calibration | None" = None) -> go.Figure:
    """Timelines of one probe's real and simulated runs on one time axis (``plots.compare``).

    ``cal`` defaults to the committed reference run (``alarmkit.calibrate.reference()``).
    """
    if cal is None:
        from .recorded import reference

        cal = reference()
    runs = overlay_events(cal, probe)
    v = cal.verdicts.get(probe)
    verdict = "match" if v is not None and v.match else "MISMATCH"
    return compare(runs, kinds=OVERLAY_KINDS,
                   title=f"{probe}: real workerd {cal.version} vs simulator · {verdict} · ms from the probe anchor")


def probe_diff(probe: str, cal: "Calibration | None" = None):
    """``ak.diff`` of one probe's real run (A) against its simulated run (B), times from the probe anchor,
    within the calibration's latency allowance: where the simulator parts from workerd, and why."""
    from ..diff import diff
    from ..diff import ALIGNED_KINDS

    if cal is None:
        from .recorded import reference

        cal = reference()
    real, sim = overlay_events(cal, probe).values()
    # only what the real run's journal records at all: the recorded twin journals no revive, no
    # fire_skipped and no abandonment of its own (docs/calibration.md), so those would all read as missing
    kinds = [k for k in ALIGNED_KINDS if k in set(real["kind"])] or ["fire"]
    return diff(real, sim, align=int(cal.bands.latency_ms), names=(f"workerd {cal.version}", "the simulator"),
                check=False, kinds=kinds)


def band_figure(cal: "Calibration") -> go.Figure:
    """Every timing check: where the real and the simulated value sit inside their band (0 = low end, 1 = high)."""
    rows = [(n, c) for n, v in cal.verdicts.items() for c in v.checks if c.kind == "band"]
    if not rows:
        raise AlarmkitError("no timing checks in this calibration")
    labels = [esc(f"{n} · {c.name}") for n, c in rows]
    fig = go.Figure()
    fig.add_trace(go.Bar(y=labels, x=[1.0] * len(rows), base=[0.0] * len(rows), orientation="h", name="band",
                         marker=dict(color="rgba(0,114,178,0.15)"), hoverinfo="skip"))
    for side, attr, colour, symbol in (("real workerd", "observed", "#D55E00", "diamond"),
                                       ("simulator", "simulated", "#0072B2", "circle")):
        xs, hover = [], []
        for (n, c), label in zip(rows, labels):
            val, (lo, hi) = getattr(c, attr), c.band
            xs.append(None if val is None else (val - lo) / max(1, hi - lo))
            hover.append(f"{label}<br>{side}: {esc(val)} ms<br>band {lo}..{hi} ms")
        fig.add_trace(go.Scatter(y=labels, x=xs, mode="markers", name=side, hovertext=hover,
                                 hovertemplate="%{hovertext}<extra></extra>",
                                 marker=dict(color=colour, symbol=symbol, size=10)))
    fig.update_xaxes(title_text="position inside the band (0 = low end, 1 = high end)", range=[-0.1, 1.1])
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(template="plotly_white", height=160 + 22 * len(rows), barmode="overlay",
                      title=dict(text="timings against their bands (retry waits: base..base×1.25 + latency allowance)",
                                 x=0.01, xanchor="left"), margin=dict(l=420, r=20, t=60, b=60),
                      legend=dict(orientation="h", y=1.02, yanchor="bottom", x=1, xanchor="right"))
    return fig


def text_table(cal: "Calibration") -> str:
    """The terminal summary: one line per probe, then every mismatch with both values."""
    width = max([len(n) for n in cal.verdicts] + [5])
    lines = [f"calibration against {cal.workerd} (npm workerd@{cal.version}, compat {cal.compat_date})",
             f"{'probe':<{width}}  {'result':<8}  {'facts':>5}  {'timings':>7}  first timing: real | simulated (band, ms)"]
    for n, v in cal.verdicts.items():
        facts = [c for c in v.checks if c.kind in ("exact", "prefix")]
        times = [c for c in v.checks if c.kind == "band"]
        first = f"{times[0].name}: {_fmt(times[0].observed)} | {_fmt(times[0].simulated)} ({times[0].band[0]}..{times[0].band[1]})" \
            if times else ""
        result = "match" if v.match else ("not run" if v.not_run else "ERROR" if v.error else "MISMATCH")
        lines.append(f"{n:<{width}}  {result:<8}  {sum(c.ok for c in facts):>2}/{len(facts):<2}  "
                     f"{sum(c.ok for c in times):>3}/{len(times):<3}  {first}")
    bad = [(n, v) for n, v in cal.verdicts.items() if not v.match]
    for n, v in bad:
        if v.not_run:
            lines.append(f"  {n}: not run: {v.not_run}")
        if v.error:
            lines.append(f"  {n}: {v.error}")
        for c in v.mismatches:
            band = f" (band {c.band[0]}..{c.band[1]} ms)" if c.band else ""
            lines.append(f"  {n} · {c.name}: real {_fmt(c.observed)} | simulated {_fmt(c.simulated)}{band}")
    total, skipped = len(cal.verdicts), sum(bool(v.not_run) for v in cal.verdicts.values())
    lines.append(f"{total - len(bad)}/{total} probes match" + (f", {skipped} not run" if skipped else "")
                 + ("" if bad else ": the simulator agrees with workerd"))
    return "\n".join(lines)


def _rows(cal: "Calibration") -> list[tuple[str, str, bool]]:
    rows = [("runtime", f"{cal.workerd} (npm workerd@{cal.version}), compat date {cal.compat_date}", False),
            ("journal profile of the real runs", cal.profile, False),
            ("recorded", cal.created_at, False),
            ("bands", f"latency allowance {cal.bands.latency_ms} ms, cold start {cal.bands.cold_ms} ms; retry n waits "
                      f"base..base×1.25 (profile {cal.bands.profile}) plus the allowance", False)]
    n_ok = sum(v.match for v in cal.verdicts.values())
    skipped = sum(bool(v.not_run) for v in cal.verdicts.values())
    rows.append(("result", f"{n_ok}/{len(cal.verdicts)} probes match" + (f", {skipped} not run" if skipped else ""),
                 n_ok != len(cal.verdicts)))
    for n, v in cal.verdicts.items():
        facts = [c for c in v.checks if c.kind in ("exact", "prefix")]
        times = [c for c in v.checks if c.kind == "band"]
        head = "match" if v.match else f"not run: {v.not_run}" if v.not_run else \
            f"MISMATCH: {v.error or ', '.join(c.name for c in v.mismatches)}"
        rows.append((n, f"{head} · facts {sum(c.ok for c in facts)}/{len(facts)} · timings "
                        f"{sum(c.ok for c in times)}/{len(times)} · real run {cal.real_runs.get(n)}, "
                        f"simulated run {cal.sim_runs.get(n)}", not v.match))
    return rows


def details_figure(cal: "Calibration") -> go.Figure:
    """Every check of every probe as a table: real and simulated values side by side."""
    cols: list[list[str]] = [[], [], [], [], [], []]
    for n, v in cal.verdicts.items():
        if v.not_run:
            for col, text in zip(cols, (n, "not run", v.not_run, "", "", "not run")):
                col.append(esc(text))
        if v.error:
            for col, text in zip(cols, (n, "error", v.error, "", "", "ERROR")):
                col.append(esc(text))
        for c in v.checks:
            band = f"{c.band[0]}..{c.band[1]} ms" if c.band else c.kind
            verdict = "info" if c.kind == "info" else ("ok" if c.ok else "DIFFERS")
            for col, text in zip(cols, (n, c.name, _fmt(c.observed), _fmt(c.simulated), band, verdict)):
                col.append(esc(text))
    colour = [["#fde0d6" if x == "DIFFERS" else "white" for x in cols[5]]] * 6
    fig = go.Figure(go.Table(
        columnwidth=[120, 220, 300, 300, 90, 60],
        header=dict(values=["probe", "check", "real workerd", "simulator", "band / kind", "verdict"],
                    fill_color="#eef3f8", align="left", font=dict(size=12)),
        cells=dict(values=cols, align="left", fill_color=colour, font=dict(size=11), height=22)))
    fig.update_layout(title=dict(text="every check: real and simulated values side by side", x=0.01, xanchor="left"),
                      height=700, margin=dict(l=10, r=10, t=50, b=10))
    return fig


def write_html(cal: "Calibration", path: str | Path) -> Path:
    """One self-contained page: the verdict table, the timing bands, and one overlay per probe."""
    from .._files import check_output, write_text
    from ..viz.report import is_report

    out = check_output(path, ours=is_report, what="report")  # before the figures are drawn
    figures = [band_figure(cal), details_figure(cal)]
    rows = _rows(cal)
    for n in cal.verdicts:
        try:
            figures.append(overlay_figure(n, cal))
            d = probe_diff(n, cal)
        except AlarmkitError:
            continue  # a probe that failed on one side has no runs to draw; its row says why
        rows.append((f"{n}: real vs simulated", "\n".join(d.summary().splitlines()[:2]), d.first_divergence is not None))
    return write_text(out, report_html(figures, f"alarmkit calibration · workerd {cal.version}", rows),
                      ours=is_report, what="report")
