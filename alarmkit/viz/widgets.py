"""An explorer panel for JupyterLab: change a scenario's parameters, step through virtual time,
watch the timeline, read the latest events, export the run. Callbacks only call package functions.

    from alarmkit.widgets import Explorer
    Explorer("lease-lab", leases=3)
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import ipywidgets as W
import plotly.graph_objects as go

from ..errors import AlarmkitError
from ..journal import Journal
from .plots import timeline
from ._labels import place_labels
from ._timeline import _unit
from ..runtime.profiles import PROFILES, Latency
from .report import export_run
from ..scenarios import RunResult, get_scenario, run_scenario

__all__ = ["Explorer"]

WIDGET_PLOT_PX = 560  # the plot area of the explorer's 700 px figure

_LABELS = {
    "ttl_ms": "lease lifetime (ms)", "leases": "number of leases", "spacing_ms": "between leases (ms)",
    "revoke_throws": "revoke throws N times", "always_throw": "handler always throws", "noboot": "ctor doesn't re-arm",
    "restart_at_ms": "restart at (ms)", "downtime_ms": "restart downtime (ms)", "horizon_ms": "run until (ms)",
}


def _control(name: str, default: Any) -> W.Widget:
    desc = _LABELS.get(name, name.replace("_", " "))
    style = {"description_width": "150px"}
    if isinstance(default, bool):
        return W.Checkbox(value=default, description=desc, style=style, indent=False)
    if isinstance(default, int):
        return W.IntText(value=default, description=desc, style=style)
    if isinstance(default, float):
        return W.FloatText(value=default, description=desc, style=style)
    # lists, tuples, None and strings: JSON text, parsed with json (never evaluated)
    return W.Text(value=json.dumps(list(default) if isinstance(default, tuple) else default), description=desc, style=style)


def _nothing_yet(t_ms: int, end_ms: int) -> go.Figure:
    """The empty state: the run's time axis and a line saying nothing has happened yet."""
    unit, scale = _unit(end_ms)
    fig = go.Figure(layout=dict(
        template="plotly_white", height=300, title=dict(text="timeline", x=0.01, xanchor="left"),
        xaxis=dict(range=[0, end_ms / scale], title_text=f"virtual time ({unit})", showline=True, linecolor="#999"),
        yaxis=dict(visible=False, range=[0, 1]), meta={"unit": unit, "scale": scale, "events": 0},
        annotations=[dict(text=f"nothing has happened by {t_ms / 1000:.3f} s", x=0.5, y=0.5, xref="paper",
                          yref="paper", showarrow=False, font=dict(size=15, color="#666"))]))
    return fig


def _for_widget(fig: go.Figure, end_ms: int) -> go.Figure:
    """The timeline fitted to the ~680 px widget: the subtitle folded into the title (two lines of one
    text, which cannot overlap on a first draw) and the time axis fixed to the whole run."""
    note = fig.layout.title.subtitle.text
    if note:
        fig.update_layout(title=dict(text=f"{fig.layout.title.text}<br><span style='font-size:12px;color:#666'>"
                                          f"{note}</span>", subtitle=dict(text="")))
    scale = (fig.layout.meta or {}).get("scale") or 1
    if fig.layout.xaxis.range is not None:
        lo = fig.layout.xaxis.range[0]
        fig.update_xaxes(range=[lo, max(fig.layout.xaxis.range[1], end_ms * 1.04 / scale)])
        place_labels(fig, WIDGET_PLOT_PX)  # the labels were placed for a report's wider plot
    return fig


def _still(figure: go.FigureWidget) -> str:
    """The figure as static HTML for an exported notebook (nbconvert shows it when the notebook
    stores no widget state: ``--ExecutePreprocessor.store_widget_state=False``), never fetching
    plotly.js from a CDN."""
    try:  # the notebook renderer's: plotly.js once per notebook, like every other figure
        from ._notebook import offline_html
    except ImportError:  # without it: plotly.js inline in the still, unless plotly's notebook mode put it there
        import plotly.io as pio

        inline = "notebook" not in str(pio.renderers.default or "").split("+")
        html_ = go.Figure(figure).to_html(full_html=False, include_plotlyjs=inline, config={"displaylogo": False})
    else:
        html_ = offline_html(go.Figure(figure))
    return f'<div class="alarmkit-explorer-still">{html_}</div>'


def _value(widget: W.Widget, name: str) -> Any:
    if isinstance(widget, W.Text):
        try:
            return json.loads(widget.value)
        except json.JSONDecodeError:
            raise AlarmkitError(f"{name} = {widget.value!r} is not JSON; write e.g. [300, 1500] or null") from None
    return widget.value


