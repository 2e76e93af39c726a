"""The explorer's figure: the whole run's timeline laid out once per run for the widget, and the run as
it stood at an instant (the events up to then, a "now" cursor) drawn from it.

The layout is fixed, not left to plotly's automatic margins: plotly grows the bottom margin for the
overview strip (its range slider) and the left one for the lane names after the labels were placed,
which shrank the plot under them and made them overlap. Here every margin is set (``autoexpand``
off), so the plot area the labels are placed for is the one drawn, for a figure ``FIGURE_PX`` wide
or wider (the widget's width: wider only spreads the marks apart).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .._text import esc, fmt_ms
from ._fold import Fold, apply_folds, find_gaps, fold_of, fold_x, make_folds, ticks
from ._labels import place_labels
from ._timeline import _unit

FIGURE_PX = 700  # the narrowest explorer figure the labels are placed for (plotly's default width)
FRAMES = 120  # Play steps through at most this many instants, the last one the run's last event
NAME_PX, TICK_PX, SLIDER_PX, TITLE_PX, GAP_PX = 8.0, 30, 44, 26, 8  # the bottom margin, top to bottom
BAND_PX = 34  # two lines over the lanes, inside the plot: the "now" label, and the cut marker above it


def nothing_yet(t_ms: int, end_ms: int) -> go.Figure:
    """The empty state of a run with no events at all: its time axis and a line saying so."""
    unit, scale = _unit(end_ms)
    return go.Figure(layout=dict(
        template="plotly_white", height=300, title=dict(text="timeline", x=0.01, xanchor="left"),
        xaxis=dict(range=[0, end_ms / scale], title_text=f"virtual time ({unit})", showline=True, linecolor="#999"),
        yaxis=dict(visible=False, range=[0, 1]), meta={"unit": unit, "scale": scale, "events": 0},
        annotations=[dict(text=f"nothing has happened by {t_ms / 1000:.3f} s", x=0.5, y=0.5, xref="paper",
                          yref="paper", showarrow=False, font=dict(size=15, color="#666"))]))


def for_widget(fig: go.Figure, events: pd.DataFrame) -> go.Figure:
    """The whole run's timeline fitted to the widget, built once per run so that scrubbing never moves
    the lanes, the height or the unit: the subtitle folded into the title (two lines of one text), the
    x axis on the activity (the idle tail cut, long idle stretches inside folded, each with a marker),
    under it the whole run as an overview strip (plotly's range slider) to brush a range, and every
    margin fixed so that the labels are placed for the plot area that is drawn."""
    meta = dict(fig.layout.meta or {})
    scale = meta.get("scale") or 1
    t = events["t_ms"].to_numpy(float)
    busy = events.loc[events["kind"] != "evict", "t_ms"]
    lo_ms, end_ms = float(min(0.0, t.min())), float(t.max())
    hi_ms = float(busy.max()) if len(busy) else end_ms
    lay = fig.layout
    names = (meta.get("lanes") or {}).get("yaxis") or []
    left = int(min(360, NAME_PX * max((len(n) for n in names), default=4) + 24))
    legend_px = (lay.margin.b or 60) - 60  # _build's legend rows under the plot
    area = (lay.height or 450) - (lay.margin.t or 80) - (lay.margin.b or 60)
    bottom = TICK_PX + GAP_PX + SLIDER_PX + GAP_PX + TITLE_PX + GAP_PX + legend_px
    plot_px = FIGURE_PX - left - 20
    large = bool(meta.get("large"))  # WebGL hovers say %{x}: a folded axis would show folded numbers
    folds = [] if large else make_folds(find_gaps(t, lo_ms, hi_ms), lo_ms, hi_ms, scale, plot_px)
    note = lay.title.subtitle.text or ""
    if hi_ms < end_ms:
        note = note.split(" · view ends at")[0] + f" · idle after {fmt_ms(hi_ms)} cut (the strip below: the whole run)"
    if folds:
        note += f" · {len(folds)} idle stretch{'es' if len(folds) > 1 else ''} folded (shaded)"
        apply_folds(fig, folds, scale)
    x = lambda ms: float(fold_x(ms / scale, folds, scale))  # noqa: E731 - true ms to the (folded) axis
    pad = 0.04 * max(x(hi_ms) - x(lo_ms), 1e-9)
    lo, hi = x(lo_ms) - pad, x(hi_ms) + 3 * pad
    fig.update_layout(title=dict(text=f"{lay.title.text}<br><span style='font-size:12px;color:#666'>{note}</span>",
                                 subtitle=dict(text="")))
    fig.update_xaxes(range=[lo, hi], rangeslider=dict(visible=True, thickness=SLIDER_PX / area, bgcolor="#f4f4f4",
                                                      range=[lo, max(hi, x(end_ms) + pad)]))
    if folds:
        vals, text, unit = ticks(folds, lo_ms, max(hi_ms, end_ms), scale, plot_px)
        fig.update_xaxes(tickvals=vals, ticktext=text, title_text=f"virtual time ({unit}) · idle stretches folded")
    fig.update_yaxes(automargin=False)
    y0, y1 = fig.layout.yaxis.range  # the lanes: bottom, top (reversed)
    top = y1 - (y0 - y1) * BAND_PX / (area - BAND_PX)
    fig.layout.yaxis.range = [y0, top]
    shapes = []  # a restart's line and downtime, a fold's band: over the lanes, under the band
    for sh in fig.layout.shapes or ():
        j = sh.to_plotly_json()
        if str(j.get("yref", "")).endswith("domain"):
            j.update(yref=str(j["yref"]).split(" ")[0], y0=y0, y1=y1)
        shapes.append(j)
    fig.layout.shapes = shapes
    fig.update_layout(height=int((lay.margin.t or 80) + area + bottom), width=None, autosize=True,
                      margin=dict(l=left, r=20, b=bottom, autoexpand=False))
    meta.update(view=[lo, hi], cut=hi_ms < end_ms, end_ms=int(end_ms), yrange=[y0, y1], ytop=top,
                plot_px=plot_px, folds=[[f.start_ms, f.end_ms, f.x0, f.x1] for f in folds])
    fig.update_layout(meta=meta)
    _labels_off_the_strip(fig)
    place_labels(fig, plot_px)  # the labels were placed for a report's wider plot
    return fig


def _labels_off_the_strip(fig: go.Figure) -> None:
    """Every label onto ``x2``, an invisible axis laid over ``x`` and moving with it: plotly's range slider
    draws the traces of ``x`` only, and labels squeezed into its strip would sit on each other. A
    marker's label becomes a text trace of its own on ``x2`` carrying the marker's size (drawn
    transparent, never hovered), so it is placed beside its marker as before."""
    fig.update_layout(xaxis2=dict(overlaying="x", matches="x", visible=False))
    extra = []
    for t in fig.data:
        if not isinstance(t, go.Scatter) or t.text is None or isinstance(t.text, str) or "text" not in (t.mode or ""):
            continue
        if "markers" not in t.mode:
            t.xaxis = "x2"
            continue
        meta = dict(t.meta or {}, role="label")
        extra.append(go.Scatter(x=t.x, y=t.y, text=t.text, mode="markers+text", textposition=t.textposition,
                                textfont=t.textfont, xaxis="x2", yaxis=t.yaxis, hoverinfo="skip", showlegend=False,
                                marker=dict(size=t.marker.size, symbol=t.marker.symbol, opacity=0), meta=meta,
                                name=t.name))
        t.mode, t.text = "markers", None
    fig.add_traces(extra)


def frames(events: pd.DataFrame) -> list[int]:
    """The instants Play steps through: the run's distinct event times, thinned to ``FRAMES``, always
    ending on the last one (so Play ends with every event drawn)."""
    times = sorted(set(int(t) for t in events["t_ms"])) if len(events) else [0]
    if len(times) > FRAMES:
        step = len(times) / (FRAMES - 1)
        times = [times[min(len(times) - 1, round(i * step))] for i in range(FRAMES - 1)] + [times[-1]]
    return sorted(set(times))


def upto(trace: dict, x_t: float) -> dict:
    """``trace`` (plotly JSON) with what happened after ``x_t`` left out: a marker or label by its own x;
    a line (segments split by gaps) by where it starts, so an arm's arrow shows the due time it set.
    A fold's marker is part of the axis: always kept."""
    xs = trace.get("x")
    role = (trace.get("meta") or {}).get("role")
    if xs is None or role == "fold":
        return trace
    x = np.asarray(xs, dtype=float)
    gap = np.isnan(x)
    if role in ("events", "label") or not gap.any():
        keep = ~gap & (x <= x_t)
    else:
        group = np.cumsum(gap)  # a segment and the gap that ends it share a number... the gap starts the next
        first = {}
        for g, v, is_gap in zip(group, x, gap):
            if not is_gap and g not in first:
                first[g] = v
        starts = np.array([first.get(g, np.inf) for g in group])
        keep = np.where(gap, np.roll(starts, 1) <= x_t, starts <= x_t)
    n = len(x)

    def cut(v: Any) -> Any:
        if isinstance(v, (list, tuple, np.ndarray)) and len(v) == n and not isinstance(v, str):
            return np.asarray(v, dtype=object if not isinstance(v, np.ndarray) else v.dtype)[keep]
        return v

    out = {k: cut(v) for k, v in trace.items()}
    if isinstance(trace.get("marker"), dict):
        out["marker"] = {k: cut(v) for k, v in trace["marker"].items()}
    return out


def at_instant(full: go.Figure, t_ms: int, head: str, nothing: bool) -> go.Figure:
    """``full`` (from ``for_widget``) as it stood at ``t_ms``: what happened later left out, the "now"
    cursor and its label, the cut marker; the title's first line ``head``."""
    meta = full.layout.meta
    scale = meta.get("scale") or 1
    folds = [Fold(*f) for f in meta.get("folds") or []]
    x_t = float(fold_x(t_ms / scale, folds, scale))
    fig = go.Figure(layout=full.layout)
    fig.add_traces([upto(t.to_plotly_json(), x_t) for t in full.data])
    fig.layout.shapes = [s for s in full.layout.shapes if s.name == "fold" or s.x0 is None or s.x0 <= x_t]
    lo, hi = meta["view"]
    y0, y1 = meta["yrange"]
    past, at = x_t > hi, min(x_t, hi)
    idle = fold_of(at, folds)
    if idle is not None:  # the cursor stands in a fold: it says so, and the fold's marker gives it the room
        for tr in fig.data:
            if (tr.meta or {}).get("role") == "fold":
                tr.text = ["" if f == idle else text for f, text in zip(folds, tr.text)]
    fig.add_trace(go.Scatter(x=[at, at], y=[y0, y1], mode="lines", line=dict(color="#333", width=1.5, dash="dash"),
                             hoverinfo="skip", showlegend=False, name="now", meta={"role": "cursor"}, uid="alarmkit-now"))
    # the now label over the cursor's top end and the cut marker over the axis's right end stand in
    # the band over the lanes, where no mark is
    label = f"now {fmt_ms(t_ms)}" + (" (idle, folded)" if idle else "") + (" ▸" if past else "")
    share = (at - lo) / max(hi - lo, 1e-12)
    fig.add_trace(go.Scatter(x=[at], y=[y1], mode="text", text=[label], textfont=dict(size=11, color="#333"),
                             textposition="top right" if share < 0.15 else "top left" if share > 0.85 else "top center",
                             xaxis="x2", hoverinfo="skip", showlegend=False, name="now label", meta={"role": "now"}))
    if meta.get("cut"):
        fig.add_trace(go.Scatter(x=[hi], y=[meta["ytop"]], mode="text", textposition="bottom left", showlegend=False,
                                 text=[f"idle until {fmt_ms(meta['end_ms'])}: cut ▸"], textfont=dict(size=11, color="#777"),
                                 xaxis="x2", hoverinfo="skip", name="cut", meta={"role": "cut"}))
    if nothing:
        fig.layout.annotations = [dict(text=f"nothing has happened by {t_ms / 1000:.3f} s", x=0.5, y=0.5,
                                       xref="paper", yref="paper", showarrow=False, font=dict(size=15, color="#666"))]
    place_labels(fig, meta.get("plot_px") or FIGURE_PX)  # again, around the cursor: no label on a vertical line
    note = full.layout.title.text.split("<br>", 1)
    fig.layout.title.text = esc(head) + ("<br>" + note[1] if len(note) > 1 else "")
    return fig


def redraw(widget: go.FigureWidget, fig: go.Figure) -> None:
    """Put ``fig`` in a live ``FigureWidget``: its traces and layout in one batch, then its shapes and
    annotations said outright (assigning a layout relays only the keys it has: a frame without restart
    lines would keep the previous frame's)."""
    with widget.batch_update():
        widget.data = ()
        widget.add_traces(list(fig.data))
        widget.layout = fig.layout
    widget.plotly_relayout({"shapes": [x.to_plotly_json() for x in fig.layout.shapes],
                            "annotations": [x.to_plotly_json() for x in fig.layout.annotations]})
