"""Label placement for the timeline: every label written on the plot gets a place where it covers no
other label, no marker and no vertical line (a restart, the explorer's "now" cursor), inside its plot
area, or it is dropped (its text stays in the hover).

Plotly places scatter text at a fixed side of its point and never checks for collisions. This pass
runs once the figure's layout is known: it estimates each label's box in pixels (from the axis
ranges, the row heights and a nominal plot width), tries the sides in turn, and writes the chosen
``textposition`` per point. A browser test measures the rendered boxes of every demo report.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go

NOMINAL_WIDTH = 1000  # px of plot area assumed; reports are wider (~1,200 px), so real gaps are larger
CHAR_PX, LINE_PX, PAD = 7.0, 14.0, 2.0  # an 11 px label's character width and line height, with a margin
LINE_HALF = 1.5  # px either side of a vertical line (a restart's, the explorer's cursor) no label may cover
SIDES = ["bottom center", "top center", "middle right", "middle left", "top right", "bottom right",
         "top left", "bottom left"]
# Rarer, more telling labels are placed first; the many small ones take the room that is left.
PRIORITY = ["abandoned", "revive", "crash", "restart", "fault", "rung", "keepalive rung"]


def _box(side: str, px: float, py: float, s: float, w: float, h: float) -> tuple[float, float, float, float]:
    """The box of a ``w`` x ``h`` text placed at ``side`` of a marker ``s`` px wide centred at (px, py)."""
    r = s / 2 + PAD
    v, hpos = side.split(" ")
    if v == "middle":
        y0 = py - h / 2
    else:
        y0 = py - r - h if v == "top" else py + r
    if hpos == "center":
        x0 = px - w / 2
    elif hpos == "right":
        x0 = px + (r if v == "middle" else s / 4)
    else:
        x0 = px - (r if v == "middle" else s / 4) - w
    return x0, y0, x0 + w, y0 + h


def _hits(box, boxes: np.ndarray) -> bool:
    x0, y0, x1, y1 = box
    return bool(len(boxes)) and bool(np.any((x0 < boxes[:, 2]) & (boxes[:, 0] < x1) & (y0 < boxes[:, 3]) & (boxes[:, 1] < y1)))


class _Axes:
    """Data -> pixel for one subplot row, from the figure's layout."""

    def __init__(self, fig: go.Figure, yname: str, width: float) -> None:
        lay = fig.layout
        height = (lay.height or 450) - (lay.margin.t or 0) - (lay.margin.b or 0)
        yaxis = lay[yname.replace("y", "yaxis", 1)]
        xaxis = lay[("x" + yname[1:]).replace("x", "xaxis", 1)]
        d0, d1 = yaxis.domain or (0, 1)
        self.h = max(1.0, height * (d1 - d0))
        self.y0, self.y1 = yaxis.range  # reversed for lanes: the first value is at the bottom
        self.x0, self.x1 = (xaxis.range or lay.xaxis.range)
        self.w = float(width)

    def px(self, x: np.ndarray) -> np.ndarray:
        return (np.asarray(x, float) - self.x0) / (self.x1 - self.x0) * self.w

    def py(self, y: np.ndarray) -> np.ndarray:  # from the top of the row
        return (self.y1 - np.asarray(y, float)) / (self.y1 - self.y0) * self.h if self.y1 < self.y0 else \
            (np.asarray(y, float) - self.y0) / (self.y1 - self.y0) * self.h


def _sizes(trace: Any, n: int) -> np.ndarray:
    size = trace.marker.size if trace.marker is not None and "markers" in (trace.mode or "") else 0
    size = 0 if size is None else size
    return np.broadcast_to(np.asarray(size, float), (n,)).copy() if np.ndim(size) else np.full(n, float(size))


