"""Figures of runs, drawn from journal DataFrames only (``Journal.events(run_id)``), never the runtime.

``timeline`` puts one lane per object on a virtual-time axis; ``compare`` stacks runs on one axis;
``backoff_ladder`` and ``lateness`` plot retry waits and fire delays. Every string that comes from a
journal is escaped before plotly sees it (see ``_timeline``).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ._align import align as align_first_request, since_clock_start
from ._drawing import _build
from ._timeline import BLACK, BLUE, DETAIL_LIMIT, DUPLICATE, GL_THRESHOLD, GREEN, KIND_STYLE, ORANGE, OVERVIEW_THRESHOLD, PURPLE, SKY, VERMILION, YELLOW, HOVER_CHARS, LABEL_CHARS, _FONT, _check, _details, _unit, drawn_kinds, effect_idents, esc, fmt_ms, style
from ._notebook import use_in_jupyter
from ..errors import AlarmkitError
from ..journal import EVENT_KINDS

__all__ = [
    "timeline", "compare", "backoff_ladder", "keepalive_ladder", "keepalive_rungs", "lateness", "lateness_ms", "KIND_STYLE", "DUPLICATE", "GL_THRESHOLD", "OVERVIEW_THRESHOLD",
    "style", "fmt_ms",
    "esc", "effect_idents", "drawn_kinds", "mark_missed", "MISSED",
]

MISSED = "obligation due, never ran"  # the legend name of the verdict's mark on a timeline
MISSED_INK = "#b00020"

use_in_jupyter()  # in a Jupyter kernel, figures also carry offline HTML for nbconvert (see _notebook)


def _pick(df: pd.DataFrame, col: str, wanted: Iterable | None, noun: str, known: Iterable) -> pd.DataFrame:
    if wanted is None:
        return df
    wanted = [wanted] if isinstance(wanted, (str, int)) else list(wanted)
    known = [k.item() if hasattr(k, "item") else k for k in dict.fromkeys(known)]  # numpy ints print as np.int64
    bad = [w for w in wanted if w not in known]
    if bad:
        raise AlarmkitError(f"no {noun} {bad} in these events; {noun}s here: {known}")
    return df[df[col].isin(wanted)]


def _select(events, objects=None, kinds=None, runs=None, window=None) -> pd.DataFrame:
    df = since_clock_start(_check(events))  # a clock started at a real epoch: time since its start
    kinds = [kinds] if isinstance(kinds, str) else kinds
    if kinds is not None:
        known = list(dict.fromkeys([*EVENT_KINDS, *df["kind"].unique()]))  # other modules journal kinds of their own
        bad = [k for k in kinds if k not in known]
        if bad:
            raise AlarmkitError(f"unknown event kind(s) {bad}; kinds: {known}")
        df = df[df["kind"].isin(kinds)]
    df = _pick(df, "object_id", objects, "object", events["object_id"].dropna())
    df = _pick(df, "run_id", runs, "run", events["run_id"].dropna())
    if window is not None:
        t0, t1 = _window(window)
        df = df[(df["t_ms"] >= t0) & (df["t_ms"] <= t1)]
    return df


def _window(window) -> tuple[int, int] | None:
    """``(start_ms, end_ms)`` with start < end, or None; the figure's time axis spans exactly it."""
    if window is None:
        return None
    try:
        t0, t1 = (int(t) for t in window)
    except (TypeError, ValueError):
        raise AlarmkitError(f"window is (start_ms, end_ms) of virtual time, got {window!r}") from None
    if t0 >= t1:
        raise AlarmkitError(f"window must end after it starts, got {window!r}; e.g. window=(0, 60_000)")
    return t0, t1


