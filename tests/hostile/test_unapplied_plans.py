"""A fault plan whose entries injected nothing, as a hostile user writes one: an unknown effect, object or
task, an await that never comes (2**53), one entry applied and one not. Each is named in the run's result and
in the HTML report of its journaled run, whose verdict is never green: ``alarmkit export`` said 'held' (green)
above a 'fault plan applied' row in red, because the verdict of a journaled run was made from its events alone."""

from __future__ import annotations

import html
import re

import alarmkit as ak
import pytest
from alarmkit.journal import Journal
from alarmkit.scenarios import run_scenario
from alarmkit.viz.report import export_run

CRASH = {"task": "alarm", "invocation": 1, "at_await": 1}
PLANS = {
    "unknown effect": ({"effect_throws": [{"effect": "revok"}]},
                       "effect_throws[0]: effect 'revok' is not an effect of this scenario; effects seen: revoke"),
    "unknown object": ({"crashes": [{**CRASH, "object": "nobody"}]},
                       "crashes[0]: object 'nobody' is not an object of this scenario; objects seen: ledger"),
    "unknown rpc": ({"crashes": [{**CRASH, "task": "rpc:nosuch"}]},
                    "crashes[0]: task 'rpc:nosuch' is not a task that reached an await in this run; tasks seen: "
                    "alarm, rpc:grant"),
    "await 2**53": ({"crashes": [{**CRASH, "at_await": 2**53}]},
                    "crashes[0]: task 'alarm' invocation 1 reached 4 await(s); await 9007199254740992 never came"),
    "applied partly": ({"crashes": [CRASH, {**CRASH, "task": "rpc:nosuch"}]},
                       "crashes[1]: task 'rpc:nosuch' is not a task that reached an await in this run"),
}


@pytest.mark.parametrize("name", list(PLANS))
def test_the_report_of_a_journaled_run_whose_plan_did_not_apply_is_never_green(name, tmp_path):
    plan, why = PLANS[name]
    with Journal(tmp_path / "j.duckdb") as j:
        r = run_scenario("lease-ledger", journal=j, faults=ak.FaultPlan.from_dict(plan))
        assert any(why in f"{k}: {v}" for k, v in r.unapplied.items()), r.unapplied
        assert r.verdict.status != "held" and any(w.invariant == "fault plan not applied" for w in r.verdict.warnings)
        page = export_run(j, r.run_id, tmp_path / "r.html").read_text()
    status = re.search(r'<div class="verdict" data-held="\w+" data-status="(\w+)"', page).group(1)
    assert status in ("warning", "broken")  # was "held" for the unknown effect, object, rpc and await
    warned = re.findall(r'class="verdict-warning"[^>]*>! fault plan not applied · ([^<]*)</div>', page)
    assert len(warned) == 1 and why in html.unescape(warned[0]), warned


def test_a_plan_that_applied_adds_no_warning_to_the_report(tmp_path):
    with Journal(tmp_path / "j.duckdb") as j:
        r = run_scenario("lease-ledger", journal=j, faults=ak.FaultPlan(crashes=[CRASH]))
        assert r.unapplied == {}
        page = export_run(j, r.run_id, tmp_path / "r.html").read_text()
    assert "fault plan not applied" not in page and "never applied" not in page


BIG = 100_000


@pytest.mark.parametrize("plan, start", [
    ({"crashes": [{**CRASH, "task": "rpc:" + "x" * BIG}]}, "crashes[0]: task 'rpc:xxx"),
    ({"crashes": [{**CRASH, "object": "o" * BIG}]}, "crashes[0]: object 'ooo"),
    ({"effect_throws": [{"effect": "e" * BIG}]}, "effect_throws[0]: effect 'eee"),
    ({"crashes": [{**CRASH, "task": f"rpc:t{i}"} for i in range(500)]}, "crashes[0]: task 'rpc:t0'"),
])
def test_a_warning_quotes_a_huge_name_or_plan_cut_short(plan, start):
    """A 100,000-character name made a 100 KB warning line (500 entries: every reason on one line)."""
    r = run_scenario("lease-ledger", faults=ak.FaultPlan.from_dict(plan))
    line = next(w.text for w in r.verdict.warnings if w.invariant == "fault plan not applied")
    assert start in line and len(line) < 1_500 and "\n" not in line, len(line)
    assert len(r.unapplied) == len(plan[next(iter(plan))])  # the result still holds every entry


@pytest.mark.parametrize("crashes, start", [
    ([{"task": "Z" * 10**6, "invocation": 1, "at_await": 1}], "fault plan field 'crashes[0].task' must be one of"),
    ([{"task": "alarm", "invocation": "9" * 10**5, "at_await": 1}], "fault plan field 'crashes[0].invocation' must be"),
    ("x" * 10**6, "fault plan field 'crashes' must be a list of tables"),
    ([{"k" * 10**6: 1}], "unknown fault plan field 'crashes[0].kkk"),
    ([{1: 1, "x": 2, **CRASH}], "unknown fault plan field 'crashes[0].1'; allowed fields:"),  # was a raw TypeError
])
def test_a_bad_plan_is_one_short_line_naming_the_field(crashes, start):
    with pytest.raises(ak.FaultPlanError) as err:
        ak.FaultPlan(crashes=crashes)
    text = str(err.value)
    assert text.startswith(start) and len(text) < 400 and "\n" not in text, text[:300]
