"""Folding long idle stretches out of a timeline's x axis (the explorer's): a run that waits half an
hour between two bursts of activity draws both bursts readably, with the wait shown as a narrow
shaded band marked with how long it was ("29.8 min idle").

Plotly folds only date axes (``rangebreaks``), so the fold is a change of coordinates: every x of the
figure (traces, shapes, the axis range) goes through one monotone piecewise-linear map that leaves
time outside the folds as it is (shifted left by what the folds before it took out) and squeezes each
fold into ``Fold.x1 - Fold.x0`` axis units. Tick labels are written from the true times; hover text
already carries them (the timeline's hovers say ``at 30 min 0 s`` in words, never ``%{x}``), so what
a reader sees is never a folded coordinate.

A gap between two consecutive events is folded when it lasts at least ``FOLD_MIN_MS`` and, with the
other folded gaps, leaves less than ``1 / FOLD_FACTOR`` of its length to the rest of the view: the
longest ``k`` gaps (``k <= MAX_FOLDS``) are folded for the largest ``k`` where the shortest of them
is still ``FOLD_FACTOR`` times everything kept.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import plotly.graph_objects as go

from .._text import fmt_ms
from ._timeline import _unit

FOLD_MIN_MS = 300_000  # idle stretches shorter than five minutes are part of the story: never folded
FOLD_FACTOR = 2.0  # a fold is longer than twice all the time left on the axis
MAX_FOLDS = 3
FOLD_PX = 76  # a fold's drawn width at the narrowest plot the explorer lays out: its two-line marker, markers at its edges
BAND = "#ececec"


@dataclass(frozen=True)
class Fold:
    """One folded idle stretch: ``start_ms`` to ``end_ms`` of virtual time (both event instants), drawn
    between ``x0`` and ``x1`` of the folded axis (axis units)."""

    start_ms: int
    end_ms: int
    x0: float
    x1: float

    @property
    def idle_ms(self) -> int:
        return self.end_ms - self.start_ms

    @property
    def label(self) -> str:
        """The marker's text: the idle time, rounded to what a glance needs (the hover is exact)."""
        return f"{short_ms(self.idle_ms)}<br>idle"


def short_ms(ms: float) -> str:
    """``29.8 min``, ``2.5 h``, ``3.1 d``: a duration to three digits or fewer."""
    for name, size in (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1_000)):
        if ms >= size:
            v = ms / size
            return f"{v:.0f} {name}" if v >= 10 else f"{v:.1f}".rstrip("0").rstrip(".") + f" {name}"
    return f"{ms:.0f} ms"


def find_gaps(times_ms: Sequence[float], lo_ms: float, hi_ms: float) -> list[tuple[int, int]]:
    """The idle stretches of ``[lo_ms, hi_ms]`` to fold (see the module), in time order."""
    t = np.unique(np.asarray([x for x in times_ms if lo_ms <= x <= hi_ms], float))
    if len(t) < 2:
        return []
    gaps = sorted(((float(b - a), int(a), int(b)) for a, b in zip(t[:-1], t[1:])), reverse=True)
    span, best = float(hi_ms - lo_ms), 0
    for k in range(1, min(MAX_FOLDS, len(gaps)) + 1):
        kept = span - sum(g for g, _, _ in gaps[:k])
        if gaps[k - 1][0] >= FOLD_MIN_MS and gaps[k - 1][0] > FOLD_FACTOR * kept:
            best = k
    return sorted((a, b) for _, a, b in gaps[:best])


def make_folds(gaps: list[tuple[int, int]], lo_ms: float, hi_ms: float, scale: float, plot_px: float) -> list[Fold]:
    """Each gap with its drawn place: ``FOLD_PX`` of a ``plot_px``-wide plot whose axis spans the
    kept time and the folds (``kept`` at least 1 % of the view, so two lone instants still part)."""
    if not gaps:
        return []
    span = hi_ms - lo_ms
    kept = max(span - sum(b - a for a, b in gaps), 0.01 * span, 1.0)
    n = len(gaps)
    share = min(FOLD_PX / plot_px, 0.6 / n)  # of the folded axis, per fold
    width = share * kept / (1 - n * share)  # ms of the folded axis each fold takes
    out: list[Fold] = []
    for a, b in gaps:  # each fold's x0 by the expression fold_x gives its start, to the last bit
        x0 = a / scale if not out else out[-1].x1 + (a / scale - out[-1].end_ms / scale)
        out.append(Fold(int(a), int(b), x0, x0 + width / scale))
    return out


