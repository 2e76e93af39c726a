"""Text every wing shows a person: the escaping functions, ``esc`` for HTML and plotly and ``clean``
for a terminal, and exact virtual times (``fmt_ms``). In the floor so that the journal's verdict,
the figures, the reports and every command share them."""

from __future__ import annotations

import html
import re
import unicodedata
from typing import Any

__all__ = ["esc", "clean", "fmt_ms"]

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


_BAD = ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")


def clean(text: Any, keep_newlines: bool = False, limit: int | None = None) -> str:
    """``text`` for a terminal: each control, format (bidi), surrogate, private-use or unassigned
    character shown as an escape (``\\x1b``, ``\\u202e``), never obeyed (an escape sequence could clear
    the screen, U+202E reverse what follows); newlines kept only where ``keep_newlines`` says so; cut
    to ``limit`` characters with "..." when given."""
    out = []
    for ch in str(text):
        if ch == "\n" and keep_newlines:
            out.append(ch)
        elif ch.isascii() and ch.isprintable():
            out.append(ch)
        elif unicodedata.category(ch) in _BAD:
            o = ord(ch)
            out.append(f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}")
        else:
            out.append(ch)
    s = "".join(out)
    return s if limit is None or len(s) <= limit else s[: limit - 3] + "..."


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
