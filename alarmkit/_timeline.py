"""The timeline engine behind ``alarmkit.plots``: styles, lanes, traces. Journal frames in, a figure out.

One lane per object (and one for the runtime); inside a lane three sub-rows: the alarm (arms, moves,
retry waits), the handler (fires, outcomes, spans) and what the handler did (effects, crashes). Every
string that comes from a journal is escaped here before plotly sees it: plotly renders a subset of
HTML in labels and hover text.
"""

from __future__ import annotations

import html
import json
import re
import zlib
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ._kinds import DUPLICATE, kind_class
from ._labels import place_labels
from .errors import AlarmkitError
from .journal import EVENT_COLUMNS

# Okabe & Ito's palette (safe for the common colour-vision deficiencies); shapes repeat the meaning.
BLACK, ORANGE, SKY, GREEN, YELLOW = "#000000", "#E69F00", "#56B4E9", "#009E73", "#F0E442"
BLUE, VERMILION, PURPLE, GREY = "#0072B2", "#D55E00", "#CC79A7", "#8C8C8C"
RUNTIME_LANE = "runtime"

# kind -> (colour, symbol, size, sub-row offset within the lane: -1 alarm row, 0 handler row, 1 effects row)
KIND_STYLE: dict[str, tuple[str, str, int, int]] = {
    "arm": (BLUE, "triangle-down", 10, -1),
    "disarm": (BLUE, "triangle-down-open", 10, -1),
    "retry_scheduled": (PURPLE, "triangle-up", 11, -1),
    "fire": (ORANGE, "diamond", 15, 0),
    "fire_skipped": (ORANGE, "diamond-open", 15, 0),
    "handler_ok": (GREEN, "circle", 7, 0),
    "handler_error": (VERMILION, "square", 7, 0),
    "abandoned": (BLACK, "x", 13, 0),
    "revive": (GREEN, "star", 16, 0),
    "effect": (SKY, "circle", 10, 1),
    DUPLICATE: (VERMILION, "star-diamond", 16, 1),
    "crash": (VERMILION, "hexagram", 14, 1),
    "fault": (YELLOW, "bowtie", 14, 1),
    "restart": (BLACK, "hourglass", 13, 0),
    # facets, the guestbook keepalive and celld's waker (kinds other modules journal)
    "facet_broken": (VERMILION, "x-open", 12, 1),
    "actor_broken": (VERMILION, "hexagram-open", 14, 1),
    "proxy_arm": (BLUE, "triangle-down-dot", 10, -1),
    "proxy_deliver": (ORANGE, "diamond-wide", 12, 0),
    "keepalive_arm": (PURPLE, "triangle-down", 10, -1),
    "keepalive_disarm": (PURPLE, "triangle-down-open", 10, -1),
    "keepalive_fire": (PURPLE, "diamond", 12, 0),
    "revival": (GREEN, "star-open", 15, 0),
    "deploy": (BLACK, "star-triangle-up", 13, 1),
    "wake": (SKY, "circle-open-dot", 10, 0),
    "bucket": (GREY, "square-open", 8, -1),
    "construct": (GREY, "circle-open", 8, 1),
    "call": (GREY, "line-ns-open", 9, 1),
    "evict": (GREY, "x-thin-open", 9, 1),
}
_LINE_CLASS = {"lead": "arm", "earlier": "arm", "later": "arm", "retry": "retry_scheduled"}  # a move's class
_SPARE = ["circle-x", "square-x", "diamond-x", "cross", "pentagon", "hexagon", "triangle-left", "triangle-right"]
ROW_GAP = 0.27  # distance between a lane's sub-rows, in lane units
GL_THRESHOLD = 10_000  # above this many events in a figure, traces are WebGL (Scattergl)
OVERVIEW_THRESHOLD = 100_000  # above this many, the opening view is a density map plus the notable events
DETAIL_IN_VIEW = 100_000  # zoomed in on fewer events than this, every event is drawn (see report._ON_ZOOM)
NOTABLE = {DUPLICATE, "crash", "fault", "abandoned", "revive", "restart", "handler_error", "fire_skipped",
           "facet_broken", "actor_broken", "revival", "deploy"}  # drawn even in the zoomed-out overview
