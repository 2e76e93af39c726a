"""The verdict said first: in RunResult, the CLI, the report and the timeline; a broken obligation
named with its object, time and cause; "held" only when obligations were checked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from alarmkit.viz.plots import MISSED, timeline
from alarmkit.viz.report import export_html
from alarmkit.scenarios import run_scenario
from alarmkit.journal import Journal
from alarmkit.journal import verdict_of_events
from alarmkit.runtime.profiles import PROFILES

# these tests are about the verdict's wording, not fire lateness: simulations here take the exact fire latency
# (each fire 2 ms late), not the workerd profile's measured default (tests/runtime/test_latency_measured.py)
EXACT = PROFILES["workerd"].replace(fire_latency="exact")

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "alarmkit", *args], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=300)


def test_a_broken_obligation_is_named_with_object_time_and_cause():
    v = run_scenario("prod-set-early-throw-later", profile=EXACT).verdict
    assert v.held is False and v.obligations == 10
    first = v.findings[0]
    assert (first.invariant, first.object, first.t_ms) == ("lost", "naive", 120_000)
    assert first.text == ("send_digest(2) on naive, due at 120 s, never ran: its alarm() run at 120.002 s failed "
                          "(DownstreamDown) after setting the next alarm (180 s), which replaced the retry")
    assert v.headline == "BROKEN: 7 violations (1 of 10 obligations lost; 9 invariants checked)"
    assert v.lines()[1] == "✗ " + first.text
    # the fixed object sets its next alarm last, is retried and sends every digest: nothing lost on it
    assert all(f.object == "naive" for f in v.findings)
    assert [m["due_ms"] for m in v.misses] == [120_000]


def test_other_causes_are_read_from_the_journal():
    deleted = run_scenario("prod-clobbered-alarm", profile=EXACT).verdict.findings[0].text
    assert deleted == "remind('stand-up') on naive, due at 30 s, never ran: its alarm was deleted at 20 s"
    replaced = [f.text for f in run_scenario("lease-alarm-as-data", profile=EXACT).verdict.findings if f.invariant == "lost"]
    assert "revoke('lease-1') on ledger, due at 90 s, never ran: its alarm was replaced at 45 s by a later one (105 s)" \
        in replaced
    gave_up = run_scenario("prod-cold-wake-name", profile=EXACT).verdict.findings[0].text
    assert gave_up.endswith("alarm() failed (NameUnavailable) from 120.002 s on, and the platform gave up after "
                            "7 attempts at 256.146 s")


def test_held_only_when_obligations_were_checked():
    held = run_scenario("lease-ledger", profile=EXACT).verdict
    assert held.held is True and held.findings == ()
    assert held.headline == "all obligations held (6 checked; 9 invariants checked, none broken)"
    none = run_scenario("lease-normal", profile=EXACT).verdict  # no obligations declared: it does not say "held"
    assert none.held is True and none.obligations == 0 and "held" not in none.headline
    assert none.headline.startswith("no obligations declared, so none checked; 4 run-wide invariants checked")
    nothing = verdict_of_events(run_scenario("lease-normal", profile=EXACT).events.iloc[:0])
    assert nothing.held is None and nothing.headline == "nothing was checked: the run has no events"


def test_the_cli_prints_the_verdict_first(tmp_path):
    out = cli("run", "prod-set-early-throw-later", cwd=tmp_path)
    assert out.returncode == 1, out.stderr  # a broken verdict fails the command, as pytest does on a failure
    lines = out.stdout.splitlines()
    assert lines[0] == "verdict: BROKEN: 7 violations (1 of 10 obligations lost; 9 invariants checked)"
    assert lines[1].startswith("  ✗ send_digest(2) on naive, due at 120 s, never ran: its alarm() run at 120.001 s")
    held = cli("run", "lease-ledger", "--json", cwd=tmp_path)
    data = json.loads(held.stdout)
    assert data["verdict"]["held"] is True and data["verdict"]["obligations"] == 6
    assert list(data)[0] == "verdict"


def test_the_report_opens_on_the_verdict_and_marks_the_miss(tmp_path):
    r = run_scenario("prod-set-early-throw-later", profile=EXACT)
    page = export_html(r, tmp_path / "r.html").read_text()
    table = page[page.index("<table class=summary>"):]
    assert table.startswith('<table class=summary><tr class="verdict"><th>verdict</th><td><div class="verdict" '
                            'data-held="false" data-status="broken">')
    assert table.index("BROKEN: 7 violations") < table.index("<th>scenario</th>")
    assert '<div class="verdict-broken" style="color:#b00020">✗ send_digest(2) on naive, due at 120 s' in table
    fig = timeline(r.events)
    from alarmkit.viz.plots import mark_missed

    assert mark_missed(fig, r.verdict.misses) == 1
    miss = [t for t in fig.data if t.name == MISSED]
    lanes = fig.layout.meta["lanes"]["yaxis"]
    assert len(miss) == 1 and list(miss[0].x) == [120.0] and list(miss[0].y) == [lanes.index("EARLY_DIGESTS:naive")]
    assert f'"name":"{MISSED}"' in page  # the report's timeline carries the same mark
    ok = export_html(run_scenario("lease-ledger", profile=EXACT), tmp_path / "ok.html").read_text()
    drawn = ok.split('<details id="marks"')[0]  # the glossary at the foot names every mark, this one too
    assert 'data-held="true"' in ok and "all obligations held (6 checked" in ok and MISSED not in drawn


def test_a_journal_run_says_its_obligations_were_not_checked(tmp_path):
    with Journal(tmp_path / "j.duckdb") as j:
        r = run_scenario("prod-set-early-throw-later", journal=j, profile=EXACT)
        page = export_html(r.run_id, tmp_path / "j.html", journal=j).read_text()
    assert "this run&#x27;s obligations are not stored in the journal, so lost work was not checked" in page \
        or "this run's obligations are not stored in the journal" in page
    assert "all obligations held" not in page
