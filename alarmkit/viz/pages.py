"""What a report page carries besides its run, and the index of a folder of reports.

* ``nav_html``: the links at the top of every page: the folder's index (when the page is one of a folder,
  as ``alarmkit demo`` writes) and the glossary of marks.
* ``about_rows``: what the run is, said first: the line saying what its scenario demonstrates, and for a
  worker run its entry file, drive, wrangler file and bindings.
* ``glossary_html``: the glossary of marks, at the foot of every page (``#marks``): a page works alone.
* ``index_html``: ``index.html`` of a folder: one row per page, its verdict, sorted broken first.
* ``summary_lines``: the same as text, for the console (``alarmkit demo`` ends with it).

Every string from a journal or a scenario is escaped (``_text.esc``).
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from .._text import esc
from ._plotlyjs import PLOTLY_TAG, check_plotly_js, is_plotly_js  # noqa: F401 - their old home is this module

__all__ = ["PLOTLY_TAG", "check_plotly_js", "is_plotly_js", "INDEX", "ORDER", "about_rows", "glossary_html", "index_html", "nav_html", "summary_lines"]

INDEX = "index.html"
ORDER = ("broken", "warning", "unchecked", "held")  # the index lists the pages in this order
_WORD = {"broken": "BROKEN", "warning": "WARNING", "unchecked": "NOT CHECKED", "held": "held"}
_COLOUR = {"broken": "#b00020", "warning": "#8a5a00", "unchecked": "#7a5a00", "held": "#1b6e3a"}


def nav_html(index: bool, links: Sequence[tuple[str, str]] = ()) -> str:
    """``<nav>``: the index of the folder (``index``: the page is one of a folder), the glossary, and
    ``links`` ((href, text): a page beside it, e.g. the run of a counterexample)."""
    links = ([f'<a href="{INDEX}">all reports (index)</a>'] if index else []) + [
        '<a href="#marks">what each mark means (glossary)</a>'] + [
        f'<a href="{html.escape(href, quote=True)}">{esc(text)}</a>' for href, text in links]
    return '<nav class="ak-nav" style="font-size:13px;margin:0 0 8px">' + " · ".join(links) + "</nav>"


def about_rows(run: Mapping[str, Any], about: Mapping[str, Any] | None = None) -> list[tuple[str, str, bool]]:
    """(label, text, bad) rows said before the others: what the scenario demonstrates (``about``:
    ``demonstrates``, and ``rows``: more (label, text, bad) rows, e.g. a counterexample), and for a worker
    run (scenario ``worker``) its entry file, drive, wrangler file and bindings."""
    about = about or {}
    rows = []
    if about.get("demonstrates"):
        rows.append(("demonstrates", str(about["demonstrates"]), False))
    rows.extend(tuple(r) for r in about.get("rows", ()))
    params = run.get("params") or {}
    if run.get("scenario") == "worker" and isinstance(params, dict):
        for key, label in (("entry", "entry file"), ("drive", "drive"), ("wrangler", "wrangler file")):
            if params.get(key):
                rows.append((label, str(params[key]), False))
        binds = params.get("bindings") or {}
        if isinstance(binds, dict) and binds:
            rows.append(("bindings", ", ".join(f"{k} = {v}" for k, v in binds.items()), False))
        elif params.get("wrangler"):
            rows.append(("bindings", "from the wrangler file", False))
    return rows


def worker_title(run: Mapping[str, Any]) -> str | None:
    """``worker src/entry.py · drive drive.json · run 3`` for a worker run, else None."""
    params = run.get("params") or {}
    if run.get("scenario") != "worker" or not isinstance(params, dict):
        return None
    entry = Path(str(params.get("entry") or params.get("wrangler") or "?")).name
    drive = Path(str(params.get("drive") or "?")).name
    rid = run.get("run_id")
    return f"worker {entry} · drive {drive} · " + ("run not journaled" if rid is None else f"run {rid}")


def glossary_html() -> str:
    """The glossary of marks as a collapsible table with the anchor ``#marks``."""
    from ._handout import MEANING

    rows = "".join(f"<tr><td><code>{html.escape(k)}</code></td><td>{html.escape(v)}</td></tr>" for k, v in MEANING.items())
    return ('<details id="marks" class="ak-glossary" style="font-size:13px;margin-top:16px">'
            "<summary>What each mark of a timeline means (the glossary)</summary>"
            "<p>One lane per object, three rows in a lane: the alarm (arms, moves, retry waits), the handler "
            "(fires, outcomes) and what it did (effects, crashes, lifecycle). Hover a mark for its details.</p>"
            f"<table>{rows}</table></details>")


