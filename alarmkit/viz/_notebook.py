"""Figures shown in a Jupyter notebook carry an offline HTML copy beside plotly's own mimetype.

JupyterLab and VS Code draw a figure from ``application/vnd.plotly.v1+json``, which nbconvert
cannot render: an executed notebook exported to HTML showed no figures. Importing
``alarmkit.plots`` inside a Jupyter kernel therefore sets plotly's default renderer to
``plotly_mimetype+alarmkit_html``: each figure's output holds both the plotly mimetype (JupyterLab
picks it and stays interactive) and ``text/html`` that draws the figure with plotly.js (nbconvert
picks it). plotly.js itself (~4.8 MB, never from a CDN, no MathJax) is loaded once per notebook, by
the HTML of the first figure shown in the kernel session; when JupyterLab re-runs or deletes the
cell that carried it (which drops that output), the next figure carries it again. That figure loads
``plotly.min.js`` beside the notebook (the kernel's working folder; written tagged by
``_plotlyjs``, as beside a folder of reports), so an executed notebook holds a few hundred KB, not
5 MB; where that file is someone else's or cannot be written, plotly.js travels inline as before.

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

from ._plotlyjs import PLOTLY_FILE, share_plotly_js

__all__ = ["RENDERER", "OfflineHtmlRenderer", "figure_html", "offline_html", "use_in_jupyter"]

RENDERER = "alarmkit_html"
_JUPYTER_DEFAULT = "plotly_mimetype"  # what plotly chooses by itself inside an ipykernel
_CARRIER: list[Any] = []  # [cell id] of the output holding plotly.js (None: unknown), once one does
_RUNNING: list[Any] = []  # [cell id] of the cell running now, as the pre_run_cell hook last saw it


def figure_html(fig_dict: dict, *, with_plotlyjs: bool, plotlyjs_src: str | None = None) -> str:
    """A ``<div>`` and scripts that draw ``fig_dict`` with plotly.js, for an exported notebook page.

    The figure travels as JSON data (every ``<`` written as ``\\u003c``, so no string in it can end
    the script), never as code. Without ``with_plotlyjs`` the page must hold plotly.js elsewhere:
    if it comes later in the page (cells run out of order), the figure is drawn once the page has
    loaded. With ``plotlyjs_src`` (and ``with_plotlyjs``), plotly.js is loaded from that file, not inlined."""
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
        code = f'<script src="{plotlyjs_src}"></script>' if plotlyjs_src else f"<script>{get_plotlyjs()}</script>"
        library = f"<script>window.PlotlyConfig = {{MathJaxConfig: 'local'}};</script>\n{code}\n"
    return (f"{library}<div id=\"{div}\" class=\"plotly-graph-div\" style=\"height:{height}; width:{width};\"></div>\n"
            f"<script type=\"application/json\" id=\"{div}-figure\">{data}</script>\n"
            "<script>(function () {\n"
            f"  var draw = function () {{ Plotly.newPlot(\"{div}\", JSON.parse("
            f"document.getElementById(\"{div}-figure\").textContent)); }};\n"
            "  if (window.Plotly) { draw(); } else { window.addEventListener(\"DOMContentLoaded\", draw); }\n"
            "})();</script>")


def _on_run_cell(info: Any) -> None:
    """IPython ``pre_run_cell`` hook. JupyterLab sends each cell's id, and the ids of cells deleted
    since, with every run; re-running the cell that holds plotly.js clears that output, deleting it
    drops it: either way the next figure carries plotly.js again. nbclient (nbconvert) sends no
    cell ids; there a fresh kernel runs the notebook top to bottom, so once per session is right."""
    cell = getattr(info, "cell_id", None)
    deleted = (getattr(info, "cell_meta", None) or {}).get("deletedCells") or []
    _RUNNING[:] = [cell]
    if _CARRIER and _CARRIER[0] is not None and (_CARRIER[0] == cell or _CARRIER[0] in deleted):
        _CARRIER.clear()


def _carry_plotlyjs() -> bool:
    """Whether this figure's HTML must hold plotly.js: no output of this session holds it yet."""
    if _CARRIER:
        return False
    _CARRIER.append(_RUNNING[0] if _RUNNING else None)
    return True


def offline_html(fig: Any) -> str:
    """``fig`` (a figure or figure dict) as ``text/html`` for a notebook output, carrying plotly.js
    when no output of the session holds it yet: what a widget's still should use."""
    fig_dict = fig if isinstance(fig, dict) else fig.to_dict()
    carry = _carry_plotlyjs()
    # Only a Jupyter kernel's figures share the file (its folder is the notebook's); anywhere else (a
    # script, a test, a widget's still asked for outside Lab) the HTML stays standalone and nothing is written.
    src = PLOTLY_FILE if carry and _in_kernel() and share_plotly_js(os.getcwd()) else None
    return figure_html(fig_dict, with_plotlyjs=carry, plotlyjs_src=src)


class OfflineHtmlRenderer(MimetypeRenderer):
    """plotly renderer ``alarmkit_html``: ``text/html`` drawing the figure offline (see the module)."""

    def to_mimebundle(self, fig_dict: dict) -> dict:
        return {"text/html": offline_html(fig_dict)}


def _in_kernel() -> bool:
    """Whether this process is a Jupyter kernel (IPython's ZMQ shell), as ``use_in_jupyter`` asks."""
    ip = sys.modules["IPython"].get_ipython() if "IPython" in sys.modules else None
    return type(ip).__name__ == "ZMQInteractiveShell"


def use_in_jupyter() -> bool:
    """Inside a Jupyter kernel where plotly kept its own default, show figures as plotly mimetype
    plus offline HTML. Registers the ``alarmkit_html`` renderer in any case. Returns whether it
    changed the default renderer."""
    if RENDERER not in pio.renderers:
        pio.renderers[RENDERER] = OfflineHtmlRenderer()
    if os.environ.get("PLOTLY_RENDERER") or pio.renderers.default != _JUPYTER_DEFAULT:
        return False
    if not _in_kernel():
        return False
    ip = sys.modules["IPython"].get_ipython()
    pio.renderers.default = f"{_JUPYTER_DEFAULT}+{RENDERER}"
    ip.events.register("pre_run_cell", _on_run_cell)
    return True