def timeline(events: pd.DataFrame, *, objects: Iterable[str] | None = None, kinds: Iterable[str] | None = None,
             runs: Iterable[int] | None = None, window: tuple[int, int] | None = None, title: str | None = None,
             gl_threshold: int = GL_THRESHOLD, overview_threshold: int = OVERVIEW_THRESHOLD,
             legend: str = "kind") -> go.Figure:
    """One lane per object on a virtual-time axis; one row per run when ``events`` hold several runs.

    ``objects``, ``kinds``, ``runs`` and ``window=(t0_ms, t1_ms)`` filter; with a window the time axis
    spans it (1 % padding) instead of the whole run. Above ``gl_threshold`` events
    the traces are WebGL; above ``overview_threshold`` the figure opens on a density map plus the
    notable events (duplicates, errors, crashes, abandonment, revivals, restarts) and the exported
    page draws every event once you zoom in on fewer than 100,000. ``legend="class"`` groups the
    legend by the classes of ``alarmkit._kinds`` (fewer entries, for narrow views). Raises ``AlarmkitError``
    for a frame that is not a journal's, an unknown kind, or an object or run not in the frame.
    """
    df = _select(events, objects, kinds, runs, window)
    if df.empty:
        raise AlarmkitError("no events left to draw; loosen objects=, kinds=, runs= or window=")
    run_ids = list(dict.fromkeys(df["run_id"].fillna(-1)))
    panels = [(f"run {r}" if r != -1 else "run", df[df["run_id"].fillna(-1) == r]) for r in run_ids]
    return _build(panels, title or ("timeline" if len(panels) > 1 else f"timeline · {panels[0][0]}"), gl_threshold,
                  overview_threshold, legend, _window(window))


def mark_missed(fig: go.Figure, misses: Iterable[Mapping[str, Any]]) -> int:
    """Mark each due-but-never-ran obligation (``Verdict.misses``: object, due_ms, status, text) on a
    ``timeline`` where it was due: a crimson circled x in its object's handler row, the cause in hover.
    Returns how many were placed; one whose object has no single lane in the figure (filtered out, or
    one name in two namespaces) is not drawn (the verdict's text still names it)."""
    meta = fig.layout.meta if isinstance(fig.layout.meta, dict) else {}
    lanes = (meta.get("lanes") or {}).get("yaxis") or []
    scale = meta.get("scale") or 1
    xs, ys, hover = [], [], []
    for m in misses:
        name = esc(str(m["object"]), LABEL_CHARS)
        # a lane is named "namespace:object" when the run has several namespaces; an obligation names the object
        found = [i for i, lane in enumerate(lanes) if lane == name or lane.endswith(":" + name)]
        if len(found) != 1:
            continue
        xs.append(float(m["due_ms"]) / scale)
        ys.append(found[0])
        what = "lost" if m.get("status") == "lost" else "overdue at the end"
        hover.append(f"<b>{esc(MISSED)}</b> ({what}) at {fmt_ms(m['due_ms'])}<br>{esc(str(m.get('text', '')), 300)}")
    if xs:
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="markers", name=MISSED, legendgroup="missed",
                                 marker=dict(symbol="square-x-open", size=18, color=MISSED_INK, line=dict(width=2)),
                                 hovertext=hover, hovertemplate="%{hovertext}<extra></extra>",
                                 meta={"role": "verdict", "kind": "missed"}),  # a verdict, not a journal event
                      row=1, col=1)
    return len(xs)


def compare(runs: Mapping[str, pd.DataFrame], *, objects=None, kinds=None, window=None, title: str = "compare",
            gl_threshold: int = GL_THRESHOLD, overview_threshold: int = OVERVIEW_THRESHOLD,
            align: str | None = None) -> go.Figure:
    """The same scenario under two (or more) profiles or fault plans: one row each, one shared time axis.

    ``runs`` maps a label to that run's events, e.g. ``{"workerd": j.events(1), "crash plan": j.events(2)}``.
    ``align="first_request"`` counts each run's time from its first request, so a real run (epoch
    times, from ``alarmkit import`` or ``record``) lines up with a simulated one.
    """
    if not isinstance(runs, Mapping) or not runs:
        raise AlarmkitError("compare needs a dict label -> events, e.g. {'workerd': j.events(1), 'celld': j.events(2)}")
    if align not in (None, "first_request"):
        raise AlarmkitError(f"align must be None or 'first_request', got {align!r}")
    if align == "first_request":
        runs = {label: align_first_request(_check(df, f"runs[{label!r}]")) for label, df in runs.items()}
    panels = [(str(label), _select(df, objects, kinds, None, window)) for label, df in runs.items()]
    empty = [label for label, df in panels if df.empty]
    if empty:
        raise AlarmkitError(f"no events to draw for {empty}; loosen objects=, kinds= or window=")
    return _build(panels, title, gl_threshold, overview_threshold, window=_window(window))


