"""An empty path ("" from an unset shell variable) is refused by every command the same way, before
any work (`--report ""` and `--db ""` of some commands did nothing and said nothing,
while `run --db ""` refused)."""

import os

import pytest

from alarmkit.cli import main


@pytest.mark.parametrize("argv, flag", [
    (["run", "lease-ledger", "--db", ""], "--db"),
    (["demo", "--db", ""], "--db"),
    (["demo", "--out", ""], "--out"),
    (["export", "--db", "", "--run", "1"], "--db"),
    (["export", "--db", "j.duckdb", "--run", "1", "--out", ""], "--out"),
    (["explore", "lease-ledger", "--seeds", "1", "--db", ""], "--db"),
    (["explore", "lease-ledger", "--seeds", "1", "--out", ""], "--out"),
    (["explore", "lease-ledger", "--seeds", "1", "--faults", ""], "--faults"),
    (["worker", "w.py", "--drive", "d.json", "--report", ""], "--report"),
    (["worker", "w.py", "--drive", "d.json", "--db", ""], "--db"),
    (["worker", "w.py", "--drive", ""], "--drive"),
    (["worker", "", "--drive", "d.json"], "ENTRY"),
    (["diff", "--db", "", "--run", "1", "--run", "2"], "--db"),
    (["diff", "--db", "a.duckdb", "--db", "", "--run", "1"], "--db"),
    (["diff", "--db", "a.duckdb", "--run", "1", "--run", "2", "--out", ""], "--out"),
    (["import", "", "--db", "j.duckdb"], "FILE"),
    (["import", "tail.jsonl", "--db", ""], "--db"),
    (["calibrate", "--db", ""], "--db"),
    (["calibrate", "--out", ""], "--out"),
    (["journal", "recover", "", "--db", "j.duckdb"], "SPILL"),
    (["journal", "recover", "s.jsonl", "--db", ""], "--db"),
])
def test_an_empty_path_is_refused_the_same_way_by_every_command(tmp_path, monkeypatch, capsys, argv, flag):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f'alarmkit: error: {flag} is an empty path (""); pass a path, e.g. {flag} '), err
    assert err.count("\n") == 1
    assert os.listdir(tmp_path) == []  # nothing written
