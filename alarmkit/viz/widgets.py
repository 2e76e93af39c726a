"""An explorer panel for JupyterLab: change a scenario's parameters, step through virtual time,
watch the timeline, read the latest events, export the run. Callbacks only call package functions.

    from alarmkit.widgets import Explorer
    Explorer("lease-lab", leases=3)
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import ipywidgets as W
import numpy as np
import plotly.graph_objects as go

from ..errors import AlarmkitError
from ..journal import Journal
from .plots import timeline
from ._labels import place_labels
from ._timeline import _unit, esc, fmt_ms
from ._controls import Fixed, control, on_change, value_of
from ._pinpanel import PinPanel
from ..journal import run_counts
from ..scenarios.registry import summarize
from ..runtime.profiles import PROFILES, Latency
from .report import export_run
from ..scenarios import RunResult, get_scenario, run_scenario

__all__ = ["Explorer"]

WIDGET_PLOT_PX = 560  # the narrowest plot area the explorer's labels are placed for (the figure takes the widget's width)
FRAMES = 120  # Play steps through at most this many instants, the last one the run's last event
# the figure box is a column whose child (plotly's widget) takes its whole width: plotly autosizes to it
_STALE_CSS = ("<style>.alarmkit-stale{opacity:.35;filter:grayscale(1);pointer-events:none}"
              ".alarmkit-verdict{margin:4px 0 6px}"
              ".alarmkit-figure-box>*{width:100%;min-width:0;flex:1 1 auto}</style>")


def _nothing_yet(t_ms: int, end_ms: int) -> go.Figure:
    """The empty state of a run with no events at all: its time axis and a line saying so."""
    unit, scale = _unit(end_ms)
    fig = go.Figure(layout=dict(
        template="plotly_white", height=300, title=dict(text="timeline", x=0.01, xanchor="left"),
        xaxis=dict(range=[0, end_ms / scale], title_text=f"virtual time ({unit})", showline=True, linecolor="#999"),
        yaxis=dict(visible=False, range=[0, 1]), meta={"unit": unit, "scale": scale, "events": 0},
        annotations=[dict(text=f"nothing has happened by {t_ms / 1000:.3f} s", x=0.5, y=0.5, xref="paper",
                          yref="paper", showarrow=False, font=dict(size=15, color="#666"))]))
    return fig


def _for_widget(fig: go.Figure, end_ms: int) -> go.Figure:
    """The whole run's timeline fitted to the widget, built once per run so that scrubbing never moves
    the lanes, the height or the unit: the subtitle folded into the title (two lines of one text, which
    cannot overlap on a first draw), the x axis on the activity (the idle tail cut, a marker saying so)
    and, under it, the whole run as an overview strip (plotly's range slider) to brush a range."""
    note = fig.layout.title.subtitle.text
    if note:
        fig.update_layout(title=dict(text=f"{fig.layout.title.text}<br><span style='font-size:12px;color:#666'>"
                                          f"{note}</span>", subtitle=dict(text="")))
    meta = dict(fig.layout.meta or {})
    scale = meta.get("scale") or 1
    if fig.layout.xaxis.range is not None:  # the view _build opened on: the activity, idle evictions after it cut
        lo, hi = fig.layout.xaxis.range
        cut = end_ms / scale > hi
        fig.update_xaxes(range=[lo, hi], rangeslider=dict(visible=True, thickness=0.09, bgcolor="#f4f4f4",
                                                          range=[lo, max(hi, end_ms * 1.02 / scale)]))
        fig.update_layout(height=(fig.layout.height or 450) + 70,
                          margin=dict(b=(fig.layout.margin.b or 60) + 70), width=None, autosize=True)
        meta.update(view=[lo, hi], cut=bool(cut), end_ms=end_ms, yrange=list(fig.layout.yaxis.range or [1, -1]))
        fig.update_layout(meta=meta)
        place_labels(fig, WIDGET_PLOT_PX)  # the labels were placed for a report's wider plot
    return fig


def _frames(events) -> list[int]:
    """The instants Play steps through: the run's distinct event times, thinned to ``FRAMES``, always
    ending on the last one (so Play ends with every event drawn)."""
    times = sorted(set(int(t) for t in events["t_ms"])) if len(events) else [0]
    if len(times) > FRAMES:
        step = len(times) / (FRAMES - 1)
        times = [times[min(len(times) - 1, round(i * step))] for i in range(FRAMES - 1)] + [times[-1]]
    return sorted(set(times))


def _upto(trace: dict, x_t: float) -> dict:
    """``trace`` (plotly JSON) with what happened after ``x_t`` left out: a marker or label by its own x;
    a line (segments split by gaps) by where it starts, so an arm's arrow shows the due time it set."""
    xs = trace.get("x")
    if xs is None:
        return trace
    x = np.asarray(xs, dtype=float)
    gap = np.isnan(x)
    if (trace.get("meta") or {}).get("role") in ("events", "label") or not gap.any():
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


def _still(figure: go.FigureWidget, t_ms: int | None = None) -> str:
    """The figure as static HTML for an exported notebook (nbconvert shows it when the notebook
    stores no widget state: ``--ExecutePreprocessor.store_widget_state=False``), never fetching
    plotly.js from a CDN; captioned as a still, with the way to run it live."""
    try:  # the notebook renderer's: plotly.js once per notebook, like every other figure
        from ._notebook import offline_html
    except ImportError:  # without it: plotly.js inline in the still, unless plotly's notebook mode put it there
        import plotly.io as pio

        inline = "notebook" not in str(pio.renderers.default or "").split("+")
        html_ = go.Figure(figure).to_html(full_html=False, include_plotlyjs=inline, config={"displaylogo": False})
    else:
        html_ = offline_html(go.Figure(figure))
    when = f" at {fmt_ms(t_ms)}" if t_ms is not None else ""
    caption = (f'<p class="alarmkit-still-caption"><b>A still of the explorer{when}</b>: this page cannot run it. '
               "To drive it live (parameters, the time slider, Play), run <code>python3 dev.py lab</code> in the "
               "alarmkit checkout, open this notebook and run its cells.</p>")
    return f'<div class="alarmkit-explorer-still">{caption}{html_}</div>'


class Explorer(W.VBox):
    """A replay of one scenario run: the verdict first, a control per parameter, a time slider and Play
    over virtual time, the timeline as it stood at the slider's time (a "now" cursor; lanes, height and
    unit fixed for the run), the counts so far, the latest events and an export button.
    ``explorer.result`` is the latest ``run_scenario`` result. A value the scenario refuses greys the
    figure (it is the previous run's) and the status line says what the parameter takes.

    "Pin this run" (``pin()``; ``pin=True`` pins the first run) diffs every later run against the
    pinned one (``ak.diff(pinned, current)``, kept as ``pinned_diff``): the row under the figure says
    where they part and how many events differ, or "same as the pinned run"; its toggle draws the
    diff's figure; "Unpin" (``unpin()``) forgets it. Each explorer pins its own run."""

    def __init__(self, scenario: str = "lease-lab", *, journal: Journal | None = None, seed: int = 0,
                 profile: str | None = None, faults: Any = None, pin: bool = False, **params: Any) -> None:
        self.scenario = get_scenario(scenario)
        self.scenario.check_params(params)
        self.journal = journal or Journal()
        self.faults = faults  # e.g. a counterexample's FaultPlan, applied to every run
        self.controls = {n: control(n, d, params.get(n)) for n, d in self.scenario.params.items()}
        style = {"description_width": "150px"}
        self.profile = W.Dropdown(options=sorted(PROFILES), value=profile or self.scenario.profile,
                                  description="profile", style=style)
        self.seed = W.IntText(value=seed, description="seed", style=style)
        self.latency = W.IntText(value=2, description="fire latency (ms)", style=style)
        self.time = W.IntSlider(value=0, min=0, max=1, description="virtual time (ms)", style=style,
                                continuous_update=False, layout=W.Layout(width="70%"))
        self.play = W.Play(value=0, min=0, max=1, step=1, interval=300, description="play")
        self.frames: list[int] = [0]
        self.play.observe(lambda ch: self._to_frame(ch["new"]), names="value")
        self.figure = go.FigureWidget()
        self.figure.layout.autosize = True
        self.figure_box = W.Box([self.figure], layout=W.Layout(width="100%", flex_flow="column", align_items="stretch"))
        self.figure_box.add_class("alarmkit-figure-box")
        self.verdict = W.HTML(layout=W.Layout(width="100%"))
        self.verdict.add_class("alarmkit-verdict")
        self.table = W.HTML()
        self.pinning = PinPanel(lambda: self.result)
        self.status = W.HTML()
        self.status.add_class("alarmkit-status")
        self.out_path = W.Text(value="report.html", description="export to", style=style)
        self.export_button = W.Button(description="Export HTML", icon="download")
        self.export_button.on_click(lambda _: self.export())
        for w in [*self.controls.values(), self.profile, self.seed, self.latency]:
            on_change(w, lambda _: self.rerun())
        self.time.observe(lambda change: self.show_until(change["new"]), names="value")
        grid = W.GridBox(list(self.controls.values()) + [self.profile, self.seed, self.latency],
                         layout=W.Layout(grid_template_columns="repeat(3, 1fr)"))
        super().__init__([W.HTML(_STALE_CSS), self.verdict, grid, W.HBox([self.play, self.time]), self.status,
                          self.figure_box, self.pinning, self.table, W.HBox([self.out_path, self.export_button])],
                         layout=W.Layout(width="100%"))
        self.add_class("alarmkit-explorer")
        self.result: RunResult | None = None
        self.full: go.Figure | None = None
        self.rerun()
        if pin:
            self.pin()

    # -- callbacks ------------------------------------------------------------------------
    def params(self) -> dict[str, Any]:
        return {n: value_of(w) for n, w in self.controls.items() if not isinstance(w, Fixed)}

    def rerun(self) -> None:
        """Run the scenario again with the current controls; on a refused value keep the previous run,
        greyed, and say what the parameter takes."""
        try:
            result = run_scenario(
                self.scenario.name, seed=self.seed.value, journal=self.journal,
                profile=PROFILES[self.profile.value].replace(fire_latency=Latency.fixed(max(0, self.latency.value))),
                faults=self.faults, **self.params(),
            )
        except (AlarmkitError, TypeError, ValueError, ArithmeticError) as err:
            said = str(err) if isinstance(err, AlarmkitError) else f"{type(err).__name__}: {err}"
            self.status.value = (f"<b>not run:</b> {html.escape(said)}<br><i>the greyed figure is the previous "
                                 "run; change the value to run again</i>")
            self.figure_box.add_class("alarmkit-stale")
            return
        self.figure_box.remove_class("alarmkit-stale")
        self.result = result
        self.events = result.events
        self.verdict.value = result.verdict.html()
        end = int(self.events["t_ms"].max()) if len(self.events) else 0
        self.full = _for_widget(timeline(self.events, legend="class"), end) if len(self.events) else None
        self.frames = _frames(self.events)
        self.pinning.update(result)
        self.time.max = max(end, 1)
        self.play.max = max(len(self.frames) - 1, 1)
        if self.play.value != len(self.frames) - 1:
            with self.play.hold_trait_notifications():
                self.play.value = len(self.frames) - 1
        if self.time.value != end:
            self.time.value = end  # observer redraws
        else:
            self.show_until(end)

    def pin(self) -> None:
        """Pin the current run: every later run is diffed against it ("Pin this run")."""
        self.pinning.pin()

    def unpin(self) -> None:
        self.pinning.unpin()

    @property
    def pinned(self) -> RunResult | None:
        """The pinned run, or None."""
        return self.pinning.state.run

    @property
    def pinned_diff(self) -> Any:
        """The ``RunDiff`` of the current run against the pinned one (``ak.diff(pinned, current)``), or
        None: nothing pinned, the current run is the pinned one, or the diff was refused (the row says why)."""
        return self.pinning.state.diff

    def pin_summary(self) -> str:
        """What the pin row says, as plain lines: what is pinned, or how the current run differs from it
        (the count of differing events by status, the first divergence with its virtual time, the rest
        of ``pinned_diff.summary()``), or "Same as the pinned run"."""
        return "\n".join(self.pinning.state.lines())

    def _to_frame(self, i: int) -> None:
        self.time.value = self.frames[max(0, min(int(i), len(self.frames) - 1))]

    def show_until(self, t_ms: int) -> None:
        """Draw the run as it stood at virtual time ``t_ms``: its events up to then, nothing after, on the
        run's own lanes and axes, with a "now" cursor; the title, counts and latest events follow."""
        shown = self.events[self.events["t_ms"] <= t_ms]
        end = max(int(self.time.max), 1)
        fig = _nothing_yet(t_ms, end) if self.full is None else self._frame(shown, t_ms)
        with self.figure.batch_update():
            self.figure.data = ()
            self.figure.add_traces(list(fig.data))
            self.figure.layout = fig.layout
        # Assigning a layout relays only the keys it has: a frame without restarts would keep the
        # previous frame's restart lines. Say outright which shapes and annotations there are.
        self.figure.plotly_relayout({"shapes": [x.to_plotly_json() for x in fig.layout.shapes],
                                     "annotations": [x.to_plotly_json() for x in fig.layout.annotations]})
        self.status.value = html.escape(self._status(shown, t_ms))
        last = shown.tail(8)[["t_ms", "object_id", "kind", "scheduled_ms", "retry_count", "detail"]]
        self.table.value = last.to_html(index=False, escape=True, na_rep="", border=0) if len(last) else ""

    def _frame(self, shown: Any, t_ms: int) -> go.Figure:
        """The run's whole figure with what happened after ``t_ms`` left out, the cursor and the cut marker."""
        full = self.full
        meta = full.layout.meta
        x_t = t_ms / (meta.get("scale") or 1)
        fig = go.Figure(layout=full.layout)
        fig.add_traces([_upto(t.to_plotly_json(), x_t) for t in full.data])
        fig.layout.shapes = [s for s in full.layout.shapes if s.x0 is None or s.x0 <= x_t]
        lo, hi = meta["view"]
        y0, y1 = meta["yrange"]
        past = x_t > hi
        at = min(x_t, hi)
        fig.add_trace(go.Scatter(x=[at, at], y=[y0, y1], mode="lines+text",
                                 text=["", f"now {fmt_ms(t_ms)}" + (" ▸" if past else "")],
                                 textposition="middle right" if at < (lo + hi) / 2 else "middle left",
                                 textfont=dict(size=11, color="#333"), line=dict(color="#333", width=1.5, dash="dash"),
                                 hoverinfo="skip", showlegend=False, name="now", meta={"role": "cursor"},
                                 uid="alarmkit-now"))
        if meta.get("cut"):
            fig.add_trace(go.Scatter(x=[hi], y=[y0], mode="text", textposition="top left", showlegend=False,
                                     text=[f"idle until {fmt_ms(meta['end_ms'])}: cut ▸ (strip below: whole run)"],
                                     textfont=dict(size=11, color="#777"), hoverinfo="skip", name="cut",
                                     meta={"role": "cut"}))
        if shown.empty:
            fig.layout.annotations = [dict(text=f"nothing has happened by {t_ms / 1000:.3f} s", x=0.5, y=0.5,
                                           xref="paper", yref="paper", showarrow=False,
                                           font=dict(size=15, color="#666"))]
        place_labels(fig, WIDGET_PLOT_PX)  # again, around the cursor: no label may sit on a vertical line
        note = full.layout.title.text.split("<br>", 1)
        head = (f"{esc(self.scenario.name)} · run {self.result.run_id} · "
                f"{len(shown):,} of {len(self.events):,} events by {fmt_ms(t_ms)}")
        fig.layout.title.text = head + ("<br>" + note[1] if len(note) > 1 else "")
        return fig

    def _status(self, shown: Any, t_ms: int) -> str:
        c = run_counts(shown)
        eff = summarize(shown)["effects"]
        return (f"run {self.result.run_id} at {fmt_ms(t_ms)}: {len(shown):,} of {len(self.events):,} events · "
                f"{c['runs']} alarm() attempts ({c['retries']} {'retry' if c['retries'] == 1 else 'retries'}) · "
                f"{c['ok']} ok, {c['failed']} failed · effects {eff}")

    def _repr_mimebundle_(self, **kwargs: Any) -> dict:
        """The live widget in JupyterLab; in an exported notebook (nbconvert), a still of its current figure."""
        bundle = super()._repr_mimebundle_(**kwargs) or {}
        bundle["text/html"] = _still(self.figure, self.time.value)
        if self.pinned is not None:  # the pin row's lines (escaped by Pin.html), under the still
            bundle["text/html"] += f'<div class="alarmkit-pin-summary">{self.pinning.summary.value}</div>'
        return bundle

    def export(self, path: str | Path | None = None) -> Path:
        """Write the current run's report (self-contained HTML), its verdict first."""
        out = export_run(self.journal, self.result.run_id, path or self.out_path.value, verdict=self.result.verdict)
        self.status.value = f"wrote {html.escape(str(out))}"
        return out

    def __repr__(self) -> str:
        pinned = f" pinned={self.pinned.run_id}" if self.pinned is not None else ""
        return f"<Explorer {self.scenario.name} run={self.result and self.result.run_id}{pinned}>"
