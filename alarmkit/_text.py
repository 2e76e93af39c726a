"""Text every wing shows a person: the one escaping function (``esc``) and exact virtual times
(``fmt_ms``). In the floor so that the journal's verdict, the figures and the reports share them."""

from __future__ import annotations

import html
import re
from typing import Any

__all__ = ["esc", "fmt_ms"]

_INVISIBLE = re.compile("[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e"
                        "\u2066-\u2069\ufeff]")


def esc(text: Any, limit: int | None = None) -> str:
    """Text for plotly or an HTML page: control and bidirectional characters made visible (``\\u202e``),
    cut to ``limit`` characters with an ellipsis, then ``<``, ``>`` and ``&`` escaped, so a journal
    string never becomes markup. The one escaping function of the package.

    Quotes stay: outside a tag they are text, and plotly does not decode ``&quot;``."""
    s = "" if text is None else str(text)
    if limit is not None and len(s) > limit:
        s = s[:limit - 1] + "…"
    s = _INVISIBLE.sub(lambda m: f"\\u{ord(m.group()):04x}", s)
    s = s.encode("utf-8", "backslashreplace").decode("utf-8")  # a lone surrogate cannot be written out
    return html.escape(s, quote=False)


def fmt_ms(ms: float) -> str:
    """Exact, readable virtual time: ``850 ms``, ``3.072 s``, ``139.974 s``, ``12 min 5 s``, ``1 h 0 min 5 s``."""
    ms = int(ms)
    sign, ms = ("-" if ms < 0 else ""), abs(ms)
    if ms < 1_000:
        return f"{sign}{ms} ms"
    if ms < 600_000:
        return f"{sign}{ms / 1000:.3f}".rstrip("0").rstrip(".") + " s"
    h, rest = divmod(ms, 3_600_000)
    m, rest = divmod(rest, 60_000)
    sec = f"{rest / 1000:.3f}".rstrip("0").rstrip(".") + " s"
    return f"{sign}{h} h {m} min {sec}" if h else f"{sign}{m} min {sec}"
