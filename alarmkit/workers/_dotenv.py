"""Local vars files as wrangler 4 reads them (``wrangler.read_dev_vars``): ``.dev.vars`` parsed, ``.env`` and
``.env.local`` parsed and then expanded. Written from wrangler's behaviour (checked against wrangler 4.86.0's
own parsing on the cases of tests/hostile/test_dotenv_as_wrangler.py), never evaluated:

- a line ``NAME=value`` (an optional ``export``; spaces around ``=``); ``#`` starts a comment, in an
  unquoted value too (``COLOR=#fff`` is empty, as wrangler reads it);
- a value in ``'``, ``"`` or backquotes may run over several lines and be followed by a comment; in ``"``,
  ``\\n`` and ``\\r`` are a newline and a carriage return;
- ``.env`` values (not ``.dev.vars``) are expanded: ``$NAME``, ``${NAME}``, ``${NAME:-default}``,
  ``${NAME-default}``, ``${NAME:+alt}``, ``${NAME+alt}``, from the names above it (the machine's
  environment is not read); ``\\$`` is a plain ``$``.

A line that is not ``NAME=value`` (NAME an identifier) is refused by name rather than skipped.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import WorkerError

__all__ = ["parse_dotenv", "expand_dotenv"]

_QUOTES = "'\"`"
_REF = re.compile(r"(?<!\\)\$\{([^{}]+)\}|(?<!\\)\$([A-Za-z_][A-Za-z0-9_]*)")
_OP = re.compile(r":\+|\+|:-|-")
MAX_STEPS = 10_000  # expansions of one value: far past any hand-written file


def _quoted(text: str, quote: str) -> str | None:
    """The value quoted in ``text`` (the rest of the file after an opening ``quote``) when its closing
    quote ends its line or a comment follows it, else None. The closing quote tried first is the first one
    with no backslash before it, then the ones with a backslash before that (last first), as wrangler's
    parser backtracks."""
    tried = []
    i = text.find(quote)
    while i >= 0:
        if i == 0 or text[i - 1] != "\\":
            tried.append(i)
            break
        tried.insert(0, i)
        i = text.find(quote, i + 1)
    for i in tried:
        rest = text[i + 1:].split("\n", 1)[0].strip()
        if not rest or rest.startswith("#"):
            return text[:i]
    return None


def _plain(value: str) -> str:
    """A value that is not a quoted one: to its first ``#``; quotes that open and close it dropped."""
    value = value.split("#", 1)[0].strip()
    first = value[:1]
    if len(value) >= 2 and first in _QUOTES and value[-1] == first:
        value = value[1:-1]
    return value.replace("\\n", "\n").replace("\\r", "\r") if first == '"' else value


def parse_dotenv(p: Path, text: str) -> dict[str, str]:
    """The names and values of the file ``p`` (its ``text``), in the file's order, a later name winning."""
    lines = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n").split("\n")
    out: dict[str, str] = {}
    i = 0
    while i < len(lines):
        n, line = i + 1, lines[i].strip()
        i += 1
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[7:].lstrip()
        name, sep, value = line.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name.isidentifier():
            raise WorkerError(f"{p}, line {n}: expected NAME=value (NAME an identifier), got {line!r:.60}")
        body = _quoted("\n".join([value[1:], *lines[i:]]), value[0]) if value and value[0] in _QUOTES else None
        if body is None:
            out[name] = _plain(value)
            continue
        i += body.count("\n")  # a quoted value runs on over the lines up to its closing quote
        out[name] = body.replace("\\n", "\n").replace("\\r", "\r") if value[0] == '"' else body
    return out


def _expand_one(name: str, value: str, known: dict[str, str]) -> str:
    seen: set[str] = set()
    for _ in range(MAX_STEPS):
        m = _REF.search(value)
        if m is None:
            return value
        seen.add(value)
        expr = m.group(1) or m.group(2)
        op = _OP.search(expr)
        key, rest = (expr[:op.start()], expr[op.end():]) if op else (expr, "")
        if op and op.group() in (":+", "+"):
            found, fallback = None, rest if known.get(key) else ""
        else:
            found, fallback = known.get(key), rest
        value = value.replace(m.group(0), fallback if not found or found in seen else found, 1)
        if value == known.get(key):  # the value now is the one referred to: done
            return value
    raise WorkerError(f"the value of {name} in .env did not settle after {MAX_STEPS:,} expansions of $NAME; "
                      "write it without the reference to itself")


def expand_dotenv(parsed: dict[str, str]) -> dict[str, str]:
    """``.env`` values with ``$NAME`` references expanded, each from the names before it (see above)."""
    known: dict[str, str] = {}
    for name, value in parsed.items():
        known[name] = _expand_one(name, value, known).replace("\\$", "$")
    return known
