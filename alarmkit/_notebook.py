"""Figures shown in a Jupyter notebook carry an offline HTML copy beside plotly's own mimetype.

JupyterLab and VS Code draw a figure from ``application/vnd.plotly.v1+json``, which nbconvert
cannot render: an executed notebook exported to HTML showed no figures. Importing
``alarmkit.plots`` inside a Jupyter kernel therefore sets plotly's default renderer to
``plotly_mimetype+alarmkit_html``: each figure's output holds both the plotly mimetype (JupyterLab
picks it and stays interactive) and ``text/html`` that draws the figure with plotly.js (nbconvert
picks it). plotly.js itself (~4.8 MB, inline, never from a CDN, no MathJax) travels once per
notebook, in the HTML of the first figure shown in the kernel session; when JupyterLab re-runs the
cell that carried it (which clears that output), the cell's first figure carries it again.

The renderer is only chosen when plotly picked its own Jupyter default (``plotly_mimetype``) and
``PLOTLY_RENDERER`` is unset, so a renderer you chose is left alone; set ``PLOTLY_RENDERER``
(e.g. ``plotly_mimetype``) to opt out. ``alarmkit_html`` is registered everywhere, so
``fig.show("alarmkit_html")`` works outside a kernel too.
"""

from __future__ import annotations

import os
import sys
import uuid
from typing import Any

import plotly.io as pio
from plotly.io.base_renderers import MimetypeRenderer
from plotly.io.json import to_json_plotly
from plotly.offline import get_plotlyjs

__all__ = ["RENDERER", "OfflineHtmlRenderer", "figure_html", "offline_html", "use_in_jupyter"]

RENDERER = "alarmkit_html"
_JUPYTER_DEFAULT = "plotly_mimetype"  # what plotly chooses by itself inside an ipykernel
_CARRIER: list[Any] = []  # [(cell id, message id)] of the execution whose output holds plotly.js


def figure_html(fig_dict: dict, *, with_plotlyjs: bool) -> str:
    """A ``<div>`` and scripts that draw ``fig_dict`` with plotly.js, for an exported notebook page.

    The figure travels as JSON data (every ``<`` written as ``\\u003c``, so no string in it can end
    the script), never as code. Without ``with_plotlyjs`` the page must hold plotly.js elsewhere:
    if it comes later in the page (cells run out of order), the figure is drawn once the page has
    loaded."""
    layout = fig_dict.get("layout") or {}
    div = "fig-" + uuid.uuid4().hex
    width = f"{int(layout['width'])}px" if layout.get("width") else "100%"
    height = f"{int(layout['height'])}px" if layout.get("height") else "525px"
    spec = {"data": fig_dict.get("data", []), "layout": layout, "config": {"responsive": True, "displaylogo": False}}
    if fig_dict.get("frames"):
        spec["frames"] = fig_dict["frames"]
    data = to_json_plotly(spec).replace("<", "\\u003c")
    library = ""
    if with_plotlyjs:
        library = ("<script>window.PlotlyConfig = {MathJaxConfig: 'local'};</script>\n"
                   f"<script>{get_plotlyjs()}</script>\n")
    return (f"{library}<div id=\"{div}\" class=\"plotly-graph-div\" style=\"height:{height}; width:{width};\"></div>\n"
            f"<script type=\"application/json\" id=\"{div}-figure\">{data}</script>\n"
            "<script>(function () {\n"
            f"  var draw = function () {{ Plotly.newPlot(\"{div}\", JSON.parse("
            f"document.getElementById(\"{div}-figure\").textContent)); }};\n"
            "  if (window.Plotly) { draw(); } else { window.addEventListener(\"DOMContentLoaded\", draw); }\n"
            "})();</script>")


def _execution() -> tuple[Any, Any]:
    """(cell id, message id) of the kernel's current execute request; (None, None) outside a kernel.

    JupyterLab sends the cell id with each request; nbclient (nbconvert) does not, and there every
    execution is a fresh kernel running the notebook top to bottom, so once per session is right."""
    ip = sys.modules["IPython"].get_ipython() if "IPython" in sys.modules else None
    kernel = getattr(ip, "kernel", None)
    try:
        parent = kernel.get_parent("shell") if kernel is not None else {}
    except Exception:  # an older or unusual kernel: fall back to once per session
        parent = {}
    parent = parent or {}
    return (parent.get("metadata") or {}).get("cellId"), (parent.get("header") or {}).get("msg_id")


def _carry_plotlyjs() -> bool:
    """Whether this figure's HTML must hold plotly.js: the first figure of the session, or the
    first of a new run of the cell that held it (re-running a cell clears its old outputs)."""
    cell, msg = _execution()
    if not _CARRIER:
        _CARRIER.append((cell, msg))
        return True
    held_cell, held_msg = _CARRIER[0]
    if cell is not None and cell == held_cell and msg != held_msg:
        _CARRIER[0] = (cell, msg)
        return True
    return False


def offline_html(fig: Any) -> str:
    """``fig`` (a figure or figure dict) as ``text/html`` for a notebook output, carrying plotly.js
    when it is this session's first (see ``_carry_plotlyjs``): what a widget's still should use."""
    fig_dict = fig if isinstance(fig, dict) else fig.to_dict()
    return figure_html(fig_dict, with_plotlyjs=_carry_plotlyjs())


class OfflineHtmlRenderer(MimetypeRenderer):
    """plotly renderer ``alarmkit_html``: ``text/html`` drawing the figure offline (see the module)."""

    def to_mimebundle(self, fig_dict: dict) -> dict:
        return {"text/html": offline_html(fig_dict)}


def use_in_jupyter() -> bool:
    """Inside a Jupyter kernel where plotly kept its own default, show figures as plotly mimetype
    plus offline HTML. Registers the ``alarmkit_html`` renderer in any case. Returns whether it
    changed the default renderer."""
    if RENDERER not in pio.renderers:
        pio.renderers[RENDERER] = OfflineHtmlRenderer()
    if os.environ.get("PLOTLY_RENDERER") or pio.renderers.default != _JUPYTER_DEFAULT:
        return False
    ip = sys.modules["IPython"].get_ipython() if "IPython" in sys.modules else None
    if type(ip).__name__ != "ZMQInteractiveShell":
        return False
    pio.renderers.default = f"{_JUPYTER_DEFAULT}+{RENDERER}"
    return True
