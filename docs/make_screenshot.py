"""Regenerate docs/timeline.png: a real run's timeline, rendered by headless Chromium.

    .venv/bin/python docs/make_screenshot.py            # writes docs/timeline.png (and keeps nothing else)
    .venv/bin/python docs/make_screenshot.py --html t.html   # also keep the page it photographed

Three lease ledgers (seed 003's ledger with its lab controls) on the workerd profile, seed 1:
``ledger-a``'s revoke throws once after it ran, so the retry runs the effect again; ``ledger-b``'s
handler always throws, so it climbs the backoff ladder and is abandoned, then a runtime restart and one
request revive it; ``ledger-c``'s alarm moves earlier as shorter leases arrive.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from alarmkit import Journal, Simulation
from alarmkit.plots import timeline
from alarmkit.report import report_html
from alarmkit.scenarios.lease import LeaseLab

HERE = Path(__file__).resolve().parent
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


def run(journal: Journal) -> int:
    sim = Simulation(profile="workerd", seed=1, journal=journal, scenario="readme-screenshot")
    leases = sim.namespace("LEASES", LeaseLab)
    a, b, c = leases.get("ledger-a"), leases.get("ledger-b"), leases.get("ledger-c")
    sim.call(a.lab(revoke_throws=1))
    sim.call(b.lab(always_throw=True, noboot=True))
    sim.call(a.grant("lease-a1", 3_000))
    sim.call(b.grant("lease-b1", 1_000))
    sim.call(c.grant("lease-c1", 60_000))
    sim.run(until=20_000)
    sim.call(c.grant("lease-c2", 25_000))  # the alarm moves earlier: 60 s -> 45 s
    sim.run(until=30_000)
    sim.call(c.grant("lease-c3", 5_000))  # and earlier again: -> 35 s
    sim.run(until=150_000)  # ledger-b: seven attempts, then abandoned
    sim.call(b.lab(always_throw=False, noboot=False))
    sim.restart(5_000)
    sim.advance(5_000)
    sim.call(b.status())  # one request: the constructor re-arms the overdue lease (revival)
    sim.run(until=170_000)
    sim.close()
    return sim.run_id


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=HERE / "timeline.png")
    ap.add_argument("--html", type=Path, default=None, help="also keep the HTML page")
    a = ap.parse_args(argv)
    with Journal() as journal:
        run_id = run(journal)
        fig = timeline(journal.events(run_id), title="three lease ledgers · workerd profile · seed 1")
    fig.update_layout(width=1200)
    page = report_html([fig], "alarmkit timeline")
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        html = a.html or Path(tmp) / "timeline.html"
        html.write_text(page, encoding="utf-8")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            view = browser.new_page(viewport={"width": 1240, "height": 1000}, device_scale_factor=2)
            view.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:") else r.abort())
            view.goto(html.resolve().as_uri())
            view.wait_for_function("Number(document.body.dataset.rendered) >= 1")
            view.locator("#figure-0").screenshot(path=str(a.out))
            browser.close()
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
