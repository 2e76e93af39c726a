"""Text from a trace made safe for a terminal: control and bidi characters shown, never obeyed.

An object name is whatever the trace says (``ctx.id.name``, an Entrypoint): printed raw, an escape
sequence could clear the screen and U+202E (right-to-left override) could reverse what follows.
``clean`` shows every character of Unicode categories Cc, Cf, Cs, Co, Zl and Zp as an escape
(``\\x1b``, ``\\u202e``); newlines are kept only where ``keep_newlines`` says so.
"""

from __future__ import annotations

import unicodedata

__all__ = ["clean"]

_BAD = ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")


def clean(text: str, keep_newlines: bool = False) -> str:
    """``text`` with each control, format (bidi), surrogate, private-use or unassigned character escaped."""
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
    return "".join(out)
