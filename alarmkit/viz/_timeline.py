"""The timeline's vocabulary behind ``alarmkit.plots``: styles of kinds, escaping, time formats and
the helpers that read journal frames (lanes, duplicates, hover text). The drawing is ``_drawing``.

Every string that comes from a journal is escaped here (``esc``) before plotly or a page sees it:
plotly renders a subset of HTML in labels and hover text.
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

from ..journal import DEATH, DUPLICATE, effect_idents
from ..errors import AlarmkitError
from .._text import _INVISIBLE, esc, fmt_ms  # noqa: F401 - the one escaping function, re-exported for the figures
from ..journal import EVENT_COLUMNS
from ..journal import check_frame as _check

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
    "evict": (GREY, "x-thin-open", 9, 1),  # idle eviction: nothing was running
    DEATH: (VERMILION, "circle-x-open", 13, 1),  # the process went away with work in flight
    "expect_failed": (VERMILION, "x-thin-open", 14, 1),  # a drive's expectation did not hold: never green
    # a library's own schedules (the Agents SDK's, Actors'), read from its table (journal/_library.py)
    "lib_schedule": (GREEN, "triangle-down-open", 9, -1),
    "lib_ran": (GREEN, "circle-open", 9, 1),
    "lib_failed": (ORANGE, "square-x-open", 11, 1),
    "lib_dropped": (VERMILION, "square-x", 13, 1),
    "lib_cancelled": (GREY, "diamond-x-open", 9, 1),
    # the code touched surface alarmkit does not simulate (caught or not): a stop sign on the effects row
    "refused": (VERMILION, "octagon-open", 12, 1),
}
_LINE_CLASS = {"lead": "arm", "rearm": "arm", "earlier": "arm", "later": "arm", "retry": "retry_scheduled", "lib": "lib_schedule"}  # a move's class
_SPARE = ["circle-x", "square-x", "diamond-x", "cross", "pentagon", "hexagon", "triangle-left", "triangle-right"]
ROW_GAP = 0.27  # distance between a lane's sub-rows, in lane units
GL_THRESHOLD = 10_000  # above this many events in a figure, traces are WebGL (Scattergl)
OVERVIEW_THRESHOLD = 100_000  # above this many, the opening view is a density map plus the notable events
DETAIL_IN_VIEW = 100_000  # zoomed in on fewer events than this, every event is drawn (see _bigpage.ON_ZOOM)
NOTABLE = {DUPLICATE, DEATH, "crash", "fault", "abandoned", "revive", "restart", "handler_error", "fire_skipped",
           "facet_broken", "actor_broken", "revival", "deploy", "expect_failed", "lib_dropped",
           "lib_failed", "refused"}  # drawn even in the zoomed-out overview
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
LABEL_CHARS = 48  # an object id or kind longer than this is cut on the axis and in legends
HOVER_CHARS = 120  # ... and in hover text; the report's summary table holds the full text


def script_json(value: Any) -> str:
    """``value`` as JSON text for a ``<script type="application/json">`` block: plotly's encoder (numpy
    arrays as base64 typed arrays) with ``<``, ``>``, ``&`` and the JavaScript line separators written
    as ``\\u`` escapes, so no string can close the block; the page reads it with ``JSON.parse`` only."""
    from plotly.io.json import to_json_plotly

    text = to_json_plotly(value)
    for raw, safe in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(raw, safe)  # plotly escapes these too; said here, where the page's escaping lives
    return text


def _unit(span_ms: float) -> tuple[str, int]:
    for name, scale, upto in _UNITS:
        if upto is None or span_ms <= upto:
            return name, scale
    raise AssertionError("unreachable")  # pragma: no cover


def _details(series: pd.Series) -> list[dict]:
    out = []
    for d in series:
        try:
            v = json.loads(d) if isinstance(d, str) else {}
        except ValueError:
            v = {"detail": d}
        out.append(v if isinstance(v, dict) else {"detail": v})
    return out




def _mark_duplicates(df: pd.DataFrame) -> pd.DataFrame:
    """Split effects into first runs and duplicates (remembering where each duplicate's first run was),
    and evictions into idle ones and process deaths."""
    df = df.assign(kind2=df["kind"], first_t=np.nan, first_lane=None)
    ev = df["kind"] == "evict"
    if ev.any():  # a forced or injected eviction kills work in flight: not the grey idle x
        idle = df.loc[ev, "detail"].astype(str).str.contains('"reason":"idle"', regex=False)
        df.loc[idle[~idle].index, "kind2"] = DEATH
    eff = df["kind"] == "effect"
    if not eff.any():
        return df
    e = df.loc[eff, ["t_ms", "lane"]].assign(ident=effect_idents(df), run=df.loc[eff, "run_id"].fillna(-1).to_numpy())
    g = e.groupby(["run", "lane", "ident"], sort=False)  # per object, as check() counts duplicates
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
