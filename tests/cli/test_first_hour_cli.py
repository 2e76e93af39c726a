"""The first hour on the command line: exit codes a CI can use, attempts that say how they ended,
what each scenario demonstrates, `--version`, `journal runs`, old flag spellings kept with a note."""

from __future__ import annotations

import json

import pytest

from alarmkit.cli import main


def run(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        rc = main(list(argv))
    except SystemExit as exit_:  # argparse: --version, usage errors
        rc = exit_.code
    out, err = capsys.readouterr()
    return rc, out, err


def test_run_exits_1_on_a_broken_verdict_0_on_a_warning_or_held(capsys):
    rc, out, _ = run(capsys, "run", "prod-set-early-throw-later")
    assert rc == 1 and out.startswith("verdict: BROKEN: 7 violations")
    rc, out, _ = run(capsys, "run", "lease-exhaustion", "--seed", "1")
    assert rc == 0 and out.startswith("verdict: WARNING, nothing broken but: abandoned, rows left")
    assert "  alarm() at     1.002 s  retry_count=0  ledger  threw InjectedError: lab: the handler throws" in out
    assert ("  alarm() at   139.970 s  retry_count=6  ledger  abandoned after InjectedError: lab: the handler throws "
            "(attempt with retry_count=6)") in out
    assert "  rows left: lease-0" in out and "  final alarm: none" in out and "['" not in out  # no Python reprs
    rc, out, _ = run(capsys, "run", "lease-ledger")
    assert rc == 0 and out.startswith("verdict: all obligations held (6 checked; 9 invariants checked, none broken)")
    rc, _, err = run(capsys, "run", "no-such-scenario")
    assert rc == 2 and err.startswith("alarmkit: error: unknown scenario 'no-such-scenario'")


def test_run_json_attempts_say_ok_threw_abandoned(capsys):
    rc, out, _ = run(capsys, "run", "lease-crash-after-effect", "--seed", "1", "--json")
    data = json.loads(out)
    assert rc == 0 and data["verdict"]["status"] == "warning"  # the retry ran revoke twice: never green
    assert [w["text"] for w in data["verdict"]["warnings"]] == [
        'duplicate effect · ledger: revoke("lease-0") ran 2 times (at-least-once delivery: harmless only if revoke is idempotent)']
    assert [(a["t_ms"], a["outcome"], a["error"]) for a in data["attempts"]] == [
        (302, "threw", "InjectedError: lab: revoke('lease-0') throws after recording its call"), (2_371, "ok", None)]
    rc, out, _ = run(capsys, "run", "lease-exhaustion", "--seed", "1", "--json")
    data = json.loads(out)
    assert [a["outcome"] for a in data["attempts"]] == ["threw"] * 6 + ["abandoned"]
    assert data["verdict"]["status"] == "warning" and [w["invariant"] for w in data["verdict"]["warnings"]] == [
        "abandoned", "rows left"]


def test_explore_exits_1_on_a_counterexample_0_without(capsys):
    rc, out, _ = run(capsys, "explore", "lease-no-revival", "--seeds", "3", "--crash-points", "none", "--workers", "1", "--json")
    assert rc == 1 and json.loads(out)["violations"]
    rc, out, _ = run(capsys, "explore", "lease-ledger", "--seeds", "0", "--depth", "1", "--workers", "1", "--json")
    assert rc == 0 and json.loads(out)["violations"] == []
    rc, _, err = run(capsys, "explore", "lease-ledger", "--seeds", "-1")
    assert rc == 2 and "expected a number >= 0" in err


def test_list_says_what_each_scenario_demonstrates(capsys):
    rc, out, _ = run(capsys, "list")
    assert rc == 0
    assert ("lease-no-revival              [anti-pattern] relying on retries alone: once the platform abandons the "
            "alarm, nothing re-arms it") in out
    rc, out, _ = run(capsys, "list", "--json")
    by = {s["name"]: s for s in json.loads(out)}
    assert by["lease-exhaustion"]["kind"] == "platform" and by["order-handoff"]["kind"] == "failure"
    assert all(s["demonstrates"] for s in by.values())


def test_version(capsys):
    from alarmkit import __version__

    rc, out, _ = run(capsys, "--version")
    assert rc == 0 and out.strip() == f"alarmkit {__version__}"


def test_journal_runs_lists_the_runs(capsys, tmp_path):
    db = str(tmp_path / "j.duckdb")
    assert run(capsys, "run", "lease-normal", "--db", db)[0] == 0
    assert run(capsys, "run", "prod-clobbered-alarm", "--db", db)[0] == 1
    rc, out, _ = run(capsys, "journal", "runs", "--db", db)
    lines = out.splitlines()
    assert rc == 0 and lines[0].split() == ["run", "scenario", "profile", "seed", "events", "complete"]
    assert lines[1].split()[:4] == ["1", "lease-normal", "workerd", "0"] and lines[1].endswith("yes")
    assert lines[2].split()[:2] == ["2", "prod-clobbered-alarm"]
    rc, out, _ = run(capsys, "journal", "runs", "--db", db, "--json")
    data = json.loads(out)
    assert [r["scenario"] for r in data] == ["lease-normal", "prod-clobbered-alarm"] and data[0]["events"] == 12
    rc, _, err = run(capsys, "journal", "runs", "--db", str(tmp_path / "none.duckdb"))
    assert rc == 2 and "no journal file" in err


def test_old_flag_spellings_still_work_with_a_note(capsys, tmp_path):
    db = str(tmp_path / "j.duckdb")
    run(capsys, "run", "lease-normal", "--db", db)
    rc, out, err = run(capsys, "export", "--db", db, "--run", "1", "--out", str(tmp_path / "a.html"))
    assert rc == 0 and (tmp_path / "a.html").is_file()
    assert err.strip() == "alarmkit: note: --out is the old name of --report (one spelling across commands); it still works"
    rc, out, err = run(capsys, "export", "--db", db, "--run", "1", "--report", str(tmp_path / "b.html"))
    assert rc == 0 and (tmp_path / "b.html").is_file() and err == ""


@pytest.mark.parametrize("argv", [["record", "--worker", "w.js", "--class", "C"],
                                  ["record", "--worker", "w.js", "--class", "C", "--drive", "a.json", "--script", "b.json"]])
def test_record_needs_one_drive(capsys, tmp_path, monkeypatch, argv):
    monkeypatch.chdir(tmp_path)
    rc, _, err = run(capsys, *argv, "--db", "j.duckdb")
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "--drive" in err
    assert not (tmp_path / "j.duckdb").exists()


def test_worker_journaled_prints_its_verdict_and_attempts(capsys, tmp_path):
    from pathlib import Path

    nb = Path(__file__).resolve().parents[2] / "notebooks" / "workers"
    db = str(tmp_path / "j.duckdb")
    rc, out, err = run(capsys, "worker", "--worker", str(nb / "outbox.py"), "--wrangler", str(nb / "wrangler.jsonc"),
                       "--drive", str(nb / "drive.json"), "--db", db)
    assert rc == 0 and err == "", err
    assert out.startswith("verdict: no obligations declared, so none checked; 5 run-wide invariants checked")
    assert "  alarm() at      1001 ms  retry_count=0  alice  ok" in out and "all 2 expectations of the drive held" in out
    rc, out, err = run(capsys, "worker", str(nb / "outbox.py"), "--wrangler", str(nb / "wrangler.jsonc"),
                       "--drive", str(nb / "drive.json"), "--db", db, "--json")
    data = json.loads(out)
    assert rc == 0 and data["verdict"]["status"] == "held" and data["attempts"][0]["outcome"] == "ok"
    assert err.startswith("alarmkit: note: the positional ENTRY is the old spelling of --worker ENTRY")
