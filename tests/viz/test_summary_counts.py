"""Every count a report's summary writes, read back from its text and compared with the marks the
timeline draws for the same run, over every built-in scenario.

The marks are read from the figure only (marker positions, lanes, hover text), not from the events,
so a summary that counts one thing and a timeline that draws another fail here.
"""

from __future__ import annotations

import math
import re

import pytest

from alarmkit.viz.plots import timeline
from alarmkit.viz.report import summary_rows
from alarmkit.scenarios import list_scenarios, run_scenario

NUM = r"([\d,]+)"
ATTEMPTS = re.compile(
    rf"^{NUM} alarm\(\) runs: {NUM} first, {NUM} retr(?:y|ies)"
    rf"(?: \((?:{NUM} counted)?(?:; )?(?:{NUM} uncounted, retry_count 0)?(?:; )?"
    rf"(?:{NUM} more scheduled that never ran: replaced, or the run ended first)?\))?"
    rf"; {NUM} ok, {NUM} failed, {NUM} abandoned, {NUM} revived$")
ARMS = re.compile(rf"^{NUM} set by the code \({NUM} of them moved a set alarm\), {NUM} deleted"
                  rf"(?:; {NUM} keepalive rungs?)?$")
TROUBLE = {"crash": "crashes", "handler failure": "failed", "process death": "process deaths", "fault": "faults",
           "restart": "restarts", "idle eviction": "idle evictions"}


def _n(text: str | None) -> int:
    return int(text.replace(",", "")) if text else 0


def said(rows) -> dict[str, int]:
    """The numbers the summary's text states."""
    by = {k: v for k, v, _ in rows}
    m = ATTEMPTS.match(by["attempts"])
    assert m, by["attempts"]
    runs, first, retries, counted, uncounted, unrun, ok, failed, abandoned, revived = map(_n, m.groups())
    out = dict(runs=runs, first=first, retries=retries, counted=counted, uncounted=uncounted, unrun=unrun, ok=ok,
               failed_attempts=failed, abandoned=abandoned, revived=revived, arms=0, rearms=0, disarms=0, rungs=0)
    if "alarms set" in by:
        a = ARMS.match(by["alarms set"])
        assert a, by["alarms set"]
        out.update(arms=_n(a.group(1)), rearms=_n(a.group(2)), disarms=_n(a.group(3)), rungs=_n(a.group(4)))
    for noun, key in TROUBLE.items():
        out[key] = 0
    if "crashes, failures, restarts" in by:
        for part in by["crashes, failures, restarts"].split(", "):
            n, noun = part.split(" ", 1)
            noun = next(k for k in TROUBLE if noun in (k, k + "s", k + "es"))
            out[TROUBLE[noun]] = _n(n)
    return out


def drawn(fig) -> dict[str, int]:
    """The same numbers, counted from the figure's marks."""
    marks: dict[str, list[tuple[float, int, str]]] = {}
    arrows = []
    for t in fig.data:
        meta = t.meta if isinstance(t.meta, dict) else {}
        if meta.get("role") == "events":
            hover = list(t.hovertext) if t.hovertext is not None else [""] * len(t.x)
            marks.setdefault(meta["kind"], []).extend(zip(map(float, t.x), map(float, t.y), hover))
        elif meta.get("role") == "move" and meta.get("kind") == "retry":
            xs, ys = list(t.x), list(t.y)
            arrows += [(float(xs[i]), float(xs[i + 1]), round(float(ys[i]) + 0.27)) for i in range(0, len(xs), 3)]

    def count(*kinds: str) -> int:
        return sum(len(marks.get(k, [])) for k in kinds)

    def rc(h: str) -> int | None:
        m = re.search(r"retry_count: (\d+)", h)
        return int(m.group(1)) if m else None

    fires = [(x, round(y), h) for x, y, h in marks.get("fire", [])]
    user_arms = [(x, round(y + 0.27)) for k in ("arm", "proxy_arm", "disarm") for x, y, h in marks.get(k, [])
                 if rc(h) is None]
    retries = counted = 0
    for x0, x1, lane in arrows:  # the first fire after the backoff's start, unless the code set the alarm between
        later = sorted(f for f in fires if f[1] == lane and f[0] > x0)
        if not later or later[0][0] < x1 - 1e-9:
            continue
        fx, _, h = later[0]
        if any(a_lane == lane and x0 < ax < fx for ax, a_lane in user_arms):
            continue
        retries += 1
        counted += (rc(h) or 0) > 0
    arms = [(x, h) for x, y, h in marks.get("arm", []) if rc(h) is None]  # a proxy_arm is drawn beside its arm
    return dict(runs=count("fire"), retries=retries, counted=counted, uncounted=retries - counted,
                unrun=len(arrows) - retries, first=count("fire") - retries, ok=count("handler_ok"),
                failed_attempts=count("handler_error"), abandoned=count("abandoned"), revived=count("revive", "revival"),
                arms=len(arms), rearms=sum("previously scheduled" in h for x, h in arms),
                disarms=count("disarm"), rungs=count("keepalive_arm"),
                crashes=count("crash", "facet_broken", "actor_broken", "aborted"), failed=count("handler_error"),
                faults=count("fault"), restarts=count("restart"), **{"process deaths": count("process death"),
                                                                     "idle evictions": count("evict")})


@pytest.mark.parametrize("name", [s.name for s in list_scenarios()])
def test_every_summary_count_is_the_count_of_its_marks(name):
    r = run_scenario(name)
    rows = summary_rows(r.events, {"scenario": name, "run_id": None})
    text, marks = said(rows), drawn(timeline(r.events))
    assert {k: text[k] for k in marks} == marks
    assert text["first"] + text["retries"] == text["runs"] and not math.isnan(text["runs"])


def test_the_counts_name_what_each_story_is():
    """The three runs the issue found miscounted, with the numbers their timelines show."""
    lab = said(summary_rows(run_scenario("lease-lab").events))
    assert (lab["runs"], lab["retries"], lab["uncounted"]) == (2, 0, 0)  # a clean run: no retry
    late = said(summary_rows(run_scenario("prod-set-early-throw-later").events))
    assert (late["runs"], late["retries"], late["counted"], late["failed_attempts"]) == (11, 1, 1, 2)
    loop = said(summary_rows(run_scenario("guestbook-crash-loop").events))
    # three poison-entry failures, each revived by the keepalive, then a deploy's restart: no retry at all
    assert (loop["retries"], loop["failed"], loop["revived"], loop["restarts"], loop["rungs"]) == (0, 3, 4, 1, 6)
    root = said(summary_rows(run_scenario("guestbook-root").events))
    assert (root["process deaths"], root["idle evictions"]) == (1, 1)  # it dies mid-batch; later it idles out
    runaway = said(summary_rows(run_scenario("prod-runaway-internal-errors").events))
    assert (runaway["retries"], runaway["counted"], runaway["uncounted"]) == (238, 6, 232)