class Explorer(W.VBox):
    """A scenario's controls, a step/play control over virtual time, a live timeline, the latest
    events and an export button. ``explorer.result`` is the latest ``run_scenario`` result."""

    def __init__(self, scenario: str = "lease-lab", *, journal: Journal | None = None, seed: int = 0,
                 profile: str | None = None, faults: Any = None, **params: Any) -> None:
        self.scenario = get_scenario(scenario)
        self.scenario.check_params(params)
        self.journal = journal or Journal()
        self.faults = faults  # e.g. a counterexample's FaultPlan, applied to every run
        self.controls = {n: _control(n, params.get(n, d)) for n, d in self.scenario.params.items()}
        style = {"description_width": "150px"}
        self.profile = W.Dropdown(options=sorted(PROFILES), value=profile or self.scenario.profile,
                                  description="profile", style=style)
        self.seed = W.IntText(value=seed, description="seed", style=style)
        self.latency = W.IntText(value=2, description="fire latency (ms)", style=style)
        self.time = W.IntSlider(value=0, min=0, max=1, description="virtual time (ms)", style=style,
                                continuous_update=False, layout=W.Layout(width="70%"))
        self.play = W.Play(value=0, min=0, max=1, interval=400, description="play")
        W.jslink((self.play, "value"), (self.time, "value"))
        self.figure = go.FigureWidget()
        self.table = W.HTML()
        self.status = W.HTML()
        self.out_path = W.Text(value="report.html", description="export to", style=style)
        self.export_button = W.Button(description="Export HTML", icon="download")
        self.export_button.on_click(lambda _: self.export())
        for w in [*self.controls.values(), self.profile, self.seed, self.latency]:
            w.observe(lambda _: self.rerun(), names="value")
        self.time.observe(lambda change: self.show_until(change["new"]), names="value")
        grid = W.GridBox(list(self.controls.values()) + [self.profile, self.seed, self.latency],
                         layout=W.Layout(grid_template_columns="repeat(3, 1fr)"))
        super().__init__([grid, W.HBox([self.play, self.time]), self.figure, self.status, self.table,
                          W.HBox([self.out_path, self.export_button])])
        self.result: RunResult | None = None
        self.rerun()

    # -- callbacks ------------------------------------------------------------------------
    def params(self) -> dict[str, Any]:
        return {n: _value(w, n) for n, w in self.controls.items()}

    def rerun(self) -> None:
        """Run the scenario again with the current controls; keep the previous run on bad input."""
        try:
            result = run_scenario(
                self.scenario.name, seed=self.seed.value, journal=self.journal,
                profile=PROFILES[self.profile.value].replace(fire_latency=Latency.fixed(max(0, self.latency.value))),
                faults=self.faults, **self.params(),
            )
        except AlarmkitError as err:
            self.status.value = f"<b>not run:</b> {html.escape(str(err))}"
            return
        self.result = result
        self.events = result.events
        end = int(self.events["t_ms"].max()) if len(self.events) else 0
        self.time.max = self.play.max = max(end, 1)
        self.play.step = max(1, end // 40)
        self.status.value = html.escape(
            f"run {result.run_id}: {len(result.attempts)} alarm() attempts, effects {result.effects}, "
            f"{result.event_count} events"
        )
        if self.time.value != end:
            self.time.value = end  # observer redraws
        else:
            self.show_until(end)

    def show_until(self, t_ms: int) -> None:
        """Draw the run as it stood at virtual time ``t_ms``: its events up to then, nothing after."""
        shown = self.events[self.events["t_ms"] <= t_ms]
        end = max(int(self.time.max), 1)
        fig = _nothing_yet(t_ms, end) if shown.empty else timeline(shown, legend="class")
        fig = _for_widget(fig, end)
        with self.figure.batch_update():
            self.figure.data = ()
            self.figure.add_traces(list(fig.data))
            self.figure.layout = fig.layout
        # Assigning a layout relays only the keys it has: a frame without restarts would keep the
        # previous frame's restart lines. Say outright which shapes and annotations there are.
        self.figure.plotly_relayout({"shapes": [x.to_plotly_json() for x in fig.layout.shapes],
                                     "annotations": [x.to_plotly_json() for x in fig.layout.annotations]})
        last = shown.tail(8)[["t_ms", "object_id", "kind", "scheduled_ms", "retry_count", "detail"]]
        self.table.value = last.to_html(index=False, escape=True, na_rep="", border=0) if len(last) else ""

    def _repr_mimebundle_(self, **kwargs: Any) -> dict:
        """The live widget in JupyterLab; in an exported notebook (nbconvert), a still of its current figure."""
        bundle = super()._repr_mimebundle_(**kwargs) or {}
        bundle["text/html"] = _still(self.figure)
        return bundle

    def export(self, path: str | Path | None = None) -> Path:
        """Write the current run's report (self-contained HTML)."""
        out = export_run(self.journal, self.result.run_id, path or self.out_path.value)
        self.status.value = f"wrote {html.escape(str(out))}"
        return out

    def __repr__(self) -> str:
        return f"<Explorer {self.scenario.name} run={self.result and self.result.run_id}>"
