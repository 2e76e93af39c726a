"""The figure of a ``RunDiff``: one time axis, the two runs as paired lanes per object.

Events that match are drawn faint, the ones that differ strong (one strong mark per run in which
the differing event exists, each carrying its row of ``RunDiff.table()`` as ``customdata``), the
first divergence marked with a line across the lanes. Hovering a mark names its counterpart in the
other run. Every string is escaped (``alarmkit.plots.esc``).
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import plotly.graph_objects as go

from ..viz.plots import esc, fmt_ms

__all__ = ["diff_figure", "STATUS_COLORS"]

STATUS_COLORS = {"only_a": "#d62728", "only_b": "#e377c2", "changed": "#9467bd", "moved": "#ff7f0e",
                 "late": "#1f77b4"}
_STATUS_TEXT = {"only_a": "only in {a}", "only_b": "only in {b}", "changed": "another outcome", "moved": "moved",
                "late": "another lateness"}
_SYMBOL = {"fire": "triangle-up", "end": "circle", "arm": "diamond", "disarm": "x", "effect": "star",
           "crash": "x-thin-open", "abandoned": "square", "revive": "triangle-down"}


def _t(v: Any) -> str:
    return "—" if v is None or pd.isna(v) else fmt_ms(int(v))


def _lane(obj: Any, name: str) -> str:
    return esc(f"{obj or 'runtime'} · {name}", 60)  # run-wide events (a restart) have no object


def _event(kind: Any, t: Any, sched: Any) -> str:
    if kind is None or pd.isna(kind):
        return "nothing"
    text = f"{kind} at {_t(t)}"
    return text + (f" (for {_t(sched)})" if sched is not None and not pd.isna(sched) else "")


def _strong_text(r: Any, s: str, name: str, other: str, status: str) -> str:
    """The hover of a differing event in run ``s``: what it is, then its counterpart in the other run."""
    o = "b" if s == "a" else "a"
    kinds = str(r.kind).split(" → ")  # a changed outcome names both kinds: A's, then B's
    here, there = (kinds[0], kinds[-1]) if s == "a" else (kinds[-1], kinds[0])
    counterpart = (f"counterpart in {other}: {_event(there, getattr(r, f't_{o}'), getattr(r, f'scheduled_{o}'))}"
                   if not pd.isna(getattr(r, f"t_{o}")) else f"no counterpart in {other}")
    late = getattr(r, f"late_{s}")
    extra = f"; {_t(late)} late" if not pd.isna(late) else ""
    what = f" {r.what}" if r.what else ""
    return esc(f"{_event(here, getattr(r, f't_{s}'), getattr(r, f'scheduled_{s}'))}{what} in {name}{extra}; "
               f"{status}; {counterpart}", 400)


def diff_figure(d: Any, title: str | None = None, height: int | None = None) -> go.Figure:
    """The paired-lane figure of ``d`` (a ``RunDiff``)."""
    a, b = d.names
    table = d.differences
    objects = sorted(set(table["object"]) | (set(d.lanes["object"]) if d.lanes is not None else set()), key=str)
    lanes: list[str] = []
    for o in objects:
        lanes += [_lane(o, a), _lane(o, b)]
    fig = go.Figure()
    if d.lanes is not None:
        same = d.lanes[d.lanes["status"] == "same"]
        for s, name, other in (("a", a, b), ("b", b, a)):
            o = "b" if s == "a" else "a"
            fig.add_trace(go.Scatter(
                x=(same[f"t_{s}"].astype(float) / 1000).tolist(), y=[_lane(v, name) for v in same["object"]],
                mode="markers", name=f"matched ({esc(name)})", legendgroup="matched", opacity=0.3,
                marker={"color": "#888", "size": 7,
                        "symbol": [_SYMBOL.get(c, "circle") for c in same["cls"]]},
                hovertext=[esc(f"{_event(k, t, sc)} in {name}; matched in {other}: {_event(k2, t2, sc2)}")
                           for k, t, sc, k2, t2, sc2 in zip(same[f"kind_{s}"], same[f"t_{s}"], same[f"sched_{s}"],
                                                            same[f"kind_{o}"], same[f"t_{o}"], same[f"sched_{o}"])],
                hoverinfo="text", meta={"role": "matched"}))
    for status, color in STATUS_COLORS.items():
        rows = table[table["status"] == status]
        for s, name, other in (("a", a, b), ("b", b, a)):
            here = rows[rows[f"t_{s}"].notna()]
            if here.empty:
                continue
            texts = [_strong_text(r, s, name, other, _STATUS_TEXT[status].format(a=a, b=b))
                     for r in here.itertuples()]
            label = esc(_STATUS_TEXT[status].format(a=a, b=b) + ("" if status.startswith("only") else f" ({name})"))
            fig.add_trace(go.Scatter(
                x=(here[f"t_{s}"].astype(float) / 1000).tolist(), y=[_lane(v, name) for v in here["object"]],
                mode="markers", name=label, legendgroup=label, showlegend=False,
                marker={"color": color, "size": 13, "line": {"color": "#222", "width": 1},
                        "symbol": [_SYMBOL.get(c, "circle") for c in here["cls"]]},
                customdata=[int(i) for i in here.index], hovertext=texts, hoverinfo="text",
                meta={"role": "strong", "status": status, "run": s}))
            # the legend's entry: the status's colour on a plain square (the marks' shapes are their kinds)
            fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=label, legendgroup=label,
                                     marker={"color": color, "size": 11, "symbol": "square",
                                             "line": {"color": "#222", "width": 1}},
                                     hoverinfo="skip", meta={"role": "legend"}))
    fd = d.first_divergence
    if fd is not None:
        fig.add_vline(x=fd.t_ms / 1000, line={"color": "#d62728", "dash": "dash", "width": 1})
        fig.add_annotation(x=fd.t_ms / 1000, y=1.0, yref="paper", yanchor="bottom", showarrow=False,
                           text=esc(f"first divergence: {fd.object or fd.kind} at {fmt_ms(fd.t_ms)}", 120),
                           font={"color": "#d62728", "size": 12})
    n = max(len(lanes), 2)
    fig.update_layout(
        title=esc(title or f"{a} vs {b}: {len(table)} differing event{'s' * (len(table) != 1)}, {d.matched} matched", 200),
        template="plotly_white", height=height or max(300, 170 + 34 * n), hovermode="closest",
        xaxis={"title": "time (s)" + (", from the first request" if d.align == "first_request" else "")},
        yaxis={"categoryorder": "array", "categoryarray": list(reversed(lanes)), "type": "category"},
        legend={"orientation": "h", "y": -0.32, "yanchor": "top"}, meta={"diff": True, "strong_rows": len(table)},
        margin={"l": 180, "r": 20, "t": 70, "b": 130},
    )
    return fig
