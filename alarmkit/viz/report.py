"""One self-contained HTML file per run: a summary table and the figures, plotly.js inlined.

The file opens offline: no CDN, no fonts or images fetched, and a Content-Security-Policy that
forbids the page to load anything. Every string from a journal or a scenario is escaped.
A folder of reports (``export_folder``, used by ``alarmkit demo``) shares one ``plotly.min.js``
written beside them instead: the pages load only that file, still offline.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

from ..errors import AlarmkitError
from .._files import check_output, write_text
from ..journal import CLASS_OF, class_counts, run_counts
from .plots import (
    backoff_ladder, compare, drawn_kinds, effect_idents, esc, fmt_ms, keepalive_ladder, lateness, lateness_ms,
    mark_missed, timeline,
)
from ._bigpage import ON_ZOOM as _ON_ZOOM, defer_detail as _defer_detail
from ._timeline import script_json
from ._plotlyjs import write_plotly_js
from ._libraries import library_rows
from ..journal import verdict_of_events
from ..runtime import with_plan_warning
from ._realruns import is_real as real_run, origin_text, real_rows, relative, retitle_time_axes
from .pages import (  # noqa: F401  (PLOTLY_TAG, is_plotly_js, check_plotly_js: their old home is this module)
    INDEX, PLOTLY_TAG, about_rows, check_plotly_js, glossary_html, index_html, is_plotly_js, nav_html, summary_lines,
    worker_title,
)

__all__ = ["check_plotly_js", "is_plotly_js", "export_folder", "export_html", "export_run", "report_html", "run_figures",
           "summary_lines", "summary_rows", "write_index"]

# The page may run its own inline scripts (plotly; WebGL traces need eval) and nothing may be fetched.
CSP = ("default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; "
       "img-src data: blob:; font-src data:; worker-src blob:; connect-src 'none'; form-action 'none'; base-uri 'none'")
# The same, for a page of a folder that loads the plotly.js file beside it (and nothing else).
CSP_SHARED = CSP.replace("script-src ", "script-src 'self' file: ")
PLOTLY_FILE = "plotly.min.js"
PLOT_CONFIG = {"displaylogo": False, "responsive": True, "scrollZoom": False,
               "toImageButtonOptions": {"format": "png", "scale": 2}}
SHOW_OBJECTS = 12  # the summary names this many object ids in full (the figures cut long ones)
SHOW_DUPLICATES = 8  # a run with thousands of duplicate effects names the first few in its summary
# After each figure's first render: a counter that tests and benchmarks wait for (no data in it).
_RENDERED = ("window.alarmkitRendered = (window.alarmkitRendered || 0) + 1;"
             "document.body.dataset.rendered = String(window.alarmkitRendered);")
_STYLE = """
body { font-family: Inter, system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif; color: #222; margin: 24px auto;
       max-width: 1400px; padding: 0 16px; }
