"""Every user error of the command line is one line and exit code 2, and no user file is harmed.

The tests run ``alarmkit.cli.main`` in this process (tests/clirun.py: the same exit code, stdout and
stderr); one test per command (``real=True``) runs the real ``alarmkit`` console script in a subprocess,
as a user runs it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from clirun import run_main

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(sys.executable).with_name("alarmkit")


def alarmkit(*args: str, cwd: Path | None = None, timeout: int = 300, real: bool = False) -> subprocess.CompletedProcess:
    """``alarmkit ARGS`` in this process; with ``real``, the console script, importing this checkout's alarmkit."""
    if not real:
        return run_main(*args, cwd=cwd)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env)


def refused(p: subprocess.CompletedProcess, *fragments: str) -> str:
    """Exit 2, one line on stderr naming the problem, no traceback."""
    assert p.returncode == 2, (p.returncode, p.stdout[-2000:], p.stderr[-2000:])
    assert "Traceback" not in p.stderr, p.stderr
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("alarmkit: error: "), p.stderr
    for fragment in fragments:
        assert fragment in last, (fragment, last)
    return last


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def make_journal(path: Path, scenario: str = "lease-normal", seed: int = 1) -> None:
    p = alarmkit("run", scenario, "--seed", str(seed), "--db", str(path))
    assert p.returncode == 0, p.stderr