def backoff_ladder(events: pd.DataFrame, profile: Any = "workerd") -> go.Figure:
    """Each retry's wait (``retry_scheduled``) against the nominal ladder ``retry_start << rung`` and its jitter band."""
    from ..runtime.profiles import get_profile

    prof = get_profile(profile)
    df = _check(events)
    r = df[df["kind"] == "retry_scheduled"]
    if r.empty:
        raise AlarmkitError("no retry_scheduled events in this run; the ladder needs failed attempts "
                            "(e.g. run_scenario('lease-exhaustion'))")
    det = pd.DataFrame(_details(r["detail"]), index=r.index)
    rungs = det["rung"].astype(int)
    top = max(int(rungs.max()), prof.retry_max_tries - 1)
    ladder = np.arange(top + 1)
    base = np.array([prof.retry_delay_ms(int(n)) for n in ladder], float)
    high = base + np.array([prof.max_jitter_ms(int(b)) for b in base], float)
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=ladder, y=base / 1000, mode="lines", line=dict(width=0), hoverinfo="skip",
                             showlegend=False, meta={"role": "band-low"}))
    fig.add_trace(go.Scatter(x=ladder, y=high / 1000, mode="lines", fill="tonexty", fillcolor="rgba(0,114,178,0.15)",
                             line=dict(width=0), name=f"jitter band (+0..{prof.jitter_factor:.0%})",
                             hovertemplate="rung %{x}: up to %{y:.3f} s<extra></extra>", meta={"role": "band"}))
    fig.add_trace(go.Scatter(x=ladder, y=base / 1000, mode="lines+markers",
                             name=f"nominal {fmt_ms(prof.retry_start_ms)} << n",
                             line=dict(color=BLUE, width=2), marker=dict(size=7),
                             hovertemplate="rung %{x}: nominal %{y:.3f} s<extra></extra>", meta={"role": "nominal"}))
    counted = det["counted"].astype(bool) if "counted" in det else pd.Series(True, index=det.index)
    for flag, name, colour, symbol in ((True, "retry (counted)", VERMILION, "circle"),
                                       (False, "retry (uncounted)", PURPLE, "diamond-open")):
        m = counted == flag
        if not m.any():
            continue
        delay = det.loc[m, "delay_ms"].astype(float).to_numpy()
        kw: dict[str, Any] = dict(hovertemplate=f"{name}: rung %{{x}}, waited %{{y:.3f}} s<extra></extra>")
        if m.sum() <= DETAIL_LIMIT:
            hover = [f"object: {esc(o, HOVER_CHARS)}<br>rung {int(n)}: waited {fmt_ms(w)} (base {fmt_ms(b)} + jitter {fmt_ms(j)})"
                     f"<br>scheduled at {fmt_ms(t)} for {fmt_ms(s)}"
                     for o, n, w, b, j, t, s in zip(r.loc[m, "object_id"], rungs[m], delay, det.loc[m, "base_ms"],
                                                    det.loc[m, "jitter_ms"], r.loc[m, "t_ms"], r.loc[m, "scheduled_ms"])]
            kw = dict(hovertext=hover, hovertemplate="%{hovertext}<extra></extra>")
        cls = go.Scattergl if m.sum() > GL_THRESHOLD else go.Scatter
        fig.add_trace(cls(x=rungs[m].to_numpy(np.int8), y=delay / 1000, mode="markers", name=name, meta={"role": "retries"},
                          marker=dict(color=colour, symbol=symbol, size=10, line=dict(width=2 if not flag else 1, color=colour),
                                      # many marks in one rung: see-through shows how many; an open one stays visible
                                      opacity=1.0 if m.sum() <= 200 else 0.35 if flag else 0.7), **kw))
    fig.update_yaxes(type="log", title_text="wait before the retry", tickvals=list(base / 1000),
                     ticktext=[f"{b / 1000:g} s" for b in base], gridcolor="#e6e6e6")  # one unit up the axis
    fig.update_xaxes(title_text=f"backoff rung n (nominal wait {fmt_ms(prof.retry_start_ms)} << n)",
                     tickvals=list(ladder), gridcolor="#f0f0f0")
    fig.update_layout(template="plotly_white", font=_FONT, height=420, hovermode="closest",
                      title=dict(text=f"backoff ladder · profile {esc(prof.name)}", x=0.01, xanchor="left"),
                      margin=dict(l=90, r=20, t=60, b=60))
    return fig

