"""The teaching bundle as a handout: what ``bundle.build_bundle`` adds to nbconvert's pages.

An index with a learning path (one paragraph per notebook, in order), and on every page: previous /
index / next links, a table of contents, the glossary of marks (``marks.html``) linked under every
figure, the scenario's source beside its first figure (collapsible), two or three exercises with
their answers hidden (``<details>``). plotly.js travels once, as ``plotly.min.js`` beside the pages
(each page loaded it inline: 9 pages, 47.5 MB). Every string from a notebook is escaped.
"""

from __future__ import annotations

import html
import inspect
import re
from typing import Any, Sequence

__all__ = ["EXERCISES", "GLOSSARY", "PLOTLY_FILE", "decorate", "glossary_page", "index_page", "learning_paragraph",
           "scenario_of"]

GLOSSARY = "marks.html"
PLOTLY_FILE = "plotly.min.js"

# (question, answer) per notebook number; the answers come from the notebooks' own runs and text
EXERCISES: dict[str, list[tuple[str, str]]] = {
    "01": [("In lease-moves-only-earlier the ledger grants 5 s, then 60 s, then 1 s. Which grant moves the alarm?",
            "Only the 1 s grant: it is earlier than the stored alarm. The 60 s grant is later, so the ledger "
            "leaves the alarm where it is (it moves only earlier)."),
           ("In lease-crash-after-effect revoke throws once after counting its call. How often does revoke run "
            "for that lease, and what must the effect tolerate?",
            "Twice: the retry about 2 s later runs it again. Delivery is at least once, so the effect must be "
            "idempotent (the timeline marks the second run as a duplicate effect).")],
    "02": [("lease-exhaustion: how many alarm() attempts, and roughly how long between them?",
            "7 attempts: retries after about 2, 4, 8, 16, 32 and 64 s, each plus up to 25 % jitter; then the "
            "stored alarm is cleared and nothing runs again."),
           ("What separates a counted failure from an uncounted one?",
            "A counted failure advances retry_count towards the limit; an uncounted one (an internal error) "
            "keeps retry_count 0 and is retried without limit, the backoff capped at 1024 s."),
           ("After exhaustion, what brings the work back in lease-revival?",
            "A restart and one request: the constructor re-arms the alarm from the table.")],
    "03": [("lease-alarm-as-data sets one alarm per lease. Why are leases lost?",
            "An object has one alarm: each set_alarm replaces the last, so an earlier lease's due time is "
            "overwritten. Keep due times in storage and arm for the earliest."),
           ("Inside alarm(), what does get_alarm() return before the handler sets a new alarm?",
            "null (None): the running alarm is no longer stored, so a re-arm decided on it is decided on null.")],
    "04": [("On today's workerd, what happens when a facet calls set_alarm?",
            "The facet breaks (facet_broken); under the workerd-2026-07 profile, before PR #7085, the whole actor "
            "broke."),
           ("How does the parent-owned proxy keep the keepalive working?",
            "The parent owns the one alarm and sets it for the facet; the parent's alarm() delivers to the "
            "facet, which boots and revives its batch.")],
    "05": [("guestbook-crash-loop: when do the revivals come, and what stops them?",
            "At +10, +20 and +40 s; then the crash-loop budget (3 revivals of one build) parks the keepalive. "
            "A deploy of v2 resets it and the next revival finishes."),
           ("Why are late, failed or duplicate keepalive fires harmless?",
            "A fire only looks for owed work and revives it; with nothing owed it does nothing (self-gating).")],
    "06": [("Why does celld fire the keepalive up to about 50 s late?",
            "The keepalive matters when the process died, so the cell is dormant: its alarm waits in a minute "
            "bucket that the waker scans every 60 s."),
           ("Name two settings that shrink the lateness, and their cost.",
            "A shorter waker tick (more bucket scans) or a residency long enough that the cell stays resident "
            "(memory).")],
    "07": [("How do you find duplicate effects with SQL?",
            "Group the effect events by run, object and the detail's name and key; keep the groups with "
            "count(*) > 1."),
           ("Where does the journal keep each attempt's retry count?",
            "In the retry_count column of its fire event (0 for a first run and for an uncounted retry).")],
    "08": [("How do you draw a real run beside a simulated one on one time axis?",
            "compare({...}, align=\"first_request\"): each run's time counts from its first request."),
           ("What can a real trace not tell you that the model journals?",
            "Why an attempt ran: a trace holds no retry_scheduled, so retries are measured from the scheduled "
            "time.")],
    "09": [("prod-set-early-throw-later: why is the digest due at 120 s never sent by 'naive'?",
            "Its alarm() set the next alarm (180 s) and then threw: the stored alarm replaced the retry. "
            "'fixed' sets the next alarm last, so its failure is retried and the digest sent."),
           ("prod-runaway-internal-errors: how long is an uncounted failure retried?",
            "For ever: the backoff caps at 1024 s, so the object wakes every 17 to 21 minutes.")],
}

