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
import plotly.graph_objects as go

from ..errors import AlarmkitError
from ..journal import Journal
from .plots import timeline
from ._fit import Fit
from ._replay import at_instant, for_widget, frames, nothing_yet, redraw
from ._timeline import fmt_ms
from ._controls import Fixed, control, on_change, value_of
from ._pinpanel import PinPanel
from ..journal import run_counts
from ..scenarios.registry import summarize
from ..runtime.profiles import PROFILES, Latency
from .report import export_run
from ..scenarios import RunResult, get_scenario, run_scenario

__all__ = ["Explorer"]

# the figure box is a column whose child (plotly's widget) takes its whole width: plotly autosizes to it
_STALE_CSS = ("<style>.alarmkit-stale{opacity:.35;filter:grayscale(1);pointer-events:none}"
              ".alarmkit-verdict{margin:4px 0 6px}"
              ".alarmkit-figure-box>*{width:100%;min-width:0;flex:1 1 auto}</style>")


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
        self.figure._config = {**self.figure._config, "responsive": True}  # Fit's resize event sizes it to its box
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
        super().__init__([W.HTML(_STALE_CSS), Fit(), self.verdict, grid, W.HBox([self.play, self.time]), self.status,
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
        self.full = for_widget(timeline(self.events, legend="class"), self.events) if len(self.events) else None
        self.frames = frames(self.events)
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
        fig = nothing_yet(t_ms, end) if self.full is None else self._frame(shown, t_ms)
        redraw(self.figure, fig)
        self.status.value = html.escape(self._status(shown, t_ms))
        last = shown.tail(8)[["t_ms", "object_id", "kind", "scheduled_ms", "retry_count", "detail"]]
        self.table.value = last.to_html(index=False, escape=True, na_rep="", border=0) if len(last) else ""

    def _frame(self, shown: Any, t_ms: int) -> go.Figure:
        """The run's whole figure with what happened after ``t_ms`` left out, the cursor and the cut marker."""
        head = (f"{self.scenario.name} · run {self.result.run_id} · "
                f"{len(shown):,} of {len(self.events):,} events by {fmt_ms(t_ms)}")
        return at_instant(self.full, t_ms, head, nothing=shown.empty)

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