def keepalive_rungs(events: pd.DataFrame) -> pd.DataFrame:
    """Each ``keepalive_fire`` with the rung it was armed at: the latest ``keepalive_arm`` of its object
    before it. Columns: object_id, armed_ms, t_ms, rung, lead_ms, waited_ms, outcome."""
    df = _check(events)
    ka = df[df["kind"].isin(["keepalive_arm", "keepalive_fire"])].sort_values(["seq"])
    rows, armed = [], {}
    for o, kind, t, d in zip(ka["object_id"], ka["kind"], ka["t_ms"], _details(ka["detail"])):
        if kind == "keepalive_arm":
            armed[o] = (int(t), int(d.get("rung", 0)), int(d.get("lead_ms", 0)))
        elif o in armed:
            at, rung, lead = armed[o]
            rows.append((o, at, int(t), rung, lead, int(t) - at, str(d.get("outcome", "?"))))
    return pd.DataFrame(rows, columns=["object_id", "armed_ms", "t_ms", "rung", "lead_ms", "waited_ms", "outcome"])


def keepalive_ladder(events: pd.DataFrame | Mapping[str, pd.DataFrame]) -> go.Figure:
    """The keepalive's rungs like ``backoff_ladder``'s: the nominal lead of each rung (+10 s, +20 s, ...),
    and each keepalive fire at its rung by how long after arming it came: a revival filled, a fire
    the keepalive gated itself (early, idle, budget spent, parked) open and named. ``events`` is one
    run's frame or a dict label -> events (e.g. celld and workerd)."""
    runs = dict(events) if isinstance(events, Mapping) else {"": events}
    arms = {k: v[v["kind"] == "keepalive_arm"] for k, v in runs.items()}
    if all(a.empty for a in arms.values()):
        raise AlarmkitError("no keepalive_arm events in this run; the rung ladder needs the guestbook keepalive "
                            "(e.g. run_scenario('guestbook-crash-loop'))")
    lead = {}
    for a in arms.values():
        for d in _details(a["detail"]):
            lead.setdefault(int(d.get("rung", 0)), int(d.get("lead_ms", 0)))
    ladder = sorted(lead)
    fig = go.Figure()
    fig.add_trace(go.Scatter(
        x=ladder, y=[lead[n] / 1000 for n in ladder], mode="lines+markers", name="nominal lead of the rung",
        line=dict(color=BLUE, width=2), marker=dict(size=7), meta={"role": "nominal"},
        hovertemplate="rung %{x}: armed %{y:.3f} s ahead<extra></extra>"))
    palette = [ORANGE, GREEN, VERMILION, PURPLE, SKY, BLACK]
    for i, (label, ev) in enumerate(runs.items()):
        f = keepalive_rungs(ev)
        colour, shift = palette[i % len(palette)], (i - (len(runs) - 1) / 2) * 0.12
        for revived in (True, False):
            m = (f["outcome"] == "revived") == revived
            if not m.any():
                continue
            what = "revived" if revived else "gated itself"
            g = f[m]
            hover = [f"object: {esc(o, HOVER_CHARS)}<br>rung {n} (+{fmt_ms(ld)}): armed at {fmt_ms(a)}, fired at "
                     f"{fmt_ms(t)}<br>waited {fmt_ms(w)}: {esc(out)}"
                     for o, n, ld, a, t, w, out in g[["object_id", "rung", "lead_ms", "armed_ms", "t_ms", "waited_ms",
                                                      "outcome"]].itertuples(index=False)]
            fig.add_trace(go.Scatter(
                x=g["rung"].to_numpy(float) + shift, y=g["waited_ms"].to_numpy(float) / 1000,
                mode="markers" if revived else "markers+text", text=None if revived else [esc(o) for o in g["outcome"]],
                textposition="middle right", textfont=dict(size=11, color=colour),
                name=f"{esc(label, LABEL_CHARS)}: {what}".lstrip(": "), hovertext=hover,
                hovertemplate="%{hovertext}<extra></extra>", meta={"role": "keepalive", "outcome": what, "label": label},
                marker=dict(color=colour, symbol="diamond" if revived else "diamond-open", size=12,
                            line=dict(width=2, color=colour))))
    waits = [lead[n] for n in ladder] + [float(w) for ev in runs.values() for w in keepalive_rungs(ev)["waited_ms"]]
    if max(waits) > 20 * max(min(waits), 1):  # rungs double: a wide ladder reads best on a log axis
        ticks = sorted({lead[n] for n in ladder} | {10 ** k for k in range(3, 8) if min(waits) <= 10 ** k <= max(waits)})
        fig.update_yaxes(type="log", tickvals=[v / 1000 for v in ticks], ticktext=[fmt_ms(v) for v in ticks])
    else:
        fig.update_yaxes(rangemode="tozero", ticksuffix=" s")
    fig.update_yaxes(title_text="armed → fired", gridcolor="#e6e6e6")
    fig.update_xaxes(title_text="keepalive rung n: armed +10 s << n ahead", tickvals=ladder,
                     ticktext=[f"{n}: +{fmt_ms(lead[n])}" for n in ladder],
                     range=[min(ladder) - 0.6, max(ladder) + 0.6], gridcolor="#f0f0f0")
    fig.update_layout(template="plotly_white", font=_FONT, height=420, hovermode="closest",
                      title=dict(text="keepalive rung ladder", x=0.01, xanchor="left"),
                      legend=dict(orientation="h", y=-0.2, yanchor="top", x=0, xanchor="left"),
                      margin=dict(l=90, r=20, t=60, b=110))
    return fig