# a mark's meaning for the glossary (kinds the runtime and the scenarios journal; alarmkit._kinds)
MEANING = {
    "arm": "the code set or moved the object's alarm (the dotted or solid line runs to its due time; green "
    "dash-dot: re-armed inside alarm(), queued after the running alarm)",
    "disarm": "the code deleted the alarm", "retry_scheduled": "a failed alarm() scheduled its retry (the arrow is "
    "the real wait, the nominal rung in hover)",
    "fire": "alarm() started", "fire_skipped": "a due alarm was not delivered",
    "handler_ok": "alarm() returned", "handler_error": "alarm() threw", "abandoned": "the platform gave up retrying",
    "revive": "the runtime re-ran a stored alarm after a construct or restart", "effect": "the handler did its work",
    "duplicate effect": "the same work ran again on the object (linked to its first run)",
    "crash": "the object's code crashed", "fault": "an injected fault", "restart": "the runtime restarted "
    "(dotted vertical line; the grey band is the downtime)",
    "facet_broken": "a facet broke", "actor_broken": "the whole actor broke", "proxy_arm": "the parent's alarm "
    "proxy set an alarm for a facet", "proxy_deliver": "the proxy delivered an alarm to a facet",
    "keepalive_arm": "the keepalive armed its next rung", "keepalive_disarm": "the keepalive stood down",
    "keepalive_fire": "the keepalive's alarm fired", "revival": "the keepalive found owed work and revived it",
    "deploy": "a new build was deployed", "wake": "celld's waker woke a dormant cell", "bucket": "celld mirrored "
    "an alarm into a minute bucket", "construct": "the object was constructed", "call": "a request or RPC",
    "evict": "idle eviction: nothing was running", "process death": "the process went away with work in flight "
    "(forced or injected eviction)",
    "obligation due, never ran": "the verdict: work that was due here never ran (hover says why)",
    "expect_failed": "a drive's expectation about the end state did not hold (hover names it)",
    "refused": "the code touched surface alarmkit does not simulate (a refusal, caught or not; hover names it)",
}


def learning_paragraph(nb: Any) -> str:
    """The first paragraph of the notebook's first markdown cell after its heading, as plain text."""
    first = next((c.source for c in nb.cells if c.cell_type == "markdown"), "")
    body = "\n".join(ln.strip() for ln in first.splitlines() if not ln.startswith("#"))
    para = " ".join(next((chunk for chunk in body.split("\n\n") if chunk.strip()), "").split())
    # a paragraph that introduces a list ("... breaks it:") ends the index's entry as a sentence
    return re.sub(r"[`*]", "", para[:-1] + "." if para.endswith(":") else para)


def scenario_of(nb: Any) -> str | None:
    """The first scenario the notebook runs (``run_scenario("x"`` or ``Explorer("x"``), if a known one."""
    from ..scenarios import SCENARIOS

    for c in nb.cells:
        if c.cell_type == "code":
            for name in re.findall(r"""(?:run_scenario|Explorer)\(\s*["']([\w.-]+)["']""", c.source):
                if name in SCENARIOS:
                    return name
    return None


