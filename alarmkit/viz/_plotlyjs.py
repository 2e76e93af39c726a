"""The one way alarmkit writes plotly.js beside its pages: ``plotly.min.js``, tagged (``PLOTLY_TAG`` first)
so a later write knows the file is its own and may replace it; a plotly.min.js of anyone else is kept.

Used by a folder of reports (``report.export_folder``) and by figures shown in a Jupyter kernel
(``_notebook``): their HTML loads ``<script src="plotly.min.js">`` instead of carrying the 4.8 MB
inline, so an executed notebook holds its figures' data and not plotly.js.
"""

from __future__ import annotations

from pathlib import Path

from .._files import write_text
from ..errors import AlarmkitError

__all__ = ["PLOTLY_FILE", "PLOTLY_TAG", "check_plotly_js", "is_plotly_js", "plotly_js_text", "write_plotly_js",
           "share_plotly_js"]

PLOTLY_FILE = "plotly.min.js"


# The plotly.js alarmkit writes beside a folder of reports starts with this line, so a later export
# knows the file is its own and may replace it; any other plotly.min.js (a user's pinned copy) is kept.
PLOTLY_TAG = "/* plotly.min.js written by alarmkit beside its reports; alarmkit replaces it on the next export */\n"


def is_plotly_js(path: str | Path) -> bool:
    """Whether ``path`` is a plotly.min.js alarmkit wrote (its tag first)."""
    try:
        with open(path, "rb") as f:
            return f.read(len(PLOTLY_TAG)).decode("utf-8", "replace") == PLOTLY_TAG
    except OSError:
        return False


def check_plotly_js(folder: str | Path) -> Path:
    """Check, before any work, that ``folder/plotly.min.js`` is missing or alarmkit's own; returns its path."""
    js = Path(folder) / "plotly.min.js"
    if js.exists() and not is_plotly_js(js):
        raise AlarmkitError(f"{str(js)!r} exists and was not written by alarmkit (a plotly.js of your own?); alarmkit "
                            "replaces only its own: move it away or pass another --out folder")
    return js


def plotly_js_text() -> str:
    """plotly.js as alarmkit writes it: its tag, then the bundled plotly.min.js (no CDN, no MathJax)."""
    from plotly.offline import get_plotlyjs

    return PLOTLY_TAG + get_plotlyjs()


def write_plotly_js(folder: str | Path, reading: tuple = ()) -> Path:
    """``folder/plotly.min.js``, written (or kept, when it is already this text) as alarmkit's own.
    Refuses, naming the way out, when a plotly.min.js not written by alarmkit is there."""
    js = check_plotly_js(folder)
    text = plotly_js_text()
    if js.is_symlink() or not js.exists() or js.read_text(encoding="utf-8") != text:
        write_text(js, text, ours=is_plotly_js, what="plotly.js", reading=reading)
    return js


def share_plotly_js(folder: str | Path) -> bool:
    """For a notebook's figure: whether ``folder/plotly.min.js`` is (now) alarmkit's plotly.js, so the
    figure may load it by name. False, and nothing written, when the file is someone else's or the
    folder cannot be written: the caller carries plotly.js inline then, as before."""
    try:
        write_plotly_js(folder)
    except (OSError, AlarmkitError):  # someone else's plotly.min.js; a read-only folder
        return False
    return True