def lateness_ms(events: pd.DataFrame, against: str = "due") -> pd.DataFrame:
    """Each fire of a journal frame with its ``late_ms`` (see ``lateness``): the numbers it plots."""
    if against not in ("due", "scheduled"):
        raise AlarmkitError(f"against must be 'due' or 'scheduled', got {against!r}")
    return _lateness_ms(_check(events), against)


def _lateness_ms(df: pd.DataFrame, against: str) -> pd.DataFrame:
    """Fires with ``late_ms``. A fire right after a ``retry_scheduled`` of its object (no user
    ``set_alarm`` between) is that retry: with ``against="due"`` it is measured from the retry's due time."""
    keep = (df["kind"].isin(["fire", "retry_scheduled"]) | ((df["kind"] == "arm") & df["retry_count"].isna()))
    sub = df.loc[keep, ["run_id", "seq", "object_id", "kind", "t_ms", "scheduled_ms", "retry_count"]]
    sub = sub.assign(run_id=sub["run_id"].fillna(-1)).sort_values(["run_id", "object_id", "seq"])
    prev = sub.groupby(["run_id", "object_id"], sort=False, dropna=False)[["kind", "scheduled_ms"]].shift(1)
    fire = sub["kind"] == "fire"
    retry = fire & (prev["kind"] == "retry_scheduled")
    due = sub["scheduled_ms"].where(~retry | (against != "due"), prev["scheduled_ms"])
    out = sub.loc[fire].assign(late_ms=(sub["t_ms"] - due)[fire].astype(float), retry=retry[fire].astype(bool))
    return out.sort_values(["run_id", "seq"])[["run_id", "object_id", "t_ms", "late_ms", "retry_count", "retry"]]


