"""The demo's first hour, in Chromium: the index, the warning (never green) over an abandoned alarm, the
anti-pattern pages showing explore's counterexample, the links every page carries."""

import os
import re

import pytest

from chromium_paths import CHROMIUM  # tests/chromium_paths.py

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"no {CHROMIUM} (apt-get install chromium)"),
]

ANTI = ("lease-ctor-pushes-later", "lease-delete-before-effect", "lease-reads-clock", "lease-no-revival")


@pytest.fixture(scope="module")
def demo(demo_run):
    folder, results, _printed = demo_run  # run once per test session (tests/conftest.py); read only
    return folder / "reports", results


@pytest.fixture(scope="module")
def page():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM)
        pg = browser.new_page(viewport={"width": 1300, "height": 900})
        pg.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:") else r.abort())
        yield pg
        browser.close()


def test_the_index_lists_every_page_broken_first(demo, page):
    folder, results = demo
    page.goto((folder / "index.html").as_uri())
    rows = page.locator("tr[data-status]")
    statuses = [rows.nth(i).get_attribute("data-status") for i in range(rows.count())]
    order = ["broken", "warning", "unchecked", "held"]
    assert statuses == sorted(statuses, key=order.index), statuses
    names = page.locator("tr[data-status] a").all_inner_texts()
    # every scenario's page and the four counterexamples, each link a file that exists
    assert len(names) == len(results) + len(ANTI) and set(r["scenario"] for r in results) <= set(names)
    for href in page.locator("tr[data-status] a").evaluate_all("as => as.map(a => a.getAttribute('href'))"):
        assert (folder / href).is_file(), href
    exhaustion = page.locator("tr", has=page.locator("a", has_text=re.compile("^lease-exhaustion$")))
    assert exhaustion.get_attribute("data-status") == "warning"
    assert "abandoned" in exhaustion.inner_text()
    page.screenshot(path=str(folder / "index.png"), full_page=True)


def test_an_abandoned_alarm_is_amber_and_named(demo, page):
    folder, _ = demo
    page.goto((folder / "lease-exhaustion.html").as_uri())
    page.wait_for_function("Number(document.body.dataset.rendered) >= 1", timeout=60_000)
    verdict = page.locator("div.verdict")
    assert verdict.get_attribute("data-status") == "warning"
    head = page.locator(".verdict-head")
    assert head.evaluate("e => getComputedStyle(e).color") == "rgb(138, 90, 0)"  # amber, not green
    warnings = page.locator(".verdict-warning").all_inner_texts()
    assert any(w.startswith("! abandoned · ledger: the platform gave up on its alarm after 7 attempts at 139.97 s")
               for w in warnings), warnings
    assert any("rows left · 1 row(s) still in the table at the end (lease-0)" in w for w in warnings), warnings
    row = page.locator("tr", has=page.locator("th", has_text="demonstrates")).inner_text()
    assert "retried 6 times with backoff, then abandoned" in row
    nav = page.locator("nav.ak-nav a").evaluate_all("as => as.map(a => a.getAttribute('href'))")
    assert nav[:2] == ["index.html", "#marks"]
    assert page.locator("#marks tr").count() > 20  # the glossary of marks, on the page itself


@pytest.mark.parametrize("name", ANTI)
def test_an_anti_pattern_page_shows_the_counterexample(demo, page, name):
    folder, _ = demo
    page.goto((folder / f"{name}.html").as_uri())
    assert page.locator("div.verdict").get_attribute("data-status") == "warning"
    first = page.locator(".verdict-warning").first.inner_text()
    assert first.startswith("! explore found it · ") and f"{name}.counterexample.html" in first, first
    cx = page.locator("tr", has=page.locator("th", has_text="counterexample (explore)")).inner_text()
    assert f"run_scenario('{name}'" in cx and "FaultPlan(" in cx
    link = page.locator("nav.ak-nav a", has_text="the counterexample's run")
    assert link.get_attribute("href") == f"{name}.counterexample.html"
    page.goto((folder / f"{name}.counterexample.html").as_uri())
    assert page.locator("div.verdict").get_attribute("data-status") == "broken"
    assert page.locator(".verdict-head").inner_text().startswith("BROKEN")
    said = page.locator("tr", has=page.locator("th", has_text="demonstrates")).inner_text()
    assert f"the counterexample that alarmkit explore {name} finds: " in said and "`" not in said  # no markdown in HTML
