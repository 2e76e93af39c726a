"""The timeline's drawing: one lane per object (and one for the runtime); inside a lane three sub-rows:
the alarm (arms, moves, retry waits), the handler (fires, outcomes, spans) and what the handler did
(effects, crashes). Styles, escaping and the frame helpers live in ``_timeline``; label placement in
``_labels``.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..journal import DEATH, DUPLICATE, kind_class
from ._labels import place_labels
from ._timeline import _FONT, _LINE_CLASS, BLACK, BLUE, DENSITY_BINS, DENSITY_SCALE, DETAIL_IN_VIEW, DETAIL_LIMIT, GREEN, GREY, HOVER_CHARS, KIND_STYLE, LABEL_CHARS, LABEL_LIMIT, NOTABLE, ORANGE, OVERVIEW_THRESHOLD, PURPLE, ROW_GAP, RUNTIME_LANE, SHAPE_LIMIT, TICK_LIMIT, VERMILION, _details, _hover, _label, _lanes, _mark_duplicates, _pairs, _unit, esc, fmt_ms, style
from ..errors import AlarmkitError

DODGE = 0.09  # lanes between markers of different kinds stacked at one spot
SVG_NOTABLE = 2_000  # up to this many events of a notable kind, the overview draws them in SVG


class _Drawer:
    """Draws one run (or one label of ``compare``) into one row of a subplot figure."""

    def __init__(self, fig: go.Figure, scale: int, unit: str, large: bool, view_ms: float, overview: bool = False) -> None:
        self.fig, self.scale, self.unit, self.large, self.view_ms = fig, scale, unit, large, view_ms
        self.overview = overview  # open on a density map; the common events wait for a zoom
        self.shown: set[str] = set()
        self.shapes: list[dict] = []
        self.size_factor = 1.0  # markers shrink when lanes are only a few pixels tall
        self.data_ms = (0.0, 1.0)  # the whole run's time span, for the density bins
        self.by_class = False  # legend entries per kind (False) or per class of alarmkit._kinds

    def trace(self, row: int, name: str, group: str, meta: dict, **kw: Any) -> None:
        cls = go.Scattergl if self.large else go.Scatter
        if self.by_class:  # one legend entry per class of alarmkit._kinds, lines with their events
            group = kind_class(_LINE_CLASS.get(meta["kind"], meta["kind"]))
            name = esc(group, LABEL_CHARS)
        show = group not in self.shown
        self.shown.add(group)
        notable = meta["role"] == "events" and meta["kind"] in NOTABLE and len(kw["x"]) <= SVG_NOTABLE
        if self.overview and not notable:  # a "notable" kind thousands strong is the bulk: it waits too
            kw["visible"] = "legendonly"  # greyed in the legend until a zoom brings it in
            meta = {**meta, "detail": True}
        elif self.overview:
            # what the overview opens on draws in SVG, so the page starts no WebGL until a zoom asks for
            # detail (software WebGL's start-up was ~0.8 s of a 1M-event first render); the report's
            # zoom script turns these traces to WebGL with the detail, so nothing is drawn under it
            cls = go.Scatter
            meta = {**meta, "svg_first": True}
        self.fig.add_trace(cls(name=name, legendgroup=group, showlegend=show, meta=meta, **kw), row=row, col=1)

    def density(self, df: pd.DataFrame, lanes: int, lo: float, hi: float, row: int) -> None:
        """Events per lane per time bin, as one heatmap under everything else (counts summed on zoom)."""
        edges = np.linspace(lo, max(hi, lo + 1), DENSITY_BINS + 1)
        b = np.clip(np.searchsorted(edges, df["t_ms"].to_numpy(float), side="right") - 1, 0, DENSITY_BINS - 1)
        counts = np.bincount(df["y"].to_numpy(int) * DENSITY_BINS + b, minlength=lanes * DENSITY_BINS)
        z = counts.reshape(lanes, DENSITY_BINS).astype(np.float32)
        top = float(np.percentile(z[z > 0], 98)) if (z > 0).any() else 1.0
        z[z == 0] = np.nan  # empty bins stay transparent
        self.fig.add_trace(go.Heatmap(
            x=((edges[:-1] + edges[1:]) / 2 / self.scale).astype(np.float32), y=np.arange(lanes, dtype=np.int32), z=z,
            # no gap between lanes: ygap=1 made plotly draw each cell apart, ~0.6 s of a 1M-event first render
            zmin=0, zmax=max(top, 1.0), colorscale=DENSITY_SCALE, showscale=False, ygap=0, name="event density",
            hovertemplate=f"%{{z:,}} events around %{{x:.4g}} {self.unit}<extra>density</extra>",
            meta={"role": "density"}), row=row, col=1)

    def draw(self, df: pd.DataFrame, row: int) -> list[str]:
        lanes = sorted(pd.unique(df["lane"]), key=lambda lane: (lane != RUNTIME_LANE, lane))  # runtime on top
        lane_y = {lane: i for i, lane in enumerate(lanes)}
        y = df["lane"].map(lane_y).to_numpy(float)
        x = df["t_ms"].to_numpy(float) / self.scale
        df = df.assign(x=x, y=y)
        if self.overview:
            self.density(df, len(lanes), *self.data_ms, row)
        self.spans(df, row)
        self.moves(df, row)
        self.links(df, lane_y, row)
        if not self.large:
            df = df.assign(dy=self.dodge(df))
        present = set(df["kind2"].unique())
        for kind in [*KIND_STYLE, *sorted(present - set(KIND_STYLE))]:  # every kind, the known ones in legend order
            if kind in present:
                self.events(df[df["kind2"] == kind], kind, row)
        self.restarts(df, row)
        return lanes

    def dodge(self, df: pd.DataFrame) -> np.ndarray:
        """Markers of different kinds at one spot (same lane and sub-row, within ~12 px of a 1,000 px
        plot) are stacked a little apart instead of drawn over each other: e.g. the runtime's fire,
        the keepalive's fire and the revival at one instant. Returns each event's shift in lanes."""
        order = {k: i for i, k in enumerate(KIND_STYLE)}
        key = pd.DataFrame({"y": df["y"].to_numpy(), "row": [style(k)[3] for k in df["kind2"]],
                            "bin": np.floor((df["x"].to_numpy(float) * self.scale) / self.view_ms * 1000 / 12),
                            "rank": [order.get(k, len(order)) for k in df["kind2"]], "kind": df["kind2"].to_numpy()},
                           index=df.index)
        kinds = key.drop_duplicates(["y", "row", "bin", "kind"]).sort_values("rank")
        spot = kinds.groupby(["y", "row", "bin"], sort=False)
        kinds = kinds.assign(i=spot.cumcount(), n=spot["kind"].transform("size"))
        step = (kinds["i"] - (kinds["n"] - 1) / 2) * DODGE
        shift = key.merge(kinds.assign(step=step)[["y", "row", "bin", "kind", "step"]], how="left",
                          on=["y", "row", "bin", "kind"])["step"]
        return shift.fillna(0).to_numpy(float)

    def spans(self, df: pd.DataFrame, row: int) -> None:
        h = df[df["kind"].isin(["fire", "handler_ok", "handler_error"])].sort_values("seq")
        nxt = h.groupby("lane", sort=False)[["kind", "t_ms", "x"]].shift(-1)
        ends = (("handler_ok", GREEN, "handler ran (ok)"), ("handler_error", VERMILION, "handler ran (error)"))
        for end, colour, label in ends:
            m = (h["kind"] == "fire") & (nxt["kind"] == end) & (nxt["t_ms"] > h["t_ms"])
            if m.any():
                xs, ys = _pairs(h.loc[m, "x"], h.loc[m, "y"], nxt.loc[m, "x"], h.loc[m, "y"])
                self.trace(row, label, f"span:{end}", {"role": "span", "kind": end}, x=xs, y=ys,
                           mode="lines", line=dict(color=colour, width=max(2, round(9 * self.size_factor))), opacity=0.35,
                           hoverinfo="skip")

    def moves(self, df: pd.DataFrame, row: int) -> None:
        arm = df[(df["kind"] == "arm") & df["scheduled_ms"].notna()]
        user = arm[arm["retry_count"].isna()]  # a retry's arm is drawn from its retry_scheduled event
        again = user["detail"].astype(str).str.contains(r'"in_alarm":\s*true', regex=True)
        rearm, user = user[again], user[~again]  # set while alarm() ran (arm_detail; a real run's import): a re-arm
        moved = user[user["prev_scheduled_ms"].notna() & (user["prev_scheduled_ms"] != user["scheduled_ms"])]
        new = user[user["prev_scheduled_ms"].isna() & (user["scheduled_ms"] != user["t_ms"])]
        retry = df[(df["kind"] == "retry_scheduled") & df["scheduled_ms"].notna()]
        lib = df[(df["kind"] == "lib_schedule") & df["scheduled_ms"].notna() & (df["scheduled_ms"] > df["t_ms"])]
        new, moved, retry, rearm = (self.cut_at_change(df, x) for x in (new, moved, retry, rearm))
        groups = [  # (legend, role, events, start column, line, opacity, offset from the alarm row)
            ("alarm armed → due", "lead", new, "t_ms", dict(color=BLUE, width=1, dash="dot"), 0.6, 0.07),
            ("alarm moved earlier", "earlier", moved[moved["scheduled_ms"] < moved["prev_scheduled_ms"]],
             "prev_scheduled_ms", dict(color=BLUE, width=2.5), 1.0, -0.1),
            ("alarm moved later", "later", moved[moved["scheduled_ms"] > moved["prev_scheduled_ms"]],
             "prev_scheduled_ms", dict(color=ORANGE, width=2.5, dash="dash"), 1.0, 0.0),
            ("re-armed in alarm()", "rearm", rearm, "t_ms", dict(color=GREEN, width=2, dash="dashdot"), 0.9, -0.05),
            ("retry backoff", "retry", retry, "t_ms", dict(color=PURPLE, width=2), 0.9, 0.0),
            ("library schedule → due", "lib", lib, "t_ms", dict(color=GREEN, width=1, dash="dot"), 0.7, 0.14),
        ]
        for name, role, sub, start, line, opacity, dy in groups:
            if not sub.empty and not (self.large and role == "lead"):  # leads are the bulk of a big file
                self.arrows(sub, start, name, role, line, opacity, dy, row)
        wide = retry[(retry["scheduled_ms"] - retry["t_ms"]) >= 0.01 * self.view_ms]  # room for a label
        if 0 < len(wide) <= LABEL_LIMIT:  # the rung, written over the middle of its wait
            self.rung_labels(wide, "rung", "base_ms", row)
        ka = df[(df["kind"] == "keepalive_arm") & df["scheduled_ms"].notna()]  # the keepalive's rungs, alike
        wide = ka[(ka["scheduled_ms"] - ka["t_ms"]) >= 0.01 * self.view_ms]
        if 0 < len(wide) <= LABEL_LIMIT:
            self.rung_labels(wide, "keepalive rung", "lead_ms", row)

    def cut_at_change(self, df: pd.DataFrame, sub: pd.DataFrame) -> pd.DataFrame:
        """``sub`` with ``end_ms``: where its alarm line ends, its due time or, when the code set, moved or
        deleted the alarm before then (or a retry re-armed it), that change's time; ``ended_by`` names it."""
        changes = df[df["kind"].isin(["arm", "disarm"])][["lane", "seq", "t_ms", "kind"]].sort_values("seq")
        end = sub["scheduled_ms"].astype(float).to_numpy().copy()
        by = np.array([""] * len(sub), dtype=object)
        for lane, group in changes.groupby("lane", sort=False):
            mine = (sub["lane"] == lane).to_numpy()
            if not mine.any():
                continue
            seqs = group["seq"].to_numpy()
            at = np.searchsorted(seqs, sub.loc[mine, "seq"].to_numpy(), side="right")
            ok = at < len(seqs)
            idx = np.flatnonzero(mine)[ok]
            t_next = group["t_ms"].to_numpy(float)[at[ok]]
            kind_next = group["kind"].to_numpy()[at[ok]]
            sooner = t_next < end[idx]
            end[idx[sooner]] = t_next[sooner]
            by[idx[sooner]] = np.where(kind_next[sooner] == "disarm", "deleted", "replaced")
        return sub.assign(end_ms=end, ended_by=by)

    def rung_labels(self, waits: pd.DataFrame, kind: str, field: str, row: int) -> None:
        """The real wait (``+2.432 s``: armed to due) over the middle of each wait (a retry's backoff, a
        keepalive's lead); the nominal rung and the jitter in its hover."""
        waits = waits.sort_values(["y", "t_ms"])
        t0, t1 = waits["t_ms"].to_numpy(float), waits["scheduled_ms"].to_numpy(float)
        mid_ms = (t0 + t1) / 2
        lane = waits["y"].to_numpy()
        where = "top center"  # alarmkit._labels moves a label that would cover another
        text = [f"+{fmt_ms(b - a)}" for a, b in zip(t0, t1)]
        hover = [f"{esc(kind)}: waited {fmt_ms(b - a)}"
                 + (f"<br>nominal +{fmt_ms(d[field])}" if isinstance(d.get(field), (int, float)) else "")
                 + (f", jitter +{fmt_ms(d['jitter_ms'])}" if isinstance(d.get("jitter_ms"), (int, float)) else "")
                 + (f"<br>rung {d['rung']}" if isinstance(d.get("rung"), int) else "")
                 for a, b, d in zip(t0, t1, _details(waits["detail"]))]
        self.fig.add_trace(go.Scatter(x=mid_ms / self.scale, y=lane - ROW_GAP, text=text, mode="text",
                                      textposition=where, textfont=dict(size=11, color="#8a3d6b"),
                                      hovertext=hover, hovertemplate="%{hovertext}<extra></extra>",
                                      showlegend=False, meta={"role": "label", "kind": kind}),
                           row=row, col=1)

    def arrows(self, sub: pd.DataFrame, start: str, name: str, role: str, line: dict, opacity: float, dy: float,
               row: int) -> None:
        t0 = sub[start].to_numpy(float)
        t1 = sub["end_ms"].to_numpy(float) if "end_ms" in sub else sub["scheduled_ms"].to_numpy(float)
        t1 = np.where(t1 > t0, t1, sub["scheduled_ms"].to_numpy(float))  # a change before the line starts: due
        yy = sub["y"].to_numpy(np.float32) - np.float32(ROW_GAP - dy)
        xs, ys = _pairs(t0 / self.scale, yy, t1 / self.scale, yy)
        kw: dict[str, Any] = dict(mode="lines", line=line, opacity=opacity)
        if self.large:
            kw.update(hoverinfo="skip", line=dict(line, width=1))
        else:
            if role != "lead":
                kw.update(mode="lines+markers", marker=dict(symbol="arrow", angleref="previous", color=line["color"],
                                                            size=np.tile([0, 11, 0], len(sub))))
            by = sub["ended_by"] if "ended_by" in sub else pd.Series([""] * len(sub), index=sub.index)
            hover = [f"{esc(name)} at {fmt_ms(t)}: {fmt_ms(a)} → {fmt_ms(due)}"
                     + (f"<br><b>{e} at {fmt_ms(b)}</b>, before it was due" if e and b < due else "")
                     + f"<br>object: {esc(_label(lane), HOVER_CHARS)}"
                     for t, a, b, due, e, lane in zip(sub["t_ms"], t0, t1, sub["scheduled_ms"], by, sub["lane"])]
            kw.update(hovertext=np.repeat(hover, 3), hovertemplate="%{hovertext}<extra></extra>")
        self.trace(row, name, f"move:{role}", {"role": "move", "kind": role}, x=xs, y=ys, **kw)

    def links(self, df: pd.DataFrame, lane_y: dict, row: int) -> None:
        dup = df[df["kind2"] == DUPLICATE]
        if dup.empty:
            return
        y0 = dup["first_lane"].map(lane_y).to_numpy(float) + ROW_GAP
        y1 = dup["y"].to_numpy(float) + ROW_GAP
        x0 = dup["first_t"].to_numpy(float) / self.scale
        x1 = dup["x"].to_numpy(float)
        bump = ROW_GAP * 0.8
        gap = np.full(len(dup), np.nan)
        xs = np.column_stack([x0, x0, x1, x1, gap]).ravel()
        ys = np.column_stack([y0, y0 + bump, y1 + bump, y1, gap]).ravel().astype(np.float32)
        self.trace(row, "same effect ran again", "link", {"role": "link", "kind": DUPLICATE}, x=xs, y=ys,
                   mode="lines", line=dict(color=VERMILION, width=1 if self.large else 1.5, dash="dot"), hoverinfo="skip")

    def events(self, sub: pd.DataFrame, kind: str, row: int) -> None:
        colour, symbol, size, offset = style(kind)
        n = len(sub)
        ys = sub["y"].to_numpy(np.float32) + np.float32(offset * ROW_GAP)
        if "dy" in sub:
            ys = ys + sub["dy"].to_numpy(np.float32)
        size = max(3, round(size * self.size_factor))
        outline = "#333" if kind == "fault" else colour  # yellow needs a dark edge on white
        marker = dict(color=colour, symbol=symbol, size=size, line=dict(width=1, color=outline))
        kw: dict[str, Any] = dict(mode="markers", marker=marker)
        if n <= DETAIL_LIMIT or not self.large:
            kw.update(hovertext=_hover(sub, kind, detailed=n <= DETAIL_LIMIT),
                      hovertemplate="%{hovertext}<extra></extra>")
        else:
            kw.update(hovertemplate=f"<b>{esc(kind, HOVER_CHARS)}</b> at %{{x}} {self.unit}<extra></extra>")
        text = self.labels(sub, kind)
        if text is not None:
            where = "bottom left" if kind == "abandoned" else "bottom center"
            kw.update(mode="markers+text", text=text, textposition=where,
                      textfont=dict(size=11, color=LABEL_INK.get(kind, colour)))
        meta = {"role": "events", "kind": kind, "class": kind_class(kind), "size": style(kind)[2]}  # the full size, for zooming in
        uid = f"ev-{re.sub(r'[^A-Za-z0-9_-]', '_', kind)}-{row}"  # the DOM names the trace's group after it
        self.trace(row, esc(kind, LABEL_CHARS), kind, meta, x=sub["x"].to_numpy(float), y=ys, uid=uid, **kw)

    def labels(self, sub: pd.DataFrame, kind: str) -> list[str] | None:
        if len(sub) > LABEL_LIMIT:
            return None
        if kind == "revive":
            return [f"revive ({esc(d.get('cause', '?'), LABEL_CHARS)})" for d in _details(sub["detail"])]
        if kind == "abandoned":
            return [f"abandoned after {esc(d.get('attempts', '?'), LABEL_CHARS)} attempts" for d in _details(sub["detail"])]
        if len(sub) > 12:
            return None
        if kind in ("crash", "restart", DEATH):
            return [kind] * len(sub)
        if kind == "fault":
            return [esc(f"fault: {d.get('fault') or d.get('name') or d.get('kind') or '?'}", LABEL_CHARS)
                    for d in _details(sub["detail"])]
        return None

    def restarts(self, df: pd.DataFrame, row: int) -> None:
        """Each restart: a dotted line, and its downtime shaded (shapes collected, set once: add_vrect is slow)."""
        r = df[df["kind"] == "restart"]
        if r.empty or len(r) > SHAPE_LIMIT:
            return
        xref, yref = ("x", "y domain") if row == 1 else (f"x{row}", f"y{row} domain")
        for t, d in zip(r["t_ms"], _details(r["detail"])):
            x0 = t / self.scale
            x1 = (t + (d.get("downtime_ms") or 0)) / self.scale
            self.shapes.append(dict(type="rect", x0=x0, x1=x1, y0=0, y1=1, xref=xref, yref=yref, fillcolor=GREY,
                                    opacity=0.15, line_width=0, layer="below"))
            self.shapes.append(dict(type="line", x0=x0, x1=x0, y0=0, y1=1, xref=xref, yref=yref,
                                    line=dict(color=BLACK, width=1, dash="dot")))


