"""The diff report in headless Chromium: the figure's strong marks are exactly the table's rows."""

import os

import pandas as pd
import pytest

import alarmkit as ak
from alarmkit._files import write_text
from alarmkit.diff.command import report_page
from alarmkit.viz.report import is_report

from chromium_paths import CHROMIUM  # tests/chromium_paths.py

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"no {CHROMIUM} (apt-get install chromium)"),
]
HOSTILE = '<img src=x onerror="window.__pwned=1">'


def _page(browser, path):
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    blocked, errors = [], []
    page.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:") else (blocked.append(r.request.url),
                                                                                          r.abort()))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.resolve().as_uri(), wait_until="commit")
    page.wait_for_function("Number(document.body && document.body.dataset.rendered) >= 2", timeout=60_000, polling=50)
    return page, blocked, errors


STRONG = """() => {
    const gd = document.getElementById('figure-0');
    const out = [];
    for (const t of gd.data) {
        if (!t.meta || t.meta.role !== 'strong') continue;
        const xs = Array.from(t.x), ys = Array.from(t.y);
        Array.from(t.customdata).forEach((row, i) => out.push([row, t.meta.run, t.meta.status, xs[i], ys[i]]));
    }
    const drawn = gd.querySelectorAll('.scatterlayer .trace').length;
    return {marks: out, drawn: drawn, traces: gd.data.length};
}"""


def test_strong_marks_are_the_table_rows(browser, tmp_path):
    # docs/diff.md's example, with its exact fire latency (the crash run's extra fire would give later fires other draws)
    exact = ak.PROFILES["workerd"].replace(fire_latency="exact")
    good = ak.run_scenario("lease-ledger", seed=3, profile=exact)
    crashed = ak.run_scenario("lease-ledger", seed=3, profile=exact,
                              faults=ak.FaultPlan.from_dict({"crash_after_effect": [{"effect": "revoke", "call": 1}]}))
    d = ak.diff(good, crashed, names=("fault-free", HOSTILE))
    path = write_text(tmp_path / "diff.html", report_page(d, f"diff {HOSTILE}"), ours=is_report, what="report")
    page, blocked, errors = _page(browser, path)
    got = page.evaluate(STRONG)
    t = d.table()
    # one strong mark per run in which a differing event exists, carrying its table row
    expected = sorted([(i, s, r.status, int(r[f"t_{s}"]) / 1000) for i, r in t.iterrows() for s in "ab"
                       if not pd.isna(r[f"t_{s}"])])
    assert sorted((m[0], m[1], m[2], m[3]) for m in got["marks"]) == expected
    assert sorted({m[0] for m in got["marks"]}) == list(range(len(t)))
    assert got["drawn"] == got["traces"]  # every trace reached the page's SVG
    # the hostile run name is text: in the lanes, never markup
    assert page.evaluate("window.__pwned") is None
    assert all("&lt;img" in m[4] for m in got["marks"] if m[1] == "b")  # escaped in the data ...
    ticks = page.evaluate("Array.from(document.querySelectorAll('#figure-0 .ytick text')).map(e => e.textContent)")
    assert any(tk.startswith("ledger · <img") for tk in ticks)  # ... and shown as text
    assert page.locator("#figure-0 img").count() == 0
    assert page.locator("text=first divergence: ledger at 15.002 s").count() == 1
    assert blocked == [] and errors == []
    page.close()


def test_identical_runs_draw_no_strong_mark(browser, tmp_path):
    d = ak.diff(ak.run_scenario("lease-normal"), ak.run_scenario("lease-normal"))
    path = write_text(tmp_path / "same.html", report_page(d, "same"), ours=is_report, what="report")
    page, blocked, errors = _page(browser, path)
    got = page.evaluate(STRONG)
    assert got["marks"] == [] and d.table().empty
    assert page.evaluate("document.getElementById('figure-0').data.filter(t => t.meta.role === 'matched')"
                         ".reduce((n, t) => n + Array.from(t.x).length, 0)") == 2 * d.matched
    assert blocked == [] and errors == []
    page.close()
