"""A journal's tables are created in one transaction (kill -9 while a new journal was
created left, in 4 of 16 tries, a file every later command called "a DuckDB file but not an alarmkit
journal"). A file an earlier alarmkit left half-made is recognised as alarmkit's: completed when
opened for writing, refused as such when opened read-only."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

import alarmkit as ak
from alarmkit import Journal

ENV = {**os.environ, "PYTHONPATH": str(Path(ak.__file__).resolve().parents[1])}

_CREATE_MANY = r'''
import sys
from pathlib import Path
from alarmkit import Journal
folder = Path(sys.argv[1])
Journal(folder / "j0.duckdb").close()  # one whole journal first, so a slow start on a loaded machine still counts
print("ready", flush=True)
i = 1
while True:
    Journal(folder / f"j{i}.duckdb").close()
    i += 1
'''


def test_kill_9_while_journals_are_created_leaves_only_whole_journals(tmp_path):
    script = tmp_path / "create.py"
    script.write_text(_CREATE_MANY)
    rng = random.Random(37)
    checked = 0
    for attempt in range(8):  # bounded: 8 kills at seeded random points
        folder = tmp_path / f"try{attempt}"
        folder.mkdir()
        proc = subprocess.Popen([sys.executable, str(script), str(folder)], env=ENV, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)
        try:
            assert proc.stdout.readline().strip() == "ready"
            time.sleep(rng.uniform(0.05, 0.4))
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        made = sorted(p for p in folder.glob("j*.duckdb"))  # j0 whole, then any the kill cut short
        for path in made:
            try:
                with Journal(path) as j:  # whole, or completed now: never "not an alarmkit journal"
                    assert j.runs().empty
                    j.start_run("s", "p", 0, {})
            except ak.AlarmkitError as err:
                files = {p.name: p.stat().st_size for p in folder.iterdir()}
                raise AssertionError(f"try {attempt}: {err} (files and sizes: {files})") from None
            with Journal(path, read_only=True) as j:
                assert list(j.runs()["run_id"]) == [1]
            checked += 1
    assert checked >= 8  # at least the journals of eight kills were opened and written


def _half_made(path: Path) -> None:
    """What an alarmkit killed after its first CREATE TABLE left (it made the tables one by one)."""
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE runs (run_id INTEGER PRIMARY KEY, scenario TEXT, profile TEXT, seed BIGINT, "
                "params TEXT, faults TEXT, started_at TIMESTAMP)")
    con.close()


def test_a_half_made_journal_is_completed_when_opened_for_writing(tmp_path):
    path = tmp_path / "j.duckdb"
    _half_made(path)
    with Journal(path) as j:
        run = ak.run_scenario("lease-ledger", seed=1, journal=j)
        n = len(run.events)
    assert run.run_id == 1 and n > 0
    with Journal(path, read_only=True) as j:
        assert len(j.events(1)) == n


def test_a_half_made_journal_opened_read_only_is_refused_as_alarmkits(tmp_path):
    path = tmp_path / "j.duckdb"
    _half_made(path)
    with pytest.raises(ak.AlarmkitError) as info:
        Journal(path, read_only=True)
    assert str(info.value) == (
        f"{str(path)!r} is an alarmkit journal whose creation was cut short (it has ['runs'] of its tables, no "
        f"events); open it once for writing to complete it, e.g. `alarmkit run SCENARIO --db {path}`, or pass "
        "another journal")
    proc = subprocess.run([sys.executable, "-m", "alarmkit", "diff", "--db", str(path), "--run", "1", "--run", "2"],
                          env=ENV, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "creation was cut short" in proc.stderr and "Traceback" not in proc.stderr


def test_a_file_with_a_runs_table_of_its_own_is_still_someone_elses(tmp_path):
    path = tmp_path / "other.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE runs (id INTEGER, athlete TEXT, km DOUBLE)")
    con.close()
    with pytest.raises(ak.AlarmkitError, match="is a DuckDB file but not an alarmkit journal"):
        Journal(path)
    con = duckdb.connect(str(path), read_only=True)
    assert con.execute("SELECT table_name FROM information_schema.tables").fetchall() == [("runs",)]
    con.close()


def _cut_short_at(path: Path, size: int) -> None:
    """What a kill -9 while DuckDB created ``path`` leaves: it creates the file empty, locks it, then writes
    its three 4,096-byte headers one at a time (traced: openat, fcntl F_SETLK, pwrite64 x3)."""
    duckdb.connect(str(path)).close()
    os.truncate(path, size)


@pytest.mark.parametrize("size", [0, 4096, 8192])
def test_a_journal_cut_short_before_duckdb_wrote_its_headers_is_made_again_or_refused_as_such(tmp_path, size):
    path = tmp_path / "j4.duckdb"
    _cut_short_at(path, size)
    with pytest.raises(ak.AlarmkitError) as info:
        Journal(path, read_only=True)
    assert str(info.value) == (
        f"{str(path)!r} is an alarmkit journal whose creation was cut short before DuckDB wrote its headers "
        f"({size:,} of 12,288 bytes, no tables) or an empty file: nothing to read; open it once for writing to make "
        f"it a journal, e.g. `alarmkit run SCENARIO --db {path}`, or pass another journal")
    assert path.stat().st_size == size  # read-only: left as it was
    with Journal(path) as j:  # it was "not an alarmkit journal (not a DuckDB file)" for every later command
        assert j.runs().empty
        j.start_run("s", "p", 0, {})
    with Journal(path, read_only=True) as j:
        assert list(j.runs()["run_id"]) == [1]


_HOLD = r'''
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR)
fcntl.lockf(fd, fcntl.LOCK_EX)  # as DuckDB holds a file it is still creating
print("held", flush=True)
time.sleep(60)
'''


def test_a_file_another_process_is_still_creating_is_left_to_it(tmp_path):
    path = tmp_path / "j.duckdb"
    path.write_bytes(b"")
    proc = subprocess.Popen([sys.executable, "-c", _HOLD, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        with pytest.raises(ak.JournalLocked, match=r"^journal file .*j\.duckdb is held open by another process"):
            Journal(path)
        assert path.exists() and path.stat().st_size == 0  # not removed from under the process making it
    finally:
        proc.kill()
        proc.wait(timeout=30)
