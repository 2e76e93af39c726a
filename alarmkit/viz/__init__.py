"""Pictures of a journal: timelines and the other figures (``plots``), self-contained HTML reports
(``report``), the JupyterLab explorer (``widgets``) and the teaching bundle (``bundle``).

Figures read a journal's events (a DataFrame) and never the runtime: the journal is the only
bridge. ``alarmkit.plots``, ``alarmkit.report`` and ``alarmkit.widgets`` are the same modules.
"""

from ._align import TIME_COLS, align, first_request_ms, since_clock_start
from ._realruns import is_real, origin_text, real_rows, relative, retitle_time_axes, since_start

__all__ = ["TIME_COLS", "align", "first_request_ms", "since_clock_start", "is_real", "origin_text", "real_rows",
           "relative", "retitle_time_axes", "since_start"]

from .._public import publish as _publish  # noqa: E402

_publish("alarmkit.viz", globals(), __all__)
