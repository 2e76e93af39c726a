"""Text every wing shows a person: the escaping functions, ``esc`` for HTML and plotly and ``clean``
for a terminal, and exact virtual times (``fmt_ms``). In the floor so that the journal's verdict,
the figures, the reports and every command share them."""

from __future__ import annotations

import html
import os
import re
import unicodedata
from typing import Any

__all__ = ["esc", "clean", "fmt_ms", "Terminal", "one_line", "name_of", "text_of", "short_repr", "cut"]

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


def name_of(err: BaseException) -> str:
    """The class name of ``err`` on one line (a class of the user's may name itself anything)."""
    name = " ".join(str(type(err).__name__).split())
    return (name if len(name) <= 80 else name[:77] + "...") or "?"


def text_of(err: BaseException, limit: int = 200) -> str:
    """``str(err)`` cut to ``limit``, or what stands for it when its ``__str__`` raises (or gives no text):
    the user's exception is journaled and reported, never a crash of alarmkit's own code."""
    try:
        text = str(err)
    except BaseException as inner:  # noqa: BLE001 - the user's own __str__: anything can come out of it
        return f"<its text cannot be read: its __str__ raised {name_of(inner)}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


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


# -- what the command line prints ------------------------------------------------------------------------
class Terminal:
    """stdout with control characters escaped on the way (newlines and tabs kept): a folder named
    ``a\x1b[2J`` is printed as text, never as the escape that clears the screen.

    A reader that stops reading (``alarmkit import ... | head -1``) is not an error: what it did not
    read is dropped, quietly, and the command ends with its own exit code (its work, the journal, is
    done either way). It was "alarmkit: error: Broken pipe" and exit 2, depending on timing."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write("\n".join("\t".join(one_line(p) for p in line.split("\t"))
                                                for line in text.split("\n")))
        except BrokenPipeError:
            self._reader_gone()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._reader_gone()

    def _reader_gone(self) -> None:
        """Send the rest of stdout, the interpreter's last flush included, to the null device."""
        devnull = open(os.devnull, "w")  # noqa: SIM115 - stdout for the rest of the process
        try:
            os.dup2(devnull.fileno(), self._stream.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        self._stream = devnull

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def one_line(text: str) -> str:
    """``text`` safe for a terminal on one line: control and format characters (escape sequences,
    newlines, U+202E) shown as ``\\x1b``-style escapes, never sent to the terminal."""
    import unicodedata

    return "".join(c if unicodedata.category(c)[0] != "C" and c not in "\u2028\u2029" else
                   (f"\\x{ord(c):02x}" if ord(c) < 256 else f"\\u{ord(c):04x}") for c in text)


def cut(text: str, limit: int = 300) -> str:
    """``text`` kept to ``limit`` characters: its start and its end, ``...`` between."""
    return text if len(text) <= limit else text[: limit - 43] + "..." + text[-40:]


def short_repr(value: Any, limit: int = 300) -> str:
    """``repr(value)`` cut to ``limit`` (``cut``); a value whose repr fails or is too long to make (an int
    of thousands of digits, a repr that raises) said by its class."""
    if type(value) is int and value.bit_length() > 64:
        return f"<an int of {value.bit_length():,} bits>"
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a user's object: its __repr__ may raise anything
        return f"<an object of class {type(value).__name__}>"
    return cut(text if type(text) is str else "?", limit)