# label text darker than its marker where the marker's colour is too light to read on white
LABEL_INK = {"revive": "#005a44", "fault": "#7a6400"}


def _focus(panels: list[tuple[str, pd.DataFrame]]) -> tuple[float, float, float]:
    """(start, end of the opening view, end of the data): the view stops before trailing idle evictions."""
    t = pd.concat([df["t_ms"] for _, df in panels])
    busy = pd.concat([df.loc[df["kind"] != "evict", "t_ms"] for _, df in panels])
    lo, hi = float(min(0, t.min())), float(t.max())
    return lo, (float(busy.max()) if len(busy) else hi), hi


def _build(panels: list[tuple[str, pd.DataFrame]], title: str, gl_threshold: int,
           overview_threshold: int = OVERVIEW_THRESHOLD, legend: str = "kind",
           window: tuple[int, int] | None = None) -> go.Figure:
    if legend not in ("kind", "class"):
        raise AlarmkitError(f"legend must be 'kind' or 'class', got {legend!r}")
    panels = [(label, _mark_duplicates(_lanes(df))) for label, df in panels]
    total = sum(len(df) for _, df in panels)
    lo, view_hi, hi = _focus(panels) if window is None else (*map(float, window), float(window[1]))
    unit, scale = _unit(view_hi - lo)
    lane_counts = [max(1, df["lane"].nunique()) for _, df in panels]
    lanes_total = sum(lane_counts)
    per_lane = 100 if lanes_total <= 4 else 72 if lanes_total <= 12 else max(12, 1100 // lanes_total)
    heights = [60 + per_lane * n for n in lane_counts]
    gap = 70 if len(panels) > 1 else 0
    plot_h = sum(heights) + gap * (len(panels) - 1)
    fig = make_subplots(rows=len(panels), cols=1, shared_xaxes=True, vertical_spacing=gap / plot_h,
                        row_heights=heights, subplot_titles=[esc(label, 2 * LABEL_CHARS) for label, _ in panels] if len(panels) > 1 else None)
    drawer = _Drawer(fig, scale, unit, large=total > gl_threshold, view_ms=max(view_hi - lo, 1.0),
                     overview=total > max(gl_threshold, overview_threshold))
    drawer.data_ms = (lo, hi)
    drawer.by_class = legend == "class"
    drawer.size_factor = min(1.0, max(0.2, min(per_lane, 2600 / lanes_total) / 60))
    names: dict[str, list[str]] = {}  # every lane's name by y axis, for the page script's zoomed ticks
    for i, (_, df) in enumerate(panels, start=1):
        lanes = drawer.draw(df, i)
        n = len(lanes)
        names["yaxis" if i == 1 else f"yaxis{i}"] = [esc(_label(s), LABEL_CHARS) for s in lanes]
        every = -(-n // TICK_LIMIT)  # hundreds of tick labels make plotly's first render crawl
        fig.update_yaxes(row=i, col=1, tickvals=list(range(0, n, every)), ticktext=names["yaxis" if i == 1 else f"yaxis{i}"][::every],
                         range=[n - 0.4, -0.62], showgrid=True, gridcolor="#e3e3e3", zeroline=False,
                         fixedrange=n < 30, ticks="", automargin=True)
    pad = max((view_hi - lo) * (0.01 if window else 0.04), 1.0)  # a window asked for is the view, nearly to the ms
    # the overview draws a density map and the notable kinds in SVG: "WebGL" only of what is drawn in it
    note = f"{total:,} events" + (" · WebGL" if drawer.large and not drawer.overview else "")
    # the subtitles once a zoom draws every event in view, in WebGL or (few in view) in SVG; the page
    # script swaps them
    detail_note = svg_note = ""
    if drawer.overview:
        how = (f" · in detail: every event in and around the view is drawn; zoom out past "
               f"{DETAIL_IN_VIEW:,} events in view for the density map")
        detail_note, svg_note = f"{total:,} events · WebGL{how}", f"{total:,} events · SVG{how}"
        note += (f" · zoomed out: events per lane and time (darker = more) and the notable ones "
                 f"(kinds of at most {SVG_NOTABLE:,} events); zoom in on fewer than "
                 f"{DETAIL_IN_VIEW:,} events to draw each one")
    if view_hi < hi:  # the view opens on the alarm activity; autoscale shows the idle evictions after it
        ends = f" · view ends at {fmt_ms(view_hi)}; idle evictions until {fmt_ms(hi)} (double-click to see all)"
        note += ends
        detail_note += ends if detail_note else ""
        svg_note += ends if svg_note else ""
    fig.update_xaxes(showgrid=True, gridcolor="#eeeeee", zeroline=False, ticks="outside", showline=True,
                     linecolor="#999", range=[(lo - pad) / scale, (view_hi + (1 if window else 3) * pad) / scale])
    fig.update_xaxes(title_text=f"virtual time ({unit})", row=len(panels), col=1)
    fig.update_layout(shapes=drawer.shapes)
    if len(panels) > 1:  # zoom on one row moves the others
        fig.update_xaxes(matches="x")
    legend_h = 30 * -(-sum(1 for t in fig.data if t.showlegend) // (4 if drawer.by_class else 5)) + 10  # entries a row
    fig.update_layout(
        template="plotly_white", font=_FONT, height=min(2600, plot_h + 95 + 60 + legend_h),
        title=dict(text=esc(title, 3 * LABEL_CHARS), x=0.01, xanchor="left", y=1, yref="container", yanchor="top", pad=dict(t=14),
                   subtitle=dict(text=note, font=dict(size=12, color="#666"))),
        legend=dict(orientation="h", yref="container", y=0.005, yanchor="bottom", x=0, xanchor="left",
                    groupclick="toggleitem", itemsizing="constant", font=dict(size=12), entrywidth=160),
        hoverlabel=dict(bgcolor="white", font=dict(size=12, family=_FONT["family"]), align="left"),
        hovermode="closest", margin=dict(l=20, r=20, t=80, b=60 + legend_h),
        meta={"unit": unit, "scale": scale, "events": total, "large": drawer.large,
              "detail_in_view": DETAIL_IN_VIEW if drawer.overview else 0, "gl_threshold": gl_threshold,
              "subtitles": {"overview": note, "detail": detail_note, "detail_svg": svg_note} if drawer.overview else {},
              "lanes": names, "tick_limit": TICK_LIMIT},
    )
    place_labels(fig)
    if drawer.by_class:
        # four entries a row in a ~560 px plot: 92 px of text beside each 40 px symbol
        fig.update_layout(legend=dict(groupclick="togglegroup", entrywidth=92, font=dict(size=10)))
    return fig