DENSITY_BINS = 800
DENSITY_SCALE = [[0, "#eaf2fa"], [0.1, "#c6dbef"], [0.3, "#85b5da"], [0.6, "#3f7fbf"], [1, "#08306b"]]
TICK_LIMIT = 60  # above this many lanes, only every k-th lane is named on the axis
DETAIL_LIMIT = 5_000  # above this many events of one kind, hover shows time and lane, not the detail
LABEL_LIMIT = 150  # above this many, retry rungs and revivals are not written on the plot
SHAPE_LIMIT = 200  # above this many restarts, no shaded downtime bands
_UNITS = [("ms", 1, 2_000), ("s", 1_000, 1_200_000), ("min", 60_000, 36_000_000), ("h", 3_600_000, None)]
_FONT = dict(family="Inter, system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif", size=13, color="#222")


def style(kind: str) -> tuple[str, str, int, int]:
    """A kind's (colour, symbol, size, sub-row); a kind this module does not know gets a stable spare one."""
    if kind in KIND_STYLE:
        return KIND_STYLE[kind]
    h = zlib.crc32(kind.encode())
    row = -1 if "arm" in kind else 0 if ("fire" in kind or "deliver" in kind) else 1
    return [BLACK, ORANGE, SKY, GREEN, BLUE, VERMILION, PURPLE, GREY][h % 8], _SPARE[(h // 8) % len(_SPARE)], 10, row


# Bidirectional controls reorder the text around them (U+202E shows "abc" as "cba"), and other
# control characters draw nothing: both are shown as visible escapes such as \u202e.
_INVISIBLE = re.compile("[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e"
                        "\u2066-\u2069\ufeff]")
LABEL_CHARS = 48  # an object id or kind longer than this is cut on the axis and in legends
HOVER_CHARS = 120  # ... and in hover text; the report's summary table holds the full text


def esc(text: Any, limit: int | None = None) -> str:
    """Text for plotly or an HTML page: control and bidirectional characters made visible (``\\u202e``),
    cut to ``limit`` characters with an ellipsis, then ``<``, ``>`` and ``&`` escaped, so a journal
    string never becomes markup. The one escaping function of the package.

    Quotes stay: outside a tag they are text, and plotly does not decode ``&quot;``."""
    s = "" if text is None else str(text)
    if limit is not None and len(s) > limit:
        s = s[:limit - 1] + "…"
    s = _INVISIBLE.sub(lambda m: f"\\u{ord(m.group()):04x}", s)
    s = s.encode("utf-8", "backslashreplace").decode("utf-8")  # a lone surrogate cannot be written out
    return html.escape(s, quote=False)


def fmt_ms(ms: float) -> str:
    """Exact, readable virtual time: ``850 ms``, ``3.072 s``, ``139.974 s``, ``12 min 5 s``, ``1 h 0 min 5 s``."""
    ms = int(ms)
    sign, ms = ("-" if ms < 0 else ""), abs(ms)
    if ms < 1_000:
        return f"{sign}{ms} ms"
    if ms < 600_000:
        return f"{sign}{ms / 1000:.3f}".rstrip("0").rstrip(".") + " s"
    h, rest = divmod(ms, 3_600_000)
    m, rest = divmod(rest, 60_000)
    sec = f"{rest / 1000:.3f}".rstrip("0").rstrip(".") + " s"
    return f"{sign}{h} h {m} min {sec}" if h else f"{sign}{m} min {sec}"


def _unit(span_ms: float) -> tuple[str, int]:
    for name, scale, upto in _UNITS:
        if upto is None or span_ms <= upto:
            return name, scale
    raise AssertionError("unreachable")  # pragma: no cover


def _check(events: Any, what: str = "events") -> pd.DataFrame:
    if not isinstance(events, pd.DataFrame):
        raise AlarmkitError(f"{what} must be a DataFrame from Journal.events(run_id), got {type(events).__name__}")
    missing = [c for c in EVENT_COLUMNS if c not in events.columns]
    if missing:
        raise AlarmkitError(f"{what} lack column(s) {missing}; pass Journal.events(run_id) (columns: {EVENT_COLUMNS})")
    return events


def _details(series: pd.Series) -> list[dict]:
    out = []
    for d in series:
        try:
            v = json.loads(d) if isinstance(d, str) else {}
        except ValueError:
            v = {"detail": d}
        out.append(v if isinstance(v, dict) else {"detail": v})
    return out


def effect_idents(df: pd.DataFrame) -> pd.Series:
    """``name`` NUL ``key as JSON`` of each effect row (DuckDB's JSON functions: one vectorised pass)."""
    detail = df.loc[df["kind"] == "effect", ["detail"]].astype(object)  # noqa: F841 - DuckDB reads it by name
    ident = duckdb.sql("SELECT coalesce(json_extract_string(detail, '$.name'), '') || chr(0) || "
                       "coalesce(CAST(json_extract(detail, '$.key') AS VARCHAR), 'null') AS i FROM detail").df()["i"]
    return pd.Series(ident.to_numpy(), index=detail.index, dtype=object)


def _mark_duplicates(df: pd.DataFrame) -> pd.DataFrame:
    """Split effects into first runs and duplicates; remember where each duplicate's first run was."""
    df = df.assign(kind2=df["kind"], first_t=np.nan, first_lane=None)
    eff = df["kind"] == "effect"
    if not eff.any():
        return df
    e = df.loc[eff, ["t_ms", "lane"]].assign(ident=effect_idents(df), run=df.loc[eff, "run_id"].fillna(-1).to_numpy())
    g = e.groupby(["run", "ident"], sort=False)
    dup = g.cumcount() > 0
    df.loc[dup[dup].index, "kind2"] = DUPLICATE
    df.loc[eff, "first_t"] = g["t_ms"].transform("first").astype(float)
    df.loc[eff, "first_lane"] = g["lane"].transform("first")
    return df


def drawn_kinds(events: pd.DataFrame) -> pd.Series:
    """Each event's kind as the timeline draws it: an effect that already ran is ``duplicate effect``."""
    return _mark_duplicates(_lanes(_check(events)))["kind2"]


def _lanes(df: pd.DataFrame) -> pd.DataFrame:
    obj = df["object_id"].astype(object)
    if df["namespace"].dropna().nunique() > 1:  # the same name may live in two namespaces
        obj = df["namespace"].astype(object) + ":" + obj
    return df.assign(lane=("·" + obj).where(obj.notna(), RUNTIME_LANE))


def _hover(df: pd.DataFrame, kind: str, detailed: bool) -> list[str]:
    rows = zip(df["t_ms"], df["lane"], df["scheduled_ms"], df["prev_scheduled_ms"], df["retry_count"],
               df["detail"], df["first_t"])
    out = []
    for t, lane, sch, prev, rc, det, first in rows:
        lines = [f"<b>{esc(kind, HOVER_CHARS)}</b> at {fmt_ms(t)}", f"object: {esc(_label(lane), HOVER_CHARS)}"]
        if not pd.isna(sch):
            lines.append(f"scheduled: {fmt_ms(sch)}")
        if not pd.isna(prev):
            lines.append(f"previously scheduled: {fmt_ms(prev)}")
        if not pd.isna(rc):
            lines.append(f"retry_count: {int(rc)}")
        if kind == DUPLICATE:
            lines.append(f"<b>already ran at {fmt_ms(first)}</b>")
        if detailed and isinstance(det, str):
            for k, v in _details([det])[0].items():
                text = f"{k}: {v if isinstance(v, str) else json.dumps(v, default=str)}"
                lines += [esc(text[i:i + 90]) for i in range(0, min(len(text), 450), 90)]
        out.append("<br>".join(lines))
    return out


def _label(lane: str) -> str:
    return lane[1:] if lane.startswith("·") else lane


def _pairs(x0, y0, x1, y1) -> tuple[np.ndarray, np.ndarray]:
    """Segments as one polyline with gaps: x0,x1,nan, x0,x1,nan, ..."""
    gap = np.full(len(x0), np.nan)
    return np.column_stack([x0, x1, gap]).ravel(), np.column_stack([y0, y1, gap]).ravel().astype(np.float32)


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
        if self.overview and not (meta["role"] == "events" and meta["kind"] in NOTABLE):
            kw["visible"] = "legendonly"  # greyed in the legend until a zoom brings it in
            meta = {**meta, "detail": True}
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
            zmin=0, zmax=max(top, 1.0), colorscale=DENSITY_SCALE, showscale=False, ygap=1, name="event density",
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
        present = set(df["kind2"].unique())
        for kind in [*KIND_STYLE, *sorted(present - set(KIND_STYLE))]:  # every kind, the known ones in legend order
            if kind in present:
                self.events(df[df["kind2"] == kind], kind, row)
        self.restarts(df, row)
        return lanes

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
        moved = user[user["prev_scheduled_ms"].notna() & (user["prev_scheduled_ms"] != user["scheduled_ms"])]
        new = user[user["prev_scheduled_ms"].isna() & (user["scheduled_ms"] != user["t_ms"])]
        retry = df[(df["kind"] == "retry_scheduled") & df["scheduled_ms"].notna()]
        groups = [  # (legend, role, events, start column, line, opacity, offset from the alarm row)
            ("alarm armed → due", "lead", new, "t_ms", dict(color=BLUE, width=1, dash="dot"), 0.6, 0.07),
            ("alarm moved earlier", "earlier", moved[moved["scheduled_ms"] < moved["prev_scheduled_ms"]],
             "prev_scheduled_ms", dict(color=BLUE, width=2.5), 1.0, -0.1),
            ("alarm moved later", "later", moved[moved["scheduled_ms"] > moved["prev_scheduled_ms"]],
             "prev_scheduled_ms", dict(color=ORANGE, width=2.5, dash="dash"), 1.0, 0.0),
            ("retry backoff", "retry", retry, "t_ms", dict(color=PURPLE, width=2), 0.9, 0.0),
        ]
        for name, role, sub, start, line, opacity, dy in groups:
            if not sub.empty and not (self.large and role == "lead"):  # leads are the bulk of a big file
                self.arrows(sub, start, name, role, line, opacity, dy, row)
        wide = retry[(retry["scheduled_ms"] - retry["t_ms"]) >= 0.01 * self.view_ms]  # room for a label
        if 0 < len(wide) <= LABEL_LIMIT:  # the rung, written over the middle of its wait
            self.rung_labels(wide, row)

    def rung_labels(self, retry: pd.DataFrame, row: int) -> None:
        retry = retry.sort_values(["y", "t_ms"])
        mid_ms = (retry["t_ms"].to_numpy(float) + retry["scheduled_ms"].to_numpy(float)) / 2
        lane = retry["y"].to_numpy()
        where = "top center"  # alarmkit._labels moves a label that would cover another
        text = [f"+{fmt_ms(d.get('base_ms', 0))}" for d in _details(retry["detail"])]
        self.fig.add_trace(go.Scatter(x=mid_ms / self.scale, y=lane - ROW_GAP, text=text, mode="text",
                                          textposition=where, textfont=dict(size=11, color="#8a3d6b"),
                                          showlegend=False, hoverinfo="skip", meta={"role": "label", "kind": "rung"}),
                               row=row, col=1)

    def arrows(self, sub: pd.DataFrame, start: str, name: str, role: str, line: dict, opacity: float, dy: float,
               row: int) -> None:
        t0 = sub[start].to_numpy(float)
        t1 = sub["scheduled_ms"].to_numpy(float)
        yy = sub["y"].to_numpy(np.float32) - np.float32(ROW_GAP - dy)
        xs, ys = _pairs(t0 / self.scale, yy, t1 / self.scale, yy)
        kw: dict[str, Any] = dict(mode="lines", line=line, opacity=opacity)
        if self.large:
            kw.update(hoverinfo="skip", line=dict(line, width=1))
        else:
            if role != "lead":
                kw.update(mode="lines+markers", marker=dict(symbol="arrow", angleref="previous", color=line["color"],
                                                            size=np.tile([0, 11, 0], len(sub))))
            hover = [f"{esc(name)} at {fmt_ms(t)}: {fmt_ms(a)} → {fmt_ms(b)}<br>object: {esc(_label(lane), HOVER_CHARS)}"
                     for t, a, b, lane in zip(sub["t_ms"], t0, t1, sub["lane"])]
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
                      textfont=dict(size=11, color=colour if kind != "revive" else "#005a44"))
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
        if kind in ("crash", "restart"):
            return [kind] * len(sub)
        if kind == "keepalive_arm":  # the keepalive's rung, like a retry's: how far ahead it armed
            return [f"+{fmt_ms(d['lead_ms'])}" if isinstance(d.get("lead_ms"), int) else ""
                    for d in _details(sub["detail"])]
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


def _focus(panels: list[tuple[str, pd.DataFrame]]) -> tuple[float, float, float]:
    """(start, end of the opening view, end of the data): the view stops before trailing idle evictions."""
    t = pd.concat([df["t_ms"] for _, df in panels])
    busy = pd.concat([df.loc[df["kind"] != "evict", "t_ms"] for _, df in panels])
    lo, hi = float(min(0, t.min())), float(t.max())
    return lo, (float(busy.max()) if len(busy) else hi), hi


def _build(panels: list[tuple[str, pd.DataFrame]], title: str, gl_threshold: int,
           overview_threshold: int = OVERVIEW_THRESHOLD, legend: str = "kind") -> go.Figure:
    if legend not in ("kind", "class"):
        raise AlarmkitError(f"legend must be 'kind' or 'class', got {legend!r}")
    panels = [(label, _mark_duplicates(_lanes(df))) for label, df in panels]
    total = sum(len(df) for _, df in panels)
    lo, view_hi, hi = _focus(panels)
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
    for i, (_, df) in enumerate(panels, start=1):
        lanes = drawer.draw(df, i)
        n = len(lanes)
        every = -(-n // TICK_LIMIT)  # hundreds of tick labels make plotly's first render crawl
        fig.update_yaxes(row=i, col=1, tickvals=list(range(0, n, every)), ticktext=[esc(_label(s), LABEL_CHARS) for s in lanes[::every]],
                         range=[n - 0.4, -0.62], showgrid=True, gridcolor="#e3e3e3", zeroline=False,
                         fixedrange=n < 30, ticks="", automargin=True)
    pad = max((view_hi - lo) * 0.04, 1.0)
    note = f"{total:,} events" + (" · WebGL" if drawer.large else "")
    if drawer.overview:
        note += (f" · zoomed out: events per lane and time (darker = more) and the notable ones; zoom in on fewer than "
                 f"{DETAIL_IN_VIEW:,} events to draw each one")
    if view_hi < hi:  # the view opens on the alarm activity; autoscale shows the idle evictions after it
        note += f" · view ends at {fmt_ms(view_hi)}; idle evictions until {fmt_ms(hi)} (double-click to see all)"
    fig.update_xaxes(showgrid=True, gridcolor="#eeeeee", zeroline=False, ticks="outside", showline=True,
                     linecolor="#999", range=[(lo - pad) / scale, (view_hi + 3 * pad) / scale])
    fig.update_xaxes(title_text=f"virtual time ({unit})", row=len(panels), col=1)
    fig.update_layout(shapes=drawer.shapes)
    if len(panels) > 1:  # zoom on one row moves the others
        fig.update_xaxes(matches="x")
    legend_h = 30 * -(-sum(1 for t in fig.data if t.showlegend) // 5) + 10  # ~5 entries a row
    fig.update_layout(
        template="plotly_white", font=_FONT, height=min(2600, plot_h + 95 + 60 + legend_h),
        title=dict(text=esc(title, 3 * LABEL_CHARS), x=0.01, xanchor="left", y=1, yref="container", yanchor="top", pad=dict(t=14),
                   subtitle=dict(text=note, font=dict(size=12, color="#666"))),
        legend=dict(orientation="h", yref="container", y=0.005, yanchor="bottom", x=0, xanchor="left",
                    groupclick="toggleitem", itemsizing="constant", font=dict(size=12), entrywidth=160),
        hoverlabel=dict(bgcolor="white", font=dict(size=12, family=_FONT["family"]), align="left"),
        hovermode="closest", margin=dict(l=20, r=20, t=80, b=60 + legend_h),
        meta={"unit": unit, "scale": scale, "events": total, "large": drawer.large,
              "detail_in_view": DETAIL_IN_VIEW if drawer.overview else 0},
    )
    place_labels(fig)
    if drawer.by_class:
        fig.update_layout(legend=dict(groupclick="togglegroup", entrywidth=0.25, entrywidthmode="fraction",
                                      font=dict(size=11)))
    return fig