def place_labels(fig: go.Figure, width: float = NOMINAL_WIDTH) -> int:
    """Give every text label of ``fig`` a side free of other labels and markers, for a plot area
    ``width`` px wide; returns how many were dropped (their text emptied: the point's hover still says it)."""
    rows: dict[str, dict] = {}
    for t in fig.data:
        if not isinstance(t, (go.Scatter, go.Scattergl)) or t.x is None or t.visible == "legendonly":
            continue
        row = rows.setdefault(t.yaxis or "y", {"obstacles": [], "labels": []})
        if "markers" in (t.mode or ""):
            row["obstacles"].append(t)
        if isinstance(t.meta, dict) and t.meta.get("role") in ("fold", "now", "cut"):  # fixed: an obstacle
            row.setdefault("fixed", []).append(t)
        elif t.text is not None and not isinstance(t.text, str) and "text" in (t.mode or ""):
            row["labels"].append(t)
    vlines: dict[str, list[float]] = {}  # vertical lines a label must not sit on: restarts, the explorer's "now"
    for sh in fig.layout.shapes or ():
        if sh.type == "line" and sh.x0 is not None and sh.x0 == sh.x1:
            vlines.setdefault("y" + (sh.xref or "x")[1:], []).append(float(sh.x0))
    for t in fig.data:
        if isinstance(t.meta, dict) and t.meta.get("role") == "cursor" and t.x is not None and len(t.x):
            vlines.setdefault(t.yaxis or "y", []).append(float(t.x[0]))
    dropped = 0
    for yname, row in rows.items():
        if not row["labels"]:
            continue
        ax = _Axes(fig, yname, width)
        marks: list = []
        for t in row["obstacles"]:
            x, y = ax.px(t.x), ax.py(t.y)
            s = _sizes(t, len(x))
            keep = np.isfinite(x) & np.isfinite(y) & (x > -20) & (x < ax.w + 20)
            marks.extend(zip(x[keep] - s[keep] / 2, y[keep] - s[keep] / 2, x[keep] + s[keep] / 2, y[keep] + s[keep] / 2))
        for vx in ax.px(np.array(vlines.get(yname, []), float)):
            marks.append((vx - LINE_HALF, -1e6, vx + LINE_HALF, 1e6))
        for t in row.get("fixed", ()):  # text at its own textposition, lines split by <br>
            for px, py, text in zip(ax.px(t.x), ax.py(t.y), t.text):
                lines = str(text).split("<br>") if text else []
                if lines:
                    w, h = max(len(x) for x in lines) * CHAR_PX, len(lines) * LINE_PX
                    side = t.textposition if isinstance(t.textposition, str) else "middle center"
                    b = _box(side, px, py, 0, w, h) if side != "middle center" else (px - w / 2, py - h / 2, px + w / 2, py + h / 2)
                    marks.append((b[0] - PAD, b[1] - PAD, b[2] + PAD, b[3] + PAD))
        order = sorted(row["labels"], key=lambda t: PRIORITY.index(_kind(t)) if _kind(t) in PRIORITY else len(PRIORITY))
        placed: list = []
        boxes = np.array(marks, float).reshape(-1, 4)
        for t in order:
            dropped += _place_trace(t, ax, boxes, placed)
    return dropped


def _kind(trace: Any) -> str:
    return str((trace.meta or {}).get("kind", "")) if isinstance(trace.meta, dict) else ""


def _place_trace(t: Any, ax: _Axes, marks: np.ndarray, placed: list) -> int:
    texts = list(t.text)
    x, y = ax.px(t.x), ax.py(t.y)
    s = _sizes(t, len(x))
    first = t.textposition if isinstance(t.textposition, str) else "bottom center"
    sides = [first] + [p for p in SIDES if p != first]
    where, dropped = [], 0
    ys = np.array(t.y, float)
    per_px = (ax.y1 - ax.y0) / ax.h if ax.y1 < ax.y0 else (ax.y0 - ax.y1) / ax.h  # data units per px, downwards
    for i, text in enumerate(texts):
        if not text:
            where.append(first)
            continue
        if not (0 <= x[i] <= ax.w and 0 <= y[i] <= ax.h):  # out of the opening view: left as it is
            where.append(first)
            continue
        w, h = len(str(text)) * CHAR_PX, LINE_PX
        # a label of its own (no marker) may also move up or down a line or two, e.g. rungs near t=0
        shifts = (0,) if s[i] else (0, -1, 1, -2, 2)
        for shift, side in ((k, side) for k in shifts for side in sides):
            b = _box(side, x[i], y[i] + shift * h, s[i], w, h)
            inside = b[0] >= 0 and b[2] <= ax.w and b[1] >= 0 and b[3] <= ax.h
            if inside and not _hits(b, np.array(placed, float).reshape(-1, 4)) and not _hits(b, marks):
                placed.append(b)
                where.append(side)
                ys[i] += shift * h * -per_px if shift else 0
                break
        else:
            texts[i] = ""
            where.append(first)
            dropped += 1
    t.text, t.textposition = texts, where
    if not s.any():
        t.y = ys
    return dropped