def _source(name: str) -> str:
    from ..scenarios import SCENARIOS

    try:
        return inspect.getsource(SCENARIOS[name].fn)
    except (OSError, TypeError):  # a scenario defined where its source cannot be read
        return f"# the source of {name} is not available"


_STYLE = """<style>
.ak-nav{display:flex;gap:1.2em;flex-wrap:wrap;font:14px system-ui,sans-serif;padding:.6em 1em;background:#f4f6f8;
 border-bottom:1px solid #dde}
.ak-nav a{color:#0b5cad;text-decoration:none}.ak-toc{font:14px system-ui,sans-serif;margin:.5em 1em 1em;
 padding:.5em 1em;border-left:3px solid #0b5cad;background:#fafbfc}.ak-toc ol{margin:.2em 0 .2em 1.2em}
.ak-figlink{font:12px system-ui,sans-serif;margin:.2em 0 1em}.ak-source{margin:.5em 0;font:13px system-ui}
.ak-source pre{max-height:28em;overflow:auto;background:#f7f7f7;padding:.6em;font-size:12px}
.ak-exercises{font:15px/1.5 system-ui,sans-serif;margin:1.5em 1em;padding:.5em 1em;border-top:2px solid #0b5cad}
.ak-exercises details{margin:.3em 0 .8em;color:#333}.ak-exercises summary{cursor:pointer;color:#0b5cad}
.alarmkit-still-caption{background:#fff7e0;border-left:3px solid #e69f00;padding:.4em .8em;font:13px system-ui}
</style>"""
_HEADING = re.compile(r'<h([23]) id="([^"]+)"[^>]*>(.*?)(?:<a class="anchor-link"[^>]*>.*?</a>)?</h\1>', re.S)
# nbconvert re-serialises an output's HTML (its attributes in its own order): any div of that class
_FIGURE = re.compile(r'(<div [^>]*class="plotly-graph-div"[^>]*>\s*</div>)')


def _link(page: Any, rel: str) -> str:
    if page is None:
        return ""
    arrow = {"prev": "← ", "next": ""}[rel]
    tail = " →" if rel == "next" else ""
    return (f'<a rel="{rel}" href="{html.escape(page.html.name)}">{arrow}'
            f'{html.escape(page.title or page.source.stem)}{tail}</a>')


def decorate(body: str, *, page: Any, prev: Any, next_: Any, plotlyjs: str, scenario: str | None,
             exercises: Sequence[tuple[str, str]]) -> str:
    """``body`` (an nbconvert page) made a handout page (see the module)."""
    body = body.replace(f"<script>{plotlyjs}</script>", f'<script src="{PLOTLY_FILE}"></script>')
    toc = [(int(lvl), anchor, re.sub(r"<[^>]+>", "", text).strip()) for lvl, anchor, text in _HEADING.findall(body)]
    toc.append((2, "exercises", "Exercises"))
    items = "".join(f'<li style="margin-left:{(lvl - 2) * 1.2}em"><a href="#{html.escape(a, quote=True)}">'
                    f"{html.escape(html.unescape(t))}</a></li>" for lvl, a, t in toc)
    nav = (f'<nav class="ak-nav">{_link(prev, "prev")}<a href="index.html">index: the learning path</a>'
           f'<a href="{GLOSSARY}">the marks</a>{_link(next_, "next")}</nav>')
    contents = f'<nav class="ak-toc"><b>Contents</b><ol>{items}</ol></nav>'
    figlink = (f'<p class="ak-figlink">What each mark means: <a href="{GLOSSARY}">the glossary of marks</a></p>')
    body = _FIGURE.sub(lambda m: m.group(1) + figlink, body)
    if scenario:
        source = (f'<details class="ak-source"><summary>the source of the scenario <code>{html.escape(scenario)}'
                  f"</code> (alarmkit.scenarios), beside its first figure</summary><pre>"
                  f"{html.escape(_source(scenario))}</pre></details>")
        m = _FIGURE.search(body)
        if m:
            body = body[:m.start()] + source + body[m.start():]
    qa = "".join(f"<li>{html.escape(q)}<details><summary>answer</summary>{html.escape(a)}</details></li>"
                 for q, a in exercises)
    ex = (f'<section class="ak-exercises"><h2 id="exercises">Exercises</h2><ol>{qa or "<li>none yet</li>"}</ol>'
          "</section>")
    body = body.replace("</head>", _STYLE + "</head>", 1)
    body = re.sub(r"(<body[^>]*>)", lambda m: m.group(1) + nav + contents, body, count=1)
    return body.replace("</body>", ex + nav + "</body>", 1)