def lateness(events: pd.DataFrame | Mapping[str, pd.DataFrame], runs: pd.DataFrame | None = None, *,
             by: str = "run", against: str = "due") -> go.Figure:
    """Fire time minus due time, as one box (with its points) per run, profile or label.

    ``events``: a frame of one or more runs (``runs=journal.runs()`` names them; ``by="profile"``
    pools runs per profile) or a dict label -> events. ``against="due"`` measures a retry from the end
    of its backoff; ``"scheduled"`` from the alarm's scheduled time (so a retry includes its backoff).
    """
    if against not in ("due", "scheduled"):
        raise AlarmkitError(f"against must be 'due' or 'scheduled', got {against!r}")
    if by not in ("run", "profile", "scenario"):
        raise AlarmkitError(f"by must be 'run', 'profile' or 'scenario', got {by!r}")
    if isinstance(events, Mapping):
        groups = [(str(k), _lateness_ms(_check(v, f"events[{k!r}]"), against)) for k, v in events.items()]
    else:
        late = _lateness_ms(_check(events), against)
        info = {} if runs is None else {int(r["run_id"]): r for _, r in runs.iterrows()}
        if by != "run" and not info:
            raise AlarmkitError(f"by={by!r} needs runs=journal.runs() to know each run's {by}")

        def name(run: Any) -> str:
            r = info.get(int(run)) if run != -1 else None
            if run == -1:  # events of a run made without a journal: they have no run id
                return "run not journaled"
            if by != "run":
                return str(r[by])
            return f"run {run} · {r['scenario']} ({r['profile']})" if r is not None else f"run {run}"

        late = late.assign(group=[name(r) for r in late["run_id"]])
        groups = [(g, late[late["group"] == g]) for g in dict.fromkeys(late["group"])]
    groups = [(g, d) for g, d in groups if len(d)]
    if not groups:
        raise AlarmkitError("no fire events: the alarm never ran, so there is no lateness to plot")
    top = max(float(d["late_ms"].max()) for _, d in groups)
    unit, scale = _unit(max(top, 1))
    palette = [BLUE, ORANGE, GREEN, VERMILION, PURPLE, SKY, BLACK, YELLOW]
    fig = go.Figure()
    for i, (g, d) in enumerate(groups):
        colour = palette[i % len(palette)]
        box: dict[str, Any] = dict(name=esc(g, LABEL_CHARS), orientation="h", line=dict(color=colour),
                                   meta={"role": "lateness", "n": len(d)}, marker=dict(color=colour, size=6, opacity=0.7))
        v = d["late_ms"].to_numpy(float) / scale
        if len(d) <= DETAIL_LIMIT:
            hover = [f"object: {esc(o, HOVER_CHARS)}<br>fired at {fmt_ms(t)}, {fmt_ms(late)} late<br>retry_count {rc}"
                     for o, t, late, rc in zip(d["object_id"], d["t_ms"], d["late_ms"], d["retry_count"])]
            box.update(x=v, boxpoints="all", jitter=0.4, pointpos=0, hovertext=hover, hoverinfo="text")
        else:  # many fires: the box from its statistics, not from every point (keeps the HTML small)
            q1, med, q3 = np.percentile(v, [25, 50, 75])
            lo_f, hi_f = v[v >= q1 - 1.5 * (q3 - q1)].min(), v[v <= q3 + 1.5 * (q3 - q1)].max()
            label = esc(g, LABEL_CHARS) + esc(f" (n={len(d):,}, max {fmt_ms(v.max() * scale)})")
            box.update(y=[label], name=label, q1=[q1], median=[med], q3=[q3], lowerfence=[lo_f], upperfence=[hi_f],
                       mean=[v.mean()], boxpoints=False)
        fig.add_trace(go.Box(**box))
    what = "due time (end of backoff for retries)" if against == "due" else "scheduled time"
    low = min(float(d["late_ms"].min()) for _, d in groups) / scale
    lo, hi = min(0.0, low), top / scale
    if hi - low <= 0.1 * abs(hi):  # (nearly) equal values: in the middle of the axis, not squashed at its edge
        span = [min(0.0, lo), 2 * hi] if hi > 0 else [lo - 1, hi + 1]
    else:
        pad = 0.05 * (hi - lo)
        span = [lo - (pad if lo < 0 else 0), hi + pad]
    fig.update_xaxes(title_text=f"lateness: fire time − {what} ({unit})", range=span, gridcolor="#e6e6e6")
    fig.update_layout(template="plotly_white", font=_FONT, showlegend=False, height=180 + 60 * len(groups),
                      title=dict(text="lateness of fires", x=0.01, xanchor="left"), margin=dict(l=160, r=20, t=60, b=60))
    return fig


from .._public import publish as _publish  # noqa: E402

_publish(__name__, globals(), __all__)
