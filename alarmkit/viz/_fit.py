"""The explorer's figure at the widget's width from its first draw.

plotly's ``FigureWidget`` (an anywidget) calls ``Plotly.newPlot`` while its element is not yet in the
page, so plotly finds no width and draws at its 700 px default; nothing sizes it again until the
window is resized. ``Fit`` is an invisible anywidget beside it that watches the explorer's figure box
(a ``ResizeObserver``, and plotly's ``plotlywidget-after-render`` event) and, whenever the plot's width
differs from the box's, sends the window a ``resize`` event: the figure's ``responsive`` config makes
plotly resize it to its box (``Plots.resize``), which also tells Python the new size.
"""

from __future__ import annotations

import anywidget

__all__ = ["Fit", "FIT_ESM"]

FIT_ESM = """
function fit(root) {
  const box = root.querySelector('.alarmkit-figure-box');
  const gd = box && box.querySelector('.js-plotly-plot');
  if (!gd || !gd._fullLayout) return;
  const want = Math.floor(gd.getBoundingClientRect().width);
  if (want > 0 && Math.abs(gd._fullLayout.width - want) > 2) window.dispatchEvent(new Event('resize'));
}
export default {
  render({ el }) {
    el.style.display = 'none';
    let root = null, frames = 0;
    const check = () => { if (root) fit(root); };
    const seen = new ResizeObserver(check);
    const rendered = ev => { if (root && root.contains(ev.detail.element)) check(); };
    document.addEventListener('plotlywidget-after-render', rendered);
    const attach = () => {  // render() runs before the element is in the page
      root = el.closest('.alarmkit-explorer');
      if (root) { seen.observe(root.querySelector('.alarmkit-figure-box') || root); check(); }
      else if (frames++ < 600) requestAnimationFrame(attach);
    };
    requestAnimationFrame(attach);
    return () => { seen.disconnect(); document.removeEventListener('plotlywidget-after-render', rendered); };
  }
};
"""


class Fit(anywidget.AnyWidget):
    """Keeps the explorer's plot as wide as its box (see the module). Draws nothing."""

    _esm = FIT_ESM
