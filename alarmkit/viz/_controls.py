"""The explorer's controls: one per scenario parameter, shaped by its default, never a JSON text field.

bool: a checkbox (a toggle); int and float: a number field; an optional time (default None): a
checkbox "set" beside a number field; text with known choices (``CHOICES``): a dropdown; a list of
ints: a tags field of ints; anything else (the ledger's grant tuples): shown, fixed at its default.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as W

from ..runtime.profiles import PROFILES

__all__ = ["control", "on_change", "value_of", "CHOICES", "LABELS", "Optional", "Fixed"]

LABELS = {
    "ttl_ms": "lease lifetime (ms)", "leases": "number of leases", "spacing_ms": "between leases (ms)",
    "revoke_throws": "revoke throws N times", "always_throw": "handler always throws", "noboot": "ctor doesn't re-arm",
    "restart_at_ms": "restart at (ms)", "downtime_ms": "restart downtime (ms)", "horizon_ms": "run until (ms)",
}
# text parameters whose values the scenarios take from a fixed set (their docstrings and `alarmkit list`)
CHOICES: dict[str, list[str]] = {
    "outage": ["evict", "restart"],
    "hosting": ["root", "facet"],
    "compare_profile": sorted(PROFILES),
    "compatibility_date": ["2026-01-28", "2026-03-15"],
}
_STYLE = {"description_width": "150px"}


class Optional(W.HBox):
    """An optional int (a time or count whose default is None): unchecked is None."""

    def __init__(self, description: str, value: int | None) -> None:
        self.on = W.Checkbox(value=value is not None, description=description, style=_STYLE, indent=False,
                             layout=W.Layout(width="190px"))
        self.number = W.IntText(value=value or 0, disabled=value is None, layout=W.Layout(width="110px"))
        self.on.observe(lambda ch: setattr(self.number, "disabled", not ch["new"]), names="value")
        super().__init__([self.on, self.number])

    @property
    def value(self) -> int | None:
        return self.number.value if self.on.value else None

    @value.setter
    def value(self, v: int | None) -> None:
        if v is None:  # uncheck first: a number set while checked would run the scenario with it
            self.on.value = False
            self.number.value = 0
        else:
            self.number.value = v
            self.on.value = True

    def on_change(self, handler: Any) -> None:
        """Call ``handler`` when the value changes: the checkbox, or the number while checked."""
        self.on.observe(handler, names="value")
        self.number.observe(lambda ch: handler(ch) if self.on.value else None, names="value")


class Fixed(W.HTML):
    """A parameter the explorer does not edit (its default is a structure): shown, always its value."""

    def __init__(self, description: str, value: Any) -> None:
        self._fixed = value
        n = len(value) if isinstance(value, (list, tuple)) else 1
        super().__init__(value=f"<span style='color:#555'>{description}: the default ({n} items)</span>")

    @property
    def fixed(self) -> Any:
        return self._fixed


def control(name: str, default: Any, value: Any = None) -> W.Widget:
    """The widget for parameter ``name``: its shape from ``default``, its value ``value`` (default: the
    default). See the module for the shapes."""
    desc = LABELS.get(name, name.replace("_", " "))
    v = default if value is None else value
    if isinstance(default, bool):
        return W.Checkbox(value=bool(v), description=desc, style=_STYLE, indent=False)
    if isinstance(default, int):
        return W.IntText(value=v, description=desc, style=_STYLE)
    if isinstance(default, float):
        return W.FloatText(value=v, description=desc, style=_STYLE)
    if default is None:
        return Optional(desc, value)
    if isinstance(default, str):
        options = CHOICES.get(name)
        if options and default in options and v in options:
            return W.Dropdown(options=options, value=v, description=desc, style=_STYLE)
        return W.Text(value=v, description=desc, style=_STYLE)
    if isinstance(default, (list, tuple)) and default and all(isinstance(x, int) and not isinstance(x, bool)
                                                              for x in default):
        return W.IntsInput(value=list(v), description=desc, style=_STYLE, allow_duplicates=True)
    return Fixed(desc, v)


def on_change(widget: W.Widget, handler: Any) -> None:
    """Call ``handler`` when ``widget``'s value changes (a fixed parameter never does)."""
    if isinstance(widget, Optional):
        widget.on_change(handler)
    elif not isinstance(widget, Fixed):
        widget.observe(handler, names="value")


def value_of(widget: W.Widget) -> Any:
    """What the scenario gets from ``widget``."""
    if isinstance(widget, Fixed):
        return widget.fixed
    if isinstance(widget, W.IntsInput):
        return list(widget.value)
    return widget.value