def index_page(pages: Sequence[Any], paragraphs: Sequence[str], ci: bool) -> str:
    """The index: the learning path, one paragraph per notebook in order."""
    rows = "\n".join(
        f'<li><h2><a href="{html.escape(p.html.name)}">{html.escape(p.title or p.source.stem)}</a></h2>'
        f"<p>{html.escape(text)}</p>"
        f'<p class="m">{p.figures} figure{"s" if p.figures != 1 else ""} · {p.bytes / 1e6:.1f} MB · '
        f"{len(EXERCISES.get(p.source.name[:2], []))} exercises</p></li>"
        for p, text in zip(pages, paragraphs))
    note = " (CI parameters: smaller sweeps)" if ci else ""
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
            "<title>alarmkit notebooks: the learning path</title>\n<style>body{font:15px/1.5 system-ui,sans-serif;"
            "max-width:60rem;margin:2rem auto;padding:0 1rem}li{margin:.2rem 0 1rem}h2{font-size:18px;margin:0}"
            ".m{color:#777;font-size:13px;margin:0}</style></head>\n<body>\n<h1>alarmkit notebooks: the learning path</h1>\n"
            f"<p>Read them in order: each builds on the one before. Every page is a notebook executed top to "
            f"bottom{html.escape(note)}, with its figures, the source of the scenario it runs, and exercises with "
            f'hidden answers. <a href="{GLOSSARY}">The glossary of marks</a> says what each mark on a timeline '
            "means. The pages work offline.</p>\n<ol>\n" + rows + "\n</ol>\n</body></html>\n")


def glossary_page() -> str:
    """``marks.html``: every mark of a timeline, drawn, with what it means."""
    from ._notebook import figure_html
    from ._timeline import KIND_STYLE

    import plotly.graph_objects as go

    kinds = list(KIND_STYLE)
    fig = go.Figure()
    for i, k in enumerate(kinds):
        colour, symbol, size, _ = KIND_STYLE[k]
        fig.add_trace(go.Scatter(x=[0], y=[i], mode="markers+text", text=[f"  {k}"], textposition="middle right",
                                 marker=dict(color=colour, symbol=symbol, size=size, line=dict(width=1, color=colour)),
                                 showlegend=False, hovertext=[MEANING.get(k, k)], hoverinfo="text"))
    fig.update_layout(height=28 * len(kinds) + 60, width=420, template="plotly_white", margin=dict(l=10, r=10, t=30,
                      b=10), xaxis=dict(visible=False, range=[-0.2, 3]), yaxis=dict(visible=False, autorange="reversed"),
                      title="the marks")
    rows = "".join(f"<tr><td><code>{html.escape(k)}</code></td><td>{html.escape(MEANING.get(k, k))}</td></tr>"
                   for k in kinds)
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>the marks of a timeline</title>"
            "<style>body{font:15px/1.5 system-ui,sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem}"
            "td{padding:.2em .8em;vertical-align:top}.g{display:flex;gap:2em;align-items:flex-start}</style>"
            f'<script src="{PLOTLY_FILE}"></script></head>\n<body>\n<nav><a href="index.html">index: the learning '
            "path</a></nav>\n<h1>The marks of a timeline</h1>\n<p>One lane per object, three rows in a lane: the "
            "alarm (arms, moves, retry waits), the handler (fires, outcomes) and what it did (effects, crashes, "
            f"lifecycle).</p>\n<div class=\"g\"><div>{figure_html(fig.to_dict(), with_plotlyjs=False)}</div>"
            f"<table>{rows}</table></div>\n</body></html>\n")