def fold_x(x: Any, folds: Sequence[Fold], scale: float) -> Any:
    """Axis units (true time / ``scale``) to the folded axis; NaN stays NaN, order is kept."""
    if not folds:
        return x
    arr = np.asarray(x, float)
    out = arr.copy()  # before the first fold: as it is
    for f in folds:
        a, b = f.start_ms / scale, f.end_ms / scale
        squeezed = f.x0 + (arr - a) * (f.x1 - f.x0) / (b - a)
        out = np.where(arr > a, np.where(arr < b, squeezed, f.x1 + (arr - b)), out)
    return out if np.ndim(x) else float(out)


def fold_of(x_folded: float, folds: Sequence[Fold]) -> Fold | None:
    """The fold whose band (its inside, not its edges) holds ``x_folded``."""
    return next((f for f in folds if f.x0 < x_folded < f.x1), None)


def _nice(step: float) -> float:
    e = 10 ** math.floor(math.log10(step))
    return next(m * e for m in (1, 2, 5, 10) if m * e >= step)


def ticks(folds: Sequence[Fold], lo_ms: float, hi_ms: float, scale: float, plot_px: float) -> tuple[list[float], list[str], str]:
    """(tick positions on the folded axis, their labels in true time, the unit): round times in each
    kept stretch and the instant each fold ends, none closer than ~70 px."""
    edges = [lo_ms] + [v for f in folds for v in (f.start_ms, f.end_ms)] + [hi_ms]
    kept = [(a, b) for a, b in zip(edges[::2], edges[1::2])]
    unit, div = _unit(max(sum(b - a for a, b in kept), 1.0))
    step = _nice(max(sum(b - a for a, b in kept), 1.0) / 6)
    want = {float(f.end_ms) for f in folds} | {float(f.start_ms) for f in folds}
    for a, b in kept:
        want |= {float(v) for v in np.arange(math.ceil(a / step) * step, b + step / 2, step) if a <= v <= b}
    xs = fold_x(np.array(sorted(want)) / scale, folds, scale)
    lo_x, hi_x = float(fold_x(lo_ms / scale, folds, scale)), float(fold_x(hi_ms / scale, folds, scale))
    room = 70 / plot_px * max(hi_x - lo_x, 1e-9)
    must = {float(f.end_ms) for f in folds}
    vals: list[float] = []
    text: list[str] = []
    for v, x in sorted(zip(sorted(want), xs), key=lambda p: (p[0] not in must, p[0])):
        if all(abs(x - p) >= room for p in vals):
            vals.append(float(x))
            text.append(f"{v / div:,.3f}".rstrip("0").rstrip("."))
    order = np.argsort(vals)
    return [vals[i] for i in order], [text[i] for i in order], unit


def apply_folds(fig: go.Figure, folds: Sequence[Fold], scale: float) -> None:
    """Move every x of ``fig`` onto the folded axis and draw each fold: a shaded band (a shape named
    ``fold``) and its marker (a text trace, ``meta.role == "fold"``, hover exact)."""
    for t in fig.data:
        if t.x is not None and not isinstance(t, go.Heatmap):
            t.x = fold_x(np.asarray(t.x, float), folds, scale)
    shapes = []
    for s in fig.layout.shapes or ():
        j = s.to_plotly_json()
        for k in ("x0", "x1"):
            if j.get(k) is not None and str(j.get("xref", "x")).startswith("x") and "domain" not in str(j.get("xref")):
                j[k] = float(fold_x(float(j[k]), folds, scale))
        shapes.append(j)
    for f in folds:
        shapes.append(dict(type="rect", x0=f.x0, x1=f.x1, y0=0, y1=1, xref="x", yref="y domain", fillcolor=BAND,
                           line_width=0, layer="below", name="fold"))
    fig.layout.shapes = shapes
    y0, y1 = fig.layout.yaxis.range
    fig.add_trace(go.Scatter(
        x=[(f.x0 + f.x1) / 2 for f in folds], y=[(y0 + y1) / 2] * len(folds), mode="text",
        text=[f.label for f in folds], textposition="middle center", textfont=dict(size=11, color="#555"),
        hovertext=[f"idle from {fmt_ms(f.start_ms)} to {fmt_ms(f.end_ms)}: {fmt_ms(f.idle_ms)} folded out of the axis"
                   for f in folds], hovertemplate="%{hovertext}<extra></extra>", showlegend=False, name="folded",
        meta={"role": "fold"}))