@pytest.fixture
def holder():
    """Hold a journal open in another process (as a notebook kernel does) until the test ends."""
    procs: list[subprocess.Popen] = []

    def hold(path: Path, read_only: bool) -> subprocess.Popen:
        code = ("import sys, alarmkit; j = alarmkit.Journal(sys.argv[1], read_only=sys.argv[2] == '1'); "
                "print('ready', flush=True); sys.stdin.read()")
        proc = subprocess.Popen([sys.executable, "-c", code, str(path), "1" if read_only else "0"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                env={**os.environ, "PYTHONPATH": str(ROOT)})
        procs.append(proc)
        assert proc.stdout.readline().strip() == "ready"
        return proc

    yield hold
    for proc in procs:
        proc.stdin.close()
        proc.wait(timeout=30)


@pytest.fixture
def immutable():
    """Make a file or folder read-only even for root (chattr +i), undone at the end."""
    made: list[Path] = []

    def make(path: Path) -> None:
        r = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
        if r.returncode:
            pytest.skip(f"chattr +i is not available here ({r.stderr.strip()}); a read-only path needs it as root")
        made.append(path)

    yield make
    for path in made:
        subprocess.run(["chattr", "-i", str(path)], check=True)


# -- demo --db: never destroy a user's file --------------------------------------------------

def test_demo_refuses_a_text_file_as_its_journal_and_leaves_it(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("precious notes\n")
    for extra in ([], ["--fresh"]):
        p = alarmkit("demo", "--db", str(notes), "--out", str(tmp_path / "r"), *extra)
        refused(p, "notes.txt' is not an alarmkit journal (not a DuckDB file: text); alarmkit leaves it alone")
        assert notes.read_text() == "precious notes\n"
    assert not (tmp_path / "r").exists()  # refused before any work: no folder made either


def test_demo_refuses_someone_elses_duckdb_file(tmp_path):
    other = tmp_path / "sales.duckdb"
    con = duckdb.connect(str(other))
    con.execute("CREATE TABLE orders (id INTEGER, total DOUBLE)")
    con.execute("INSERT INTO orders VALUES (1, 9.5)")
    con.close()
    for extra in ([], ["--fresh"]):
        p = alarmkit("demo", "--db", str(other), "--out", str(tmp_path / "r"), *extra)
        refused(p, "sales.duckdb' is a DuckDB file but not an alarmkit journal (its tables: ['orders'])")
    con = duckdb.connect(str(other), read_only=True)
    assert con.execute("SELECT table_name FROM information_schema.tables").fetchall() == [("orders",)]
    assert con.execute("SELECT * FROM orders").fetchall() == [(1, 9.5)]


def test_demo_db_that_is_a_folder(tmp_path):
    refused(alarmkit("demo", "--db", str(tmp_path), "--out", str(tmp_path / "r")),
            "is a folder; pass a file path, e.g. --db")


def test_demo_never_touches_a_journal_another_process_holds(tmp_path, holder):
    db = tmp_path / "j.duckdb"
    make_journal(db)
    before = digest(db)
    holder(db, read_only=False)
    for extra in ([], ["--fresh"]):
        p = alarmkit("demo", "--db", str(db), "--out", str(tmp_path / "r"), *extra)
        refused(p, "is held open by another process (PID")
    assert digest(db) == before


def test_demo_out_that_is_a_file(tmp_path):
    f = tmp_path / "reports"
    f.write_text("mine")
    refused(alarmkit("demo", "--db", str(tmp_path / "j.duckdb"), "--out", str(f)),
            "--out", "is a file, not a folder")
    assert f.read_text() == "mine" and not (tmp_path / "j.duckdb").exists()


def test_demo_out_never_replaces_a_file_it_did_not_write(tmp_path):
    out = tmp_path / "r"
    out.mkdir()
    mine = out / "lease-normal.html"
    mine.write_text("<html>my own page</html>")
    p = alarmkit("demo", "--db", str(tmp_path / "j.duckdb"), "--out", str(out))
    refused(p, "lease-normal.html' exists and is not an alarmkit report", "another --out folder")
    assert mine.read_text() == "<html>my own page</html>"
    assert not (tmp_path / "j.duckdb").exists()  # refused before the journal was made


def test_demo_out_in_a_read_only_folder(tmp_path, immutable):
    ro = tmp_path / "ro"
    ro.mkdir()
    immutable(ro)
    for out in (ro, ro / "sub"):
        refused(alarmkit("demo", "--db", str(tmp_path / "j.duckdb"), "--out", str(out)),
                "cannot write into folder", "(read-only or no permission)")
    assert not (tmp_path / "j.duckdb").exists()


@pytest.mark.slow
def test_demo_twice_appends_keeps_other_files_and_says_what_it_did(tmp_path, demo_run):
    # what `python3 dev.py demo` runs, twice in a row, then once with --fresh. The first run is the session's
    # shared demo (seed 1, the CLI's default: tests/conftest.py), copied here, so two demos run, not three.
    done, _results, printed = demo_run
    assert "to a new journal" in printed and "(runs 1-30)" in printed
    shutil.copyfile(done / "j.duckdb", tmp_path / "journal.duckdb")
    shutil.copytree(done / "reports", tmp_path / "reports")
    out = tmp_path / "reports"
    keep = out / "notes.md"
    keep.write_text("mine")
    con = duckdb.connect(str(tmp_path / "journal.duckdb"), read_only=True)
    first_events = con.execute("SELECT * FROM events ORDER BY run_id, seq").fetchall()
    con.close()
    report = out / "lease-normal.html"
    assert "<title>lease-normal · run " in report.read_text()

    # a process of its own, as the first: in this one another test may have registered the JS host's js-* scenarios
    second = alarmkit("demo", "--db", "journal.duckdb", "--out", "reports", cwd=tmp_path, timeout=600, real=True)
    assert second.returncode == 0, second.stderr[-3000:]
    # 25 scenarios and the run of the counterexample explore finds for each of the 4 anti-patterns that held:
    # 30 runs (one scenario journals a second run beside its own), 3170 events (2854 before the counterexamples)
    assert ("appended 3170 events from 30 runs (runs 31-60) of 25 scenarios to journal.duckdb, "
            "which held 30 runs before (--fresh empties it first)") in second.stdout
    con = duckdb.connect(str(tmp_path / "journal.duckdb"), read_only=True)
    assert con.execute("SELECT * FROM events WHERE run_id <= 30 ORDER BY run_id, seq").fetchall() == first_events
    assert con.execute("SELECT count(*), max(run_id) FROM runs").fetchone() == (60, 60)
    con.close()
    assert keep.read_text() == "mine"
    assert sorted(p.name for p in out.iterdir() if p.suffix != ".html") == ["notes.md", "plotly.min.js"]  # the one plotly.js the reports share

    third = alarmkit("demo", "--db", "journal.duckdb", "--out", "reports", "--fresh", cwd=tmp_path, timeout=600, real=True)
    assert third.returncode == 0, third.stderr[-3000:]
    assert "emptied journal.duckdb as --fresh asked (60 earlier runs dropped), then wrote 3170 events" in third.stdout
    con = duckdb.connect(str(tmp_path / "journal.duckdb"), read_only=True)
    assert con.execute("SELECT * FROM events ORDER BY run_id, seq").fetchall() == first_events
    con.close()
    assert keep.read_text() == "mine"


# -- run ---------------------------------------------------------------------------------------

def test_seed_outside_0_to_2_63_is_refused_before_anything_is_written(tmp_path):
    db = tmp_path / "j.duckdb"
    for seed in ("18446744073709551616", "9223372036854775808", "-5"):  # beyond 64 bits, BIGINT, negative
        refused(alarmkit("run", "lease-normal", "--seed", seed, "--db", str(db), real=True),
                f"seed must be in 0..2**63-1 (9223372036854775807), got {seed}")
        assert not db.exists()
    p = alarmkit("run", "lease-normal", "--seed", str(2**63 - 1), "--db", str(db))  # the largest is journaled
    assert p.returncode == 0, p.stderr
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT seed FROM runs").fetchall() == [(2**63 - 1,)]


@pytest.mark.parametrize("value, fragment", [
    ("ttls=[100,900", "--set ttls: '[100,900' is not valid JSON (Expecting ',' delimiter, column 9)"),
    ("ttls=abc", "scenario 'lease-normal': ttls=\"abc\" does not fit: parameter ttls takes list of int in 0..2**53 (default [300, 1500])"),
    ("ttls=[1.5]", "parameter ttls takes list of int"),
    ("ttls=[true]", "parameter ttls takes list of int"),
    ("ttls=[NaN]", "NaN is not a value alarmkit takes"),
    ("ttls=[100000000000000000000000]", "parameter ttls takes list of int in 0..2**53"),
])
def test_set_values_of_the_wrong_shape_or_bad_json(tmp_path, value, fragment):
    db = tmp_path / "j.duckdb"
    refused(alarmkit("run", "lease-normal", "--set", value, "--db", str(db)), fragment)
    assert not db.exists()


def test_an_oversized_downtime_is_refused_where_it_enters(tmp_path):
    refused(alarmkit("run", "lease-revival", "--set", "downtime_ms=100000000000000000000000"),
            "parameter downtime_ms takes int in 0..2**53 (default 5000)")
    plan = tmp_path / "plan.toml"
    plan.write_text("[[restarts]]\nat_ms = 1000\ndowntime_ms = 100000000000000000000\n")
    refused(alarmkit("explore", "lease-ledger", "--faults", str(plan), "--seeds", "1", "--workers", "1"),
            "plan.toml: fault plan field 'restarts[0].downtime_ms' must be an int >= 0 and <= 2**53")


def test_run_without_db_says_it_was_not_journaled():
    p = alarmkit("run", "lease-normal", "--seed", "3")
    assert p.returncode == 0, p.stderr
    verdict, first = p.stdout.splitlines()[:2]  # the verdict comes first, then what ran
    assert verdict.startswith("verdict: ")
    assert first.startswith("lease-normal (profile workerd, seed 3, not journaled: --db FILE keeps it): ")
    assert "None" not in first


def test_run_with_db_names_the_run_and_the_file(tmp_path):
    db = tmp_path / "j.duckdb"
    make_journal(db)
    p = alarmkit("run", "lease-normal", "--seed", "3", "--db", str(db))
    assert p.stdout.splitlines()[1].startswith(f"lease-normal (profile workerd, seed 3, run 2 in {db}): ")


# -- export: reads only, writes only its own report ---------------------------------------------

def test_export_out_that_is_a_folder(tmp_path):
    db = tmp_path / "j.duckdb"
    make_journal(db)
    refused(alarmkit("export", "--db", str(db), "--run", "1", "--out", str(tmp_path)),
            "--out", "is a folder; pass a file path")


def test_export_out_in_a_read_only_folder(tmp_path, immutable):
    db = tmp_path / "j.duckdb"
    make_journal(db)
    ro = tmp_path / "ro"
    ro.mkdir()
    immutable(ro)
    refused(alarmkit("export", "--db", str(db), "--run", "1", "--out", str(ro / "r.html")),
            "cannot write into folder", "(read-only or no permission)")


def test_export_never_replaces_a_file_alarmkit_did_not_write(tmp_path):
    db = tmp_path / "j.duckdb"
    make_journal(db)
    notes = tmp_path / "notes.html"
    notes.write_text("mine")
    refused(alarmkit("export", "--db", str(db), "--run", "1", "--out", str(notes)),
            "notes.html' exists and was not written by alarmkit")
    assert notes.read_text() == "mine"
    report = tmp_path / "r.html"
    for _ in range(2):  # its own report it replaces
        p = alarmkit("export", "--db", str(db), "--run", "1", "--out", str(report))
        assert p.returncode == 0, p.stderr


def test_export_reads_a_read_only_journal(tmp_path, immutable):
    db = tmp_path / "j.duckdb"
    make_journal(db)
    before = digest(db)
    immutable(db)
    p = alarmkit("export", "--db", str(db), "--run", "1", "--out", str(tmp_path / "r.html"), real=True)
    assert p.returncode == 0, p.stderr
    assert "lease-normal" in (tmp_path / "r.html").read_text()
    assert digest(db) == before


def test_export_beside_a_reader_and_refused_beside_a_writer(tmp_path, holder):
    db = tmp_path / "j.duckdb"
    make_journal(db)
    reader = holder(db, read_only=True)  # a notebook reading the journal
    p = alarmkit("export", "--db", str(db), "--run", "1", "--out", str(tmp_path / "r.html"), real=True)
    assert p.returncode == 0, p.stderr
    reader.stdin.close()
    reader.wait(timeout=30)
    holder(db, read_only=False)  # a notebook writing runs into it: DuckDB allows no reader beside
    refused(alarmkit("export", "--db", str(db), "--run", "1", "--out", str(tmp_path / "s.html")),
            "is held open by another process", "Journal(path, read_only=True)")


# -- fault plans and calibrate ----------------------------------------------------------------

def test_a_fault_plan_that_is_not_utf8(tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_bytes(b'[[crashes]]\ntask = "\xff"\n')
    refused(alarmkit("explore", "lease-ledger", "--faults", str(plan), "--seeds", "1"),
            "fault plan file", "plan.toml' is not UTF-8 text (byte 0xff at offset 20); save it as UTF-8")


def test_calibrate_unknown_probe_with_reference_is_exit_2():
    refused(alarmkit("calibrate", "--probe", "nosuch", "--reference"), "unknown probe(s) ['nosuch']; probes: [")


def test_calibrate_one_probe_with_reference_compares_only_it():
    p = alarmkit("calibrate", "--probe", "normal", "--reference", real=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout.rstrip().endswith("1/1 probes match: the simulator agrees with workerd")


def test_calibrate_refuses_to_overwrite_a_file_before_running_any_probe(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("mine")
    refused(alarmkit("calibrate", "--record-reference", str(notes)),
            "notes.txt' exists and was not written by alarmkit", "--record-reference")
    refused(alarmkit("calibrate", "--db", str(notes)), "notes.txt' is not an alarmkit journal")
    refused(alarmkit("calibrate", "--reference", "--out", str(notes)), "notes.txt' exists and was not written")
    assert notes.read_text() == "mine"


# -- the top level: user errors are one line; bugs keep their traceback -------------------------

def test_an_internal_error_keeps_its_traceback(monkeypatch):
    from alarmkit import cli
    from alarmkit.errors import InternalError

    def broken(args):
        raise InternalError("heap out of order")

    monkeypatch.setattr(cli, "cmd_list", broken)
    with pytest.raises(InternalError, match="^heap out of order$"):
        cli.main(["list"])

    def bug(args):
        raise TypeError("a bug")

    monkeypatch.setattr(cli, "cmd_list", bug)
    with pytest.raises(TypeError, match="^a bug$"):
        cli.main(["list"])


def test_an_os_error_is_one_line(monkeypatch, capsys):
    from alarmkit import cli

    def disk_full(args):
        raise OSError(28, "No space left on device", "/data/j.duckdb")

    monkeypatch.setattr(cli, "cmd_list", disk_full)
    assert cli.main(["list"]) == 2
    assert capsys.readouterr().err == ("alarmkit: error: No space left on device: '/data/j.duckdb'; "
                                       "check the path or pass another one\n")


@pytest.mark.parametrize("args, fragments", [
    (["--seeds", "99999999999999999999"], ["seeds must be a count of random runs in 0..10,000,000",
                                          "got 99,999,999,999,999,999,999", "explore in batches"]),
    (["--seeds", "10000000000"], ["got 10,000,000,000"]),  # list(range(...)) of it ate memory before
    (["--seeds", "1", "--workers", "99999999999999999999"], ["workers must be in 1..", "cores", "pass fewer"]),
])
def test_explore_refuses_runaway_counts_before_any_run(tmp_path, args, fragments):
    p = alarmkit("explore", "lease-ledger", *args, "--db", str(tmp_path / "j.duckdb"), cwd=tmp_path, timeout=120, real=True)
    refused(p, *fragments)
    assert not (tmp_path / "j.duckdb").exists()
