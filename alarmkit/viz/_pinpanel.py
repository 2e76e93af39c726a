"""The explorer's pin row: "Pin this run", "Unpin", a toggle for the diff figure, and the lines of
``Pin`` (alarmkit.viz.pinning) saying what the latest run does differently from the pinned one.

The row is always there (buttons disabled when they cannot act), so pinning never moves the
timeline above it. The diff figure is made only while its toggle is on: the panel holds no plot
otherwise.
"""

from __future__ import annotations

from typing import Any, Callable

import ipywidgets as W
import plotly.graph_objects as go

from ..errors import AlarmkitError
from ._replay import redraw
from .pinning import Pin

__all__ = ["PinPanel"]

_CSS = ("<style>.alarmkit-pin-summary{max-height:11em;overflow-y:auto;margin:2px 0 4px;font-size:13px}"
        ".alarmkit-pin-summary ul{margin:2px 0 0;padding-left:1.4em}"
        ".alarmkit-pin-figure>*{width:100%;min-width:0;flex:1 1 auto}</style>")


class PinPanel(W.Box):
    """Pinning for one explorer: ``current()`` gives the explorer's latest ``RunResult``. A column
    (a ``Box``, not a ``VBox``: the explorer is the last ``.widget-vbox`` of its output)."""

    def __init__(self, current: Callable[[], Any]) -> None:
        self._current = current
        self.state = Pin()
        self.pin_button = W.Button(description="Pin this run", icon="thumb-tack",
                                   tooltip="diff every later run against this one")
        self.unpin_button = W.Button(description="Unpin", icon="times", disabled=True)
        self.figure_toggle = W.ToggleButton(value=False, description="diff figure", icon="columns", disabled=True,
                                            tooltip="the pinned run and this one as paired lanes per object")
        self.summary = W.HTML(layout=W.Layout(width="100%"))
        self.summary.add_class("alarmkit-pin-summary")
        self.figure: go.FigureWidget | None = None
        self.figure_box = W.Box([], layout=W.Layout(width="100%", flex_flow="column", align_items="stretch"))
        self.figure_box.add_class("alarmkit-pin-figure")
        self.pin_button.on_click(lambda _: self.pin())
        self.unpin_button.on_click(lambda _: self.unpin())
        self.figure_toggle.observe(lambda _: self._draw(), names="value")
        super().__init__([W.HTML(_CSS), W.HBox([self.pin_button, self.unpin_button, self.figure_toggle]),
                          self.summary, self.figure_box], layout=W.Layout(width="100%", flex_flow="column"))
        self.add_class("alarmkit-pin")
        self._show()

    def pin(self) -> None:
        """Pin the explorer's current run (the button)."""
        try:
            self.state.pin(self._current())
        except AlarmkitError as err:
            self.state.error = str(err)
        self._show()

    def unpin(self) -> None:
        self.state.unpin()
        self.figure_toggle.value = False
        self._show()

    def update(self, current: Any) -> None:
        """The explorer made ``current``: diff it against the pinned run, if one is."""
        self.state.compare(current)
        self._show()

    def _show(self) -> None:
        s = self.state
        self.unpin_button.disabled = not s.pinned
        self.figure_toggle.disabled = s.diff is None
        self.summary.value = s.html()
        self._draw()

    def _draw(self) -> None:
        """The diff figure while the toggle is on and there is a diff; no plot otherwise."""
        d = self.state.diff
        if not self.figure_toggle.value or d is None:
            self.figure = None
            self.figure_box.children = ()
            return
        fig = d.figure()
        fig.update_layout(width=None, autosize=True)
        if self.figure is None:
            self.figure = go.FigureWidget(fig)
            self.figure_box.children = (self.figure,)
            return
        redraw(self.figure, fig)