h1 { font-size: 22px; margin: 0 0 4px; } p.sub { color: #666; margin: 0 0 16px; font-size: 13px; }
table.summary { border-collapse: collapse; font-size: 14px; margin-bottom: 20px; }
table.summary th { text-align: left; font-weight: 600; padding: 4px 16px 4px 0; vertical-align: top; color: #555; }
table.summary td { padding: 4px 0; font-family: ui-monospace, 'SFMono-Regular', Menlo, monospace; white-space: pre-wrap;
                   word-break: break-word; }
td.bad { color: #b03a00; font-weight: 600; }
tr.verdict td { font-family: inherit; font-size: 15px; padding-bottom: 10px; }
tr.verdict th { color: #222; font-size: 15px; }
section.figure { border-top: 1px solid #eee; padding-top: 8px; margin-bottom: 16px; }
"""


def summary_rows(events: pd.DataFrame, run: dict | None = None, violations: Iterable[Any] | None = None
                 ) -> list[tuple[str, str, bool]]:
    """(label, plain text, is-bad) rows for a run's summary table; nothing here is HTML yet."""
    run = run or {}
    classes = class_counts(drawn_kinds(events)) if len(events) else {}

    c = run_counts(events)  # one classification (alarmkit._kinds.run_counts): the timeline draws the same events
    eff = events["kind"] == "effect"  # a duplicate is an effect that ran again on the same object, as check() counts
    effects = Counter(zip(events.loc[eff, "object_id"].astype(str), effect_idents(events)))
    dups = {(obj, *k.split("\0", 1)): n for (obj, k), n in effects.items() if n > 1}
    span = int(events["t_ms"].max() - min(0, events["t_ms"].min())) if len(events) else 0
    faults = run.get("faults")
    rows = [
        ("scenario", str(run.get("scenario", "?")), False),
        ("run", _run_name(run)[4:], False),
        ("profile", str(run.get("profile", "?")), False),
        ("seed", str(run.get("seed", "?")), False),
        ("parameters", json.dumps(run.get("params") or {}, default=str), False),
        ("fault plan", json.dumps(faults, default=str) if faults else "none", False),
        ("events", f"{len(events):,} over {fmt_ms(span)} of virtual time", False),
        ("attempts", _attempts(c), False),
        ("effects", f"{sum(effects.values()):,} run, {len(effects):,} distinct", False),
    ]
    if dups:
        shown = list(dups.items())[:SHOW_DUPLICATES]
        text = ", ".join(f"{name}({key}) on {obj} ×{n}" for (obj, name, key), n in shown)
        if len(dups) > len(shown):
            text += f" … and {len(dups) - len(shown):,} more (the timeline marks each one)"
        rows.append(("duplicate effects", f"{len(dups):,}: {text}", True))
    order = list(dict.fromkeys(CLASS_OF.values()))
    drawn = sorted(classes.items(), key=lambda kv: (order.index(kv[0]) if kv[0] in order else len(order), kv[0]))
    rows.append(("on the timeline", ", ".join(f"{c} {k:,}" for c, k in drawn), False))
    pairs = events[["namespace", "object_id"]].dropna(subset=["object_id"]).astype(str).drop_duplicates()
    twice = set(pairs["object_id"][pairs["object_id"].duplicated()])  # one name in two namespaces: both named
    objects = [f"{ns}:{o}" if o in twice else o for ns, o in zip(pairs["namespace"], pairs["object_id"])]
    listed = ", ".join(objects[:SHOW_OBJECTS]) + (f", … and {len(objects) - SHOW_OBJECTS:,} more"
                                                  if len(objects) > SHOW_OBJECTS else "")
    rows.append(("objects", f"{len(objects):,}" + (f": {listed}" if objects else ""), False))
    if c["arms"] + c["disarms"] + c["rungs"]:
        rows.append(("alarms set", f"{c['arms']:,} set by the code ({c['rearms']:,} of them moved a set alarm), "
                                   f"{c['disarms']:,} deleted" + (f"; {c['rungs']:,} keepalive rungs" if c["rungs"] else ""),
                     False))
    trouble = [(c[k], what) for k, what in (("crashes", "crash"), ("failed", "handler failure"),
                                            ("process deaths", "process death"), ("faults", "fault"),
                                            ("restarts", "restart"), ("idle evictions", "idle eviction"))]
    if any(k for k, _ in trouble):
        rows.append(("crashes, failures, restarts", ", ".join(_plural(k, what) for k, what in trouble), False))
    from ..runtime import journal_summary  # plan entries that injected nothing, from the runs row

    if journal_summary(run):
        rows.append(("fault plan applied", journal_summary(run), True))
    if "complete" in run and not run["complete"]:
        rows.append(("complete", "no: cut short by an error or a kill (or journaled before runs were marked)", True))
    if real_run(run):  # an imported or recorded run: its anomalies and what its trace could not tell
        rows[6] = ("events", f"{len(events):,} over {fmt_ms(int(events['t_ms'].max() - events['t_ms'].min()))} "
                             "of wall-clock time" if len(events) else "0", False)
        shown = {k: v for k, v in (run.get("params") or {}).items() if k != "imported"}
        rows[4] = ("parameters", json.dumps(shown, default=str), False)
        rows.extend(real_rows(run, events))
    rows.extend(library_rows(events))  # a library's own schedules (the Agents SDK's, Actors')
    if violations is not None:
        found = [_violation(v) for v in getattr(violations, "violations", violations)]  # a Report or a list
        rows.append(("violations", "\n".join(found) if found else "none", bool(found)))
    return rows


def _plural(n: int, noun: str) -> str:
    if n == 1:
        return f"{n:,} {noun}"
    return f"{n:,} " + (noun[:-1] + "ies" if noun.endswith("y") else noun + "es" if noun.endswith(("sh", "ss")) else noun + "s")


def _attempts(c: dict) -> str:
    """``11 alarm() runs: 10 first runs, 1 retry (1 counted); 10 ok, 2 failed, 0 abandoned, 0 revived``."""
    retries = _plural(c["retries"], "retry")
    split = []
    if c["retries"]:
        split.append(f"{c['counted retries']:,} counted")
        if c["uncounted retries"]:
            split.append(f"{c['uncounted retries']:,} uncounted, retry_count 0")
    unrun = c["retries scheduled"] - c["retries"]
    if unrun > 0:
        split.append(f"{unrun:,} more scheduled that never ran: replaced, or the run ended first")
    return (f"{c['runs']:,} alarm() runs: {c['first runs']:,} first, {retries}"
            + (f" ({'; '.join(split)})" if split else "")
            + f"; {c['ok']:,} ok, {c['failed']:,} failed, {c['abandoned']:,} abandoned, {c['revivals']:,} revived")


def _violation(v: Any) -> str:
    """A line for an ``invariants.Violation``, a dict or a string."""
    d = v.to_dict() if hasattr(v, "to_dict") else v
    if isinstance(d, dict) and "invariant" in d:
        where = f" · {d.get('object')}" if d.get("object") is not None else ""
        when = f" at {fmt_ms(d['t_ms'])}" if d.get("t_ms") is not None else ""
        return f"{d['invariant']}{where}{when}: {d.get('message', '')}"
    return d if isinstance(d, str) else json.dumps(d, default=str)


def run_figures(events: pd.DataFrame, run: dict | None = None,
                peers: Mapping[str, pd.DataFrame] | None = None, verdict: Any = None) -> list[go.Figure]:
    """The report's figures: the timeline (with ``peers``, e.g. ``{"workerd": events}``, the
    ``compare`` figure of this run and them on one time axis), then the retry ladder, the keepalive's
    rung ladder and lateness when the run has them. A ``verdict``'s due-but-never-ran obligations are
    marked on the timeline where they were due."""
    run = run or {}
    title = " · ".join(str(x) for x in (run.get("scenario"), _run_name(run) if "run_id" in run else None,
                                        run.get("profile")) if x) or "timeline"
    real = real_run(run)
    if real:  # epoch times: the figures count from the first event, named in the title
        events, t0 = relative(events)
        title += f" · t = 0 at {origin_text(t0)}"
    mine = {_label(run, "this run"): events}
    if peers:
        figs = [compare({**mine, **peers}, title=f"{run.get('scenario', 'compare')}: {' vs '.join([*mine, *peers])}")]
    else:
        figs = [timeline(events, title=title)]
        if verdict is not None:
            mark_missed(figs[0], verdict.misses)
    if real:
        retitle_time_axes(figs[0])
    if (events["kind"] == "retry_scheduled").any():
        try:
            figs.append(backoff_ladder(events, profile=run.get("profile") or "workerd"))
        except AlarmkitError:  # a profile this process does not know: the ladder of the default one
            figs.append(backoff_ladder(events))
    if (events["kind"] == "keepalive_arm").any():
        figs.append(keepalive_ladder({**mine, **(peers or {})}))
    if (events["kind"] == "fire").any():  # a trace holds no retry_scheduled: a real run's retries count from scheduled
        figs.append(lateness({**mine, **peers} if peers else events, against="scheduled" if real else "due"))
    return figs


_HEAD = '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
GENERATOR = '<meta name="generator" content="alarmkit">'


def _run_name(run: dict) -> str:
    """``run 7``; ``run not journaled`` for a run_scenario result made without a journal (its run_id is None)."""
    rid = run.get("run_id", "?")
    return "run not journaled" if rid is None else f"run {rid}"


def _label(run: dict, default: str) -> str:
    return str(run.get("profile") or default)


def peer_runs(journal: Any, run: dict) -> dict[str, pd.DataFrame]:
    """The runs a comparing scenario journaled beside ``run`` (``params.compare_profile``): the
    next run of the same scenario and seed whose ``params.compared_with`` names this run's profile."""
    other = (run.get("params") or {}).get("compare_profile")
    if not other or run.get("run_id") is None:
        return {}
    runs = journal.runs()
    later = runs[(runs["scenario"] == run.get("scenario")) & (runs["run_id"] > run["run_id"])
                 & (runs["profile"] == other) & (runs["seed"] == run.get("seed"))]
    for _, r in later.iterrows():
        if json.loads(r["params"] or "{}").get("compared_with") == run.get("profile"):
            return {str(other): journal.events(int(r["run_id"]))}
    return {}


def difference_line(runs: Mapping[str, pd.DataFrame], over_ms: int = 1_000) -> str:
    """How late each run fired, named: ``celld fired 45.0, 32.0, 19.0, 6.0 s late; workerd 2 ms at most``
    (the fires later than ``over_ms`` in time order, else the worst lateness)."""
    parts = []
    for label, ev in runs.items():
        late = lateness_ms(ev)["late_ms"]
        big = late[late > over_ms]
        if len(big):
            shown = ", ".join(f"{v / 1000:.1f}" for v in big.iloc[:SHOW_DUPLICATES])
            more = f" and {len(big) - SHOW_DUPLICATES} more" if len(big) > SHOW_DUPLICATES else ""
            parts.append(f"{label} fired {shown}{more} s late")
        elif len(late):
            parts.append(f"{label} {fmt_ms(late.max())} at most")
        else:
            parts.append(f"{label} never fired")
    return "; ".join(parts)


def report_html(figures: Sequence[go.Figure], title: str = "alarmkit report",
                rows: Sequence[tuple[str, str, bool]] = (), plotlyjs: str = "inline",
                clock: str = "virtual time", verdict: Any = None, in_folder: bool = False,
                links: Sequence[tuple[str, str]] = ()) -> str:
    """The page as a string: plotly.js once, inline (or, with ``plotlyjs=PLOTLY_FILE``, loaded from
    that file beside the page); every title and table cell escaped. ``clock`` names the time the
    figures show (a real run's report says wall-clock time). A ``verdict`` (``RunResult.verdict``) is
    the table's first row, each broken obligation or invariant in red. The page links the glossary of marks
    at its foot, and (``in_folder``) the folder's ``index.html``."""
    from .._version import __version__

    figures = list(figures)
    if not figures or not all(isinstance(f, go.Figure) for f in figures):
        raise AlarmkitError(f"report_html needs plotly figures, got {[type(f).__name__ for f in figures]}")
    table = "".join(f"<tr><th>{esc(k)}</th><td{' class=bad' if bad else ''}>{esc(v)}</td></tr>"
                    for k, v, bad in rows)
    if verdict is not None:  # first: what a reviewer reads before anything else
        table = f'<tr class="verdict"><th>verdict</th><td>{verdict.html()}</td></tr>' + table
    if plotlyjs not in ("inline", PLOTLY_FILE):
        raise AlarmkitError(f"plotlyjs is 'inline' or {PLOTLY_FILE!r}, got {plotlyjs!r}")
    shared = plotlyjs != "inline"
    divs = []
    for i, fig in enumerate(figures):
        shown, hidden = _defer_detail(fig)
        divs.append(pio.to_html(shown, full_html=False, include_plotlyjs=(i == 0 and not shared), config=PLOT_CONFIG,
                                div_id=f"figure-{i}",
                                post_script=[_RENDERED] + ([_ON_ZOOM] if _zooms(fig) else []), validate=False,
                                default_height=f"{fig.layout.height or 450}px"))
        if hidden:  # before the figure's own script, which looks it up by id
            divs[-1] = (f'<script type="application/json" id="figure-{i}-detail">{script_json(hidden)}</script>\n'
                        + divs[-1])
    body = "\n".join(f'<section class="figure">{d}</section>' for d in divs)
    head_js = f'<script src="{PLOTLY_FILE}"></script>' if shared else ""
    return (
        f"{_HEAD}\n{GENERATOR}\n"
        f'<meta http-equiv="Content-Security-Policy" content="{CSP_SHARED if shared else CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{esc(title, 200)}</title><style>{_STYLE}</style>"
        f"{head_js}</head>\n<body>\n{nav_html(in_folder, links)}\n"
        f"<h1>{esc(title)}</h1>\n<p class=\"sub\">alarmkit {esc(__version__)} · {esc(clock)} · "
        "hover for details, drag to zoom, double-click to reset, click a legend entry to hide it</p>\n"
        f'{"<table class=summary>" + table + "</table>" if table else ""}\n{body}\n{glossary_html()}\n</body></html>\n'
    )


def is_report(path: str | Path) -> bool:
    """Whether the file at ``path`` is an HTML report alarmkit wrote (so alarmkit may replace it)."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096).decode("utf-8", "replace")
    except OSError:
        return False
    # reports from before the generator tag start with the same head and the same CSP tag
    return head.startswith(_HEAD) and (GENERATOR in head or head[len(_HEAD):].startswith("\n<meta http-equiv="))


def _zooms(fig: go.Figure) -> bool:
    """A timeline (its lanes named in its meta): the page script relabels its axes on zoom, and a big
    one's draws its detail."""
    meta = fig.layout.meta
    return isinstance(meta, dict) and (bool(meta.get("large")) or "lanes" in meta)


def _run_info(result: dict) -> dict:
    keys = ("scenario", "run_id", "profile", "seed", "params", "faults")
    return {k: result[k] for k in keys if k in result}


def export_html(figures_or_run: Any, path: str | Path, *, journal: Any = None, run: dict | None = None,
                events: pd.DataFrame | None = None, violations: Iterable[Any] | None = None,
                title: str | None = None, plotlyjs: str = "inline", verdict: Any = None,
                about: Mapping[str, Any] | None = None) -> Path:
    """Write one self-contained HTML report; returns its path.

    ``figures_or_run`` is a figure or a list of figures (``run=``/``events=`` fill the summary), a
    run id (with ``journal=``), a ``run_scenario`` result, or a run's events DataFrame. A run that
    compared itself with another profile (keepalive-celld-vs-workerd) is drawn beside that run.
    ``plotlyjs=PLOTLY_FILE`` loads plotly.js from that file beside the page (see ``export_folder``).
    The verdict row comes first: a ``run_scenario`` result's own (``RunResult.verdict``), the one given
    as ``verdict=``, or, for events alone, the run-wide invariants (a journal holds no obligations).
    Then (``about``: ``demonstrates``, ``rows``, ``links``) what the scenario demonstrates and more rows and
    links, and for a worker run its entry file, drive and bindings.
    """
    figures: list[go.Figure] | None = None
    what = figures_or_run
    if isinstance(what, go.Figure):
        figures = [what]
    elif isinstance(what, (list, tuple)) and what and all(isinstance(f, go.Figure) for f in what):
        figures = list(what)
    elif isinstance(what, int) and not isinstance(what, bool):
        if journal is None:
            raise AlarmkitError(f"run {what} needs journal=Journal(path) to read it from")
        run, events = journal.run(what), journal.events(what)
    elif hasattr(what, "to_dict") and hasattr(what, "sim"):  # a run_scenario RunResult
        run = {**_run_info(what.to_dict()), "params": dict(getattr(what, "params", None) or {}), **(run or {})}
        if verdict is None and what.sim is not None:
            verdict = what.verdict
        if journal is not None and what.run_id is not None:
            events = journal.events(what.run_id)
            run = {**journal.run(what.run_id), **run}
        elif what.sim is not None:
            events = what.events
        else:
            raise AlarmkitError("this run_scenario result has no 'sim' and no run_id; pass journal= or the events")
    elif isinstance(what, pd.DataFrame):
        events = what
    else:
        raise AlarmkitError("export_html takes figures, a run id, a run_scenario result or events, "
                            f"got {type(what).__name__}")
    peers = peer_runs(journal, run) if journal is not None and run else {}
    if verdict is None and events is not None and not events.empty and not real_run(run or {}):
        verdict = verdict_of_events(events)
    verdict = with_plan_warning(verdict, run or {})  # a plan entry that injected nothing: never green
    if figures is None:
        if events is None or events.empty:
            raise AlarmkitError("this run has no events to report; did it run? (Journal.events(run_id) is empty)")
        figures = run_figures(events, run, peers, verdict)
    rows = summary_rows(events, run, violations) if events is not None else []
    if peers:
        rows.insert(4, ("compared with", difference_line({_label(run, "this run"): events, **peers}), False))
    if about is None and run and run.get("scenario"):
        from ..scenarios import SCENARIOS

        sc = SCENARIOS.get(str(run["scenario"]))
        about = {"demonstrates": sc.demonstrates} if sc is not None and run["scenario"] != "worker" else None
    rows[:0] = about_rows(run or {}, about)
    if title is None:
        title = (worker_title(run) or f"{run.get('scenario', 'alarmkit')} · {_run_name(run)}") if run else "alarmkit report"
    out = check_output(path, ours=is_report, what="report", reading=_journal_file(journal))
    clock = "wall-clock time, from the run's first event" if real_run(run) else "virtual time"
    html = report_html(figures, title, rows, plotlyjs, clock, verdict, in_folder=plotlyjs == PLOTLY_FILE,
                       links=(about or {}).get("links", ()))
    return write_text(out, html, ours=is_report, what="report", reading=_journal_file(journal))


def _journal_file(journal: Any) -> tuple:
    path = getattr(journal, "path", None)
    return (path,) if path else ()


def export_run(journal: Any, run_id: int, path: str | Path, violations: Iterable[Any] | None = None,
               plotlyjs: str = "inline", verdict: Any = None, about: Mapping[str, Any] | None = None) -> Path:
    """``alarmkit export``: the report of one run of a journal (``verdict``: the run's, when the caller
    ran it and holds its obligations; else the run-wide invariants are checked)."""
    return export_html(int(run_id), path, journal=journal, violations=violations, plotlyjs=plotlyjs,
                       verdict=verdict, about=about)


def export_folder(journal: Any, reports: Mapping[str, int], folder: str | Path, progress: Any = None,
                  verdicts: Mapping[str, Any] | None = None, about: Mapping[str, Mapping] | None = None) -> list[Path]:
    """Write one report per ``{file name: run id}`` into ``folder`` and one ``plotly.min.js`` beside
    them, which every page loads (offline: nothing else is fetched). Returns the report paths.
    ``progress`` wraps the items (e.g. ``tqdm``); ``verdicts`` maps a file name to its run's verdict, ``about``
    to what its page says first (``export_html``'s ``about``). Each page links ``index.html`` (``write_index`` writes it)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise AlarmkitError(f"folder {folder} does not exist; create it or pass another --out path")
    bad = [name for name in reports if Path(name).name != name or not name.endswith(".html")]
    if bad:
        raise AlarmkitError(f"report names are file names ending in .html, got {bad}")
    write_plotly_js(folder, reading=_journal_file(journal))
    items = list(reports.items())
    return [export_run(journal, run_id, folder / name, plotlyjs=PLOTLY_FILE, verdict=(verdicts or {}).get(name),
                       about=(about or {}).get(name)) for name, run_id in (progress(items) if progress else items)]


def write_index(folder: str | Path, entries: Sequence[Mapping[str, Any]], title: str = "alarmkit reports") -> Path:
    """``folder/index.html``: one row per report (dicts: name, file, status, headline, lines, demonstrates,
    kind), broken first. An existing index.html is replaced only if alarmkit wrote it."""
    head = (f'{_HEAD}\n{GENERATOR}\n<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n')
    return write_text(Path(folder) / INDEX, index_html(entries, head, title), ours=is_report, what="report index")



from .._public import publish as _publish  # noqa: E402

_publish(__name__, globals(), __all__)  # check_plotly_js, is_plotly_js: defined in _plotlyjs