def _sorted(entries: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return sorted(entries, key=lambda e: (ORDER.index(e["status"]) if e["status"] in ORDER else len(ORDER),
                                          str(e["name"])))


def counts(entries: Sequence[Mapping[str, Any]]) -> str:
    """``9 broken, 8 with warnings, 8 held``."""
    n = {k: sum(e["status"] == k for e in entries) for k in ORDER}
    parts = [f"{n['broken']} broken", f"{n['warning']} with warnings", f"{n['held']} held"]
    if n["unchecked"]:
        parts.append(f"{n['unchecked']} not checked")
    return ", ".join(parts)


def summary_lines(entries: Sequence[Mapping[str, Any]], folder: str) -> list[str]:
    """The console's summary: one line per page, broken first, then the counts and the index's path."""
    out = [f"verdicts ({counts(entries)}; a scenario marked [failure] is broken by design, and says why):"]
    width = max((len(str(e["name"])) + len(str(e.get("kind") or "")) + 3 for e in entries), default=0)
    for e in _sorted(entries):
        name = str(e["name"]) + (f" [{e['kind']}]" if e.get("kind") else "")
        lines = list(e.get("lines") or [])
        why = lines[1].lstrip("✗! ") if len(lines) > 1 else str(e["headline"])  # the first reason, else the headline
        out.append(f"  {_WORD.get(e['status'], e['status']):<11} {name:<{width}}  {why[:150]}" + ("…" if len(why) > 150 else ""))
    out.append(f"index of the reports: {Path(folder) / INDEX}")
    return out


def index_html(entries: Sequence[Mapping[str, Any]], head: str, title: str = "alarmkit reports") -> str:
    """``index.html``: one row per page (its verdict word, the scenario, what it demonstrates, the verdict's
    headline and first line), broken first. ``entries``: dicts with name, file, status, headline, lines,
    demonstrates, kind. ``head``: the reports' own head up to the title (so the file is known as alarmkit's)."""

    rows = []
    for e in _sorted(entries):
        st = str(e["status"])
        first = next((ln for ln in e.get("lines", [])[1:2]), "")
        kind = f' <span class="kind">[{esc(e["kind"])}]</span>' if e.get("kind") else ""
        rows.append(f'<tr data-status="{esc(st)}"><td style="color:{_COLOUR.get(st, "#222")};font-weight:600">'
                    f'{esc(_WORD.get(st, st))}</td><td><a href="{html.escape(str(e["file"]), quote=True)}">{esc(e["name"])}</a>{kind}'
                    f'<div class="demo">{esc(e.get("demonstrates", ""))}</div></td>'
                    f'<td>{esc(e["headline"])}<div class="first">{esc(first)}</div></td></tr>')
    return (f"{head}<title>{esc(title)}</title><style>body{{font:14px/1.45 system-ui,sans-serif;max-width:1400px;"
            "margin:24px auto;padding:0 16px;color:#222}table{border-collapse:collapse}td,th{padding:6px 12px 6px 0;"
            "vertical-align:top;text-align:left;border-top:1px solid #eee}.demo,.first{color:#555;font-size:13px}"
            ".kind{color:#777;font-size:12px}</style></head>\n<body>\n"
            f"<h1>{esc(title)}</h1>\n<p>{esc(counts(entries))}. Broken first, then warnings (nothing broken, but "
            "something to look at: an abandoned alarm, rows left, an anti-pattern that held only because no fault "
            "hit it), then held. A scenario marked [failure] is broken by design: its verdict says why. "
            "[anti-pattern] pages show the counterexample <code>alarmkit explore</code> finds.</p>\n"
            "<table><tr><th>verdict</th><th>scenario: what it demonstrates</th><th>what was found</th></tr>\n"
            + "\n".join(rows) + f"\n</table>\n{glossary_html()}\n</body></html>\n")
