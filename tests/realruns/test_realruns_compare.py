"""Real (recorded fixtures) against simulated runs of the same scenarios, aligned on the first request."""

from __future__ import annotations

from pathlib import Path

import pytest

from alarmkit import Journal, run_scenario
from alarmkit.errors import AlarmkitError
from alarmkit.viz.plots import compare
from alarmkit.realruns.compare import align, differences, export_comparison
from alarmkit.realruns.importer import import_file

FIX = Path(__file__).resolve().parents[2] / "data" / "real-runs"


@pytest.fixture(scope="module")
def journal():
    j = Journal()
    yield j
    j.close()


def _pair(j, name, **params):
    real = import_file(FIX / name / "tail.jsonl", j).run_id
    sim = run_scenario(name, journal=j, **params).run_id
    return j.events(real), j.events(sim), real, sim


def test_normal_and_crash_after_effect_match_the_simulation(journal):
    for name in ("lease-normal", "lease-crash-after-effect"):
        real, sim, _, _ = _pair(journal, name)
        assert differences(real, sim) == [], name


def test_exhaustion_differs_only_in_jitter_timing(journal):
    real, sim, _, _ = _pair(journal, "lease-exhaustion", ttl=500)
    diffs = differences(real, sim, tolerance_ms=250)
    assert diffs and all(d.startswith("run ") and " ms, simulated at +" in d for d in diffs)
    assert differences(real, sim, tolerance_ms=20_000) == []  # 25 % jitter of a 64 s wait is up to 16 s


def test_differences_name_extra_runs_and_effects(journal):
    real, _, _, _ = _pair(journal, "lease-crash-after-effect")
    sim = journal.events(run_scenario("lease-normal", journal=journal).run_id)
    diffs = differences(real, sim)
    assert "run 1: outcome real error, simulated ok" in diffs
    assert 'effect revoke("lease-0"): real ×2, simulated ×1' in diffs
    assert 'effect revoke("lease-1"): real ×0, simulated ×1' in diffs


def test_align_counts_from_the_first_call(journal):
    real, sim, _, _ = _pair(journal, "lease-normal")
    a = align(real)
    assert a.loc[a["kind"] == "call", "t_ms"].min() == 0
    fires = a.loc[a["kind"] == "fire", "t_ms"].tolist()
    assert 290 <= fires[0] <= 400 and 1490 <= fires[1] <= 1700  # leases of 300 ms and 1500 ms


def test_plots_compare_aligns_and_the_page_lists_differences(journal, tmp_path):
    real, sim, r, s = _pair(journal, "lease-exhaustion", ttl=500)
    fig = compare({"real": real, "sim": sim}, align="first_request")
    xs = [x for t in fig.data for x in (t.x if t.x is not None else []) if isinstance(x, (int, float))]
    assert xs and max(xs) < 10**9  # no epoch times left on the axis
    with pytest.raises(AlarmkitError, match=r"^align must be None or 'first_request', got 'start'$"):
        compare({"real": real}, align="start")
    page = export_comparison(journal, r, s, tmp_path / "c.html").read_text()
    assert "differences" in page and "run 7: real at +" in page
