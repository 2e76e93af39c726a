"""Trust on every surface (the core half): each defect found by the hostile pass, as a test that fails
on the code before the fix and passes after. Files never destroyed; claims counted, never assumed;
"nothing is lost" only when true; budgets on inputs that size work; errors instead of tracebacks;
the same exploration gives the same journal whatever the worker count."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from alarmkit import FaultPlan, Journal, run_scenario
from alarmkit.errors import AlarmkitError
from alarmkit.explore import explore, results_table
from clirun import run_main

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONIOENCODING": "utf-8"}


def _cli(*args: str, cwd: Path, timeout: int = 300, real: bool = False) -> subprocess.CompletedProcess:
    """``alarmkit ARGS`` in this process (tests/clirun.py); ``real``: in a subprocess, as a user runs it."""
    if not real:
        return run_main(*args, cwd=cwd, env=ENV)
    return subprocess.run([sys.executable, "-m", "alarmkit", *args], cwd=cwd, env=ENV, capture_output=True,
                          text=True, timeout=timeout)


def _one_error(proc: subprocess.CompletedProcess, pattern: str) -> str:
    import re

    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    lines = [l for l in proc.stderr.splitlines() if not l.startswith("usage:")]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert re.search(pattern, lines[0]), lines[0]
    return lines[0]


# -- 1. one way to write a file --------------------------------------------------------------------------


def test_demo_refuses_a_users_plotly_js_before_any_run_reaches_the_journal(tmp_path):
    out = tmp_path / "a"
    out.mkdir()
    pinned = "/**\n* plotly.js v1.58.5\n* Copyright 2012-2021, Plotly, Inc.\n*/\nvar pinned = 1;\n"
    (out / "plotly.min.js").write_text(pinned)
    proc = _cli("demo", "--out", str(out), "--db", str(tmp_path / "j.duckdb"), cwd=tmp_path, real=True)
    _one_error(proc, r"^alarmkit: error: '.*plotly\.min\.js' exists and was not written by alarmkit")
    assert (out / "plotly.min.js").read_text() == pinned  # the user's pinned copy, unchanged
    assert not (tmp_path / "j.duckdb").exists()  # refused before the journal was even made


def test_a_plotly_js_alarmkit_wrote_is_replaced_and_recognised(tmp_path):
    from alarmkit.viz.report import PLOTLY_TAG, check_plotly_js, is_plotly_js

    js = tmp_path / "plotly.min.js"
    js.write_text(PLOTLY_TAG + "/* an older plotly.js */")
    assert is_plotly_js(js) and check_plotly_js(tmp_path) == js
    js.write_text("/* an older plotly.js */" + PLOTLY_TAG)  # the tag must come first
    with pytest.raises(AlarmkitError, match="was not written by alarmkit"):
        check_plotly_js(tmp_path)


def test_calibrate_reference_out_ending_in_slash_writes_no_file_named_like_the_folder(tmp_path):
    proc = _cli("calibrate", "--reference", "--out", "adir/", cwd=tmp_path, real=True)
    _one_error(proc, r"^alarmkit: error: --out 'adir/' ends in '/', so it names a folder; pass a file path")
    assert list(tmp_path.iterdir()) == []


def test_a_journal_path_ending_in_slash_is_refused_not_made_a_file(tmp_path):
    with pytest.raises(AlarmkitError, match=r"--db '.*j\.duckdb/' ends in '/', so it names a folder"):
        Journal(str(tmp_path / "j.duckdb") + "/")
    assert list(tmp_path.iterdir()) == []


def test_fault_plan_save_never_replaces_a_hand_written_plan(tmp_path):
    mine = tmp_path / "mine.json"
    mine.write_text('{"handler_throws": [1]}  \n')  # a user's own file: not the form save() writes
    with pytest.raises(AlarmkitError, match=r"exists and was not written by alarmkit as fault plan"):
        FaultPlan(handler_throws=[2]).save(mine)
    assert mine.read_text() == '{"handler_throws": [1]}  \n'
    for name in ("saved.json", "saved.toml"):  # what save() wrote, it may replace
        FaultPlan(handler_throws=[1]).save(tmp_path / name)
        FaultPlan(handler_throws=[3]).save(tmp_path / name)
        assert FaultPlan.load(tmp_path / name) == FaultPlan(handler_throws=[3])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.json", "saved.json", "saved.toml"]  # no temp left


# -- 2. claims computed, never assumed --------------------------------------------------------------------


def test_explore_with_no_faults_applied_does_not_say_no_lost_work_under_these_faults(tmp_path):
    proc = _cli("explore", "lease-ledger", "--seeds", "0", "--crash-points", "none", "--workers", "1", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "under these faults" not in proc.stdout and "no lost work" not in proc.stdout
    assert "invariants checked over 1 run, no fault applied in any run: no violation found, but this says " \
           "nothing about faults" in proc.stdout


def test_the_all_clear_counts_invariants_runs_and_faults_applied():
    ex = explore("lease-ledger", seeds=6, crash_points=None, workers=1, progress=False,
                 invariants=["lost", "early_fire"])
    applied = int(ex.table["faults_injected"].sum())
    with_faults = int((ex.table["faults_injected"] > 0).sum())
    assert applied > 0 and ex.checked.runs == 7 and ex.checked.faults_applied == applied
    line = (f"2 invariants checked over 7 runs, {applied} faults applied (in {with_faults} runs)")
    assert ex.checked.counts() == line and line in ex.report()
    owed = int(ex.table["obligations"].sum())  # 6 leases a run: what lost work is checked against
    assert owed == 42 and ex.to_dict()["checked"] == {
        "invariants": ["lost", "early_fire"], "runs": 7, "runs_raised": 0, "faults_applied": applied,
        "runs_with_faults": with_faults, "obligations": owed}


def test_no_lost_work_is_said_only_when_obligations_were_checked():
    ex = explore("lease-exhaustion", seeds=3, workers=1, progress=False)  # declares no obligations
    assert ex.checked.obligations == 0 and not ex.counterexamples
    said = ex.checked.all_clear(False)
    assert "no lost work" not in said and "declares no obligations, so lost, early, late or dropped work was not" in said


# -- 3. "nothing is lost" only when true ------------------------------------------------------------------

_FAILING_WRITE = r'''
import sys, duckdb
from alarmkit import DurableObject, Journal, Simulation
from alarmkit.errors import JournalWriteError

class Obj(DurableObject):
    async def arm(self, t):
        await self.ctx.storage.set_alarm(t)
    async def alarm(self, info):
        await self.ctx.storage.set_alarm(self.ctx.now + 1_000) if self.ctx.now < 20_000 else None

class FullDisk:  # the writer thread's cursor, on a disk that just filled up
    def from_arrow(self, table):
        raise duckdb.IOException("No space left on device")

journal = Journal(sys.argv[1], batch_size=8)
sim = Simulation(journal=journal)
sim.call(sim.namespace("NS", Obj).get("a").arm(1_000))
sim.flush()
if sys.argv[2] == "break":
    journal._wcon = FullDisk()
sim.run(until=30_000)
try:
    sim.close()
except JournalWriteError as err:
    print(err)
journal._wcon = None
'''


def test_a_failed_write_spills_its_events_beside_the_journal_and_recover_reads_them_back(tmp_path):
    """The events survive the process (the message names the file) and `journal recover` writes them in."""
    import warnings

    script = tmp_path / "fail.py"
    script.write_text(_FAILING_WRITE)
    db = tmp_path / "j.duckdb"
    proc = subprocess.run([sys.executable, "-W", "ignore", str(script), str(db), "break"], cwd=tmp_path, env=ENV,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    whole = tmp_path / "whole.duckdb"  # the same run with nothing failing
    subprocess.run([sys.executable, str(script), str(whole), "ok"], cwd=tmp_path, env=ENV, check=True, timeout=120)
    spills = sorted(tmp_path.glob("j.duckdb.unwritten-*.jsonl"))
    assert len(spills) == 1, proc.stdout
    message = proc.stdout.strip()
    assert f"nothing is lost: " in message and f"and in {spills[0]} (`alarmkit journal recover {spills[0]} --db {db}`" \
        in message, message
    kept = sum(1 for _ in spills[0].open()) - 1
    assert kept > 0 and f"{kept:,} events are kept in journal.unwritten" in message
    with Journal(db, read_only=True) as j:
        before = j.events(1)
    rec = _cli("journal", "recover", str(spills[0]), "--db", str(db), cwd=tmp_path)
    assert rec.returncode == 0, rec.stderr
    assert rec.stdout.startswith(f"wrote {kept:,} events from {spills[0]} into {db} (0 already there)")
    with Journal(db, read_only=True) as j:
        after = j.events(1)
    # every event once, as the run that never failed journaled them
    assert after["seq"].tolist() == list(range(1, len(before) + kept + 1))
    with Journal(whole, read_only=True) as j:
        expected = j.events(1)
    cols = ["seq", "t_ms", "object_id", "kind", "scheduled_ms", "retry_count", "detail"]
    assert after[cols].values.tolist() == expected[cols].values.tolist() and len(before) < len(expected)
    again = _cli("journal", "recover", str(spills[0]), "--db", str(db), cwd=tmp_path)
    assert again.returncode == 0 and f"wrote 0 events from {spills[0]} into {db} ({kept:,} already there" in again.stdout


def test_an_in_memory_journal_does_not_say_nothing_is_lost():
    import duckdb

    from alarmkit import DurableObject, Simulation
    from alarmkit.errors import JournalWriteError

    class Obj(DurableObject):
        async def arm(self, t):
            await self.ctx.storage.set_alarm(t)

        async def alarm(self):  # workerd refuses set_alarm from a class without alarm()
            pass

    class FullDisk:
        def from_arrow(self, table):
            raise duckdb.IOException("No space left on device")

    journal = Journal()
    sim = Simulation(journal=journal)
    sim.call(sim.namespace("NS", Obj).get("a").arm(1_000))
    sim.flush()
    journal._wcon, cursor = FullDisk(), journal._wcon
    sim.run()
    sim.flush()  # the writer thread fails on this batch
    with pytest.raises(JournalWriteError) as info:
        sim.close()
    journal._wcon = cursor
    assert "nothing is lost" not in str(info.value)
    assert "in this process only (an in-memory journal has no file to spill them to)" in str(info.value)


def test_a_spill_that_cannot_be_written_says_the_events_are_lost_when_the_process_ends(tmp_path, monkeypatch):
    import duckdb

    from alarmkit.journal import _spill
    from alarmkit import DurableObject, Simulation
    from alarmkit.errors import JournalWriteError

    class Obj(DurableObject):
        async def arm(self, t):
            await self.ctx.storage.set_alarm(t)

        async def alarm(self):  # workerd refuses set_alarm from a class without alarm()
            pass

    class FullDisk:
        def from_arrow(self, table):
            raise duckdb.IOException("No space left on device")

    def no_space(*a, **kw):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_spill, "write_spill", no_space)
    journal = Journal(tmp_path / "j.duckdb")
    sim = Simulation(journal=journal)
    sim.call(sim.namespace("NS", Obj).get("a").arm(1_000))
    sim.flush()
    journal._wcon, cursor = FullDisk(), journal._wcon
    sim.run()
    sim.flush()  # the writer thread fails on this batch
    with pytest.raises(JournalWriteError, match=r"in this process only: spilling them beside the journal failed "
                                                r"\(OSError: .*No space left on device\), so they are lost when this "
                                                r"process ends"):
        sim.close()
    journal._wcon = cursor
    journal.close()


def test_journal_recover_refuses_a_file_that_is_not_a_spill(tmp_path):
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"a": 1}\n')
    proc = _cli("journal", "recover", str(notes), "--db", str(tmp_path / "j.duckdb"), cwd=tmp_path)
    _one_error(proc, r"^alarmkit: error: '.*notes\.jsonl' is not a spill file alarmkit wrote")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.jsonl"]


# -- 6. determinism and a killed exploration ---------------------------------------------------------------


def _runs(db: Path) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        runs = con.execute("SELECT run_id, seed, faults, complete, faults_applied FROM runs ORDER BY run_id").fetchall()
        events = con.execute("SELECT run_id, seq, t_ms, object_id, kind FROM events ORDER BY run_id, seq").fetchall()
    finally:
        con.close()
    return runs + events


def test_a_parallel_explore_gives_the_same_journal_row_for_row_whatever_the_worker_count(tmp_path):
    args = ["explore", "lease-ledger", "--seeds", "40", "--depth", "1", "--crash-points", "alarm"]
    for w in ("1", "2", "3"):
        proc = _cli(*args, "--workers", w, "--db", str(tmp_path / f"w{w}.duckdb"), cwd=tmp_path, real=True)
        assert proc.returncode == 0, proc.stderr
    one = _runs(tmp_path / "w1.duckdb")
    assert len(one) > 41 and _runs(tmp_path / "w2.duckdb") == one and _runs(tmp_path / "w3.duckdb") == one


def test_an_explore_killed_mid_run_leaves_its_folder_and_journal_agreeing_or_marked(tmp_path):
    db, out = tmp_path / "j.duckdb", tmp_path / "runs"
    proc = subprocess.Popen([sys.executable, "-m", "alarmkit", "explore", "lease-ledger", "--seeds", "100000",
                             "--crash-points", "none", "--workers", "2", "--db", str(db), "--out", str(out)],
                            cwd=tmp_path, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(list(out.glob("*/runs-01-*.parquet"))) < 3:
            time.sleep(0.2)
        assert len(list(out.glob("*/runs-01-*.parquet"))) >= 3, "the exploration never wrote three chunks"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # no chance to tidy up: what is left must still be honest
        proc.wait(timeout=30)
    folder = next(out.iterdir())
    progress = json.loads((folder / "progress.json").read_text())
    assert progress["state"] == "running" and "it was killed" in progress["note"]
    on_disk = sorted(p.name for p in folder.glob("runs-*.parquet"))
    assert set(progress["files"]) <= set(on_disk) and len(on_disk) <= len(progress["files"]) + 1
    with pytest.warns(RuntimeWarning, match=r"this exploration is 'running', not complete"):
        table = results_table(folder)
    journal = _runs(db)
    run_ids = [r[0] for r in journal if len(r) == 5 and isinstance(r[3], bool)]
    assert progress["journal_run_ids"] == [1, progress["runs"]]  # the listed runs are in the journal
    assert progress["runs"] <= len(run_ids) <= progress["runs"] + 64  # and at most one chunk more
    assert progress["runs"] <= len(table) <= progress["runs"] + 64


# -- 4. budgets on every input that sizes work --------------------------------------------------------------


@pytest.mark.parametrize("scenario, setting, name", [
    ("lease-ledger", "horizon_ms=9007199254740992", "horizon_ms"),
    ("guestbook-root", "entries=1000000000", "entries"),
    ("guestbook-facet", "entries=1000000000", "entries"),
    ("keepalive-celld-vs-workerd", "cells=100000000", "cells"),
    ("prod-set-early-throw-later", "periods=100000000", "periods"),
    ("prod-rearm-at-now", "ticks=1000000000", "ticks"),
    ("lease-lab", "leases=1000000000", "leases"),
])
def test_a_parameter_that_sizes_work_is_refused_before_the_run_with_its_estimate(tmp_path, scenario, setting, name):
    db = tmp_path / "j.duckdb"
    proc = _cli("run", scenario, "--set", setting, "--db", str(db), cwd=tmp_path, timeout=60)
    _one_error(proc, rf"^alarmkit: error: scenario '{scenario}': {name}=\d+ asks for (about [\d,]+|more than 10\^15) "
                     rf"work units, above the cap of 2,000,000 .*; lower {name}, or raise the cap: --max-work \d+ "
                     r"\(max_work= in Python\)$")
    assert not db.exists()  # refused before the journal was made


def test_the_work_cap_can_be_raised_and_every_built_in_default_fits_far_below_it():
    from alarmkit.scenarios import SCENARIOS, run_scenario
    from alarmkit.scenarios.work import MAX_WORK, estimate

    assert max(estimate(sc.params) for sc in SCENARIOS.values()) <= MAX_WORK / 100
    with pytest.raises(AlarmkitError, match=r"'lease-lab': leases=2000 asks for about 2,666,667 work units, above "
                                            r"the cap of 2,000,000"):
        run_scenario("lease-lab", leases=2000)
    with pytest.raises(AlarmkitError, match=r"asks for about 2,667 work units, above the cap of 1,000"):
        run_scenario("lease-lab", max_work=1_000)
    assert run_scenario("lease-lab", max_work=3_000, horizon_ms=400_000).sim.now == 400_000


def test_run_until_keeps_the_time_budget():
    from alarmkit import DurableObject, Simulation
    from alarmkit.errors import RunawayError

    class Loop(DurableObject):  # re-arms a second later for ever
        async def arm(self, t):
            await self.ctx.storage.set_alarm(t)

        async def alarm(self, info):
            await self.ctx.storage.set_alarm(info.scheduled_time + 1_000)

    sim = Simulation(time_limit_ms=10_000, fire_latency="exact")  # each fire 2 ms late: the budget is the subject
    sim.call(sim.namespace("NS", Loop).get("a").arm(1_000))
    with pytest.raises(RunawayError, match=r"^stopped at virtual time 9,002 ms: the next event, at 10,002 ms, is more "
                                           r"than time_limit_ms=10,000 after this run started at 0 ms; .*"
                                           r"run\(until=9,007,199,254,740,992\) asked for more than that"):
        sim.run(until=2**53)
    sim.run(until=15_000)  # within the budget of this run(): it goes on
    assert sim.now == 15_000
    idle = Simulation(time_limit_ms=10_000)
    idle.run(until=2**53)  # nothing to do on the way: the clock jumps there at once
    assert idle.now == 2**53


# -- 5. tracebacks: bad values are AlarmkitErrors naming the value; Ctrl-C says what stopped ----------------


@pytest.mark.parametrize("make, said", [
    (lambda: __import__("alarmkit").Simulation(faults="always"), r"^faults is a FaultPlan .* got 'always'"),
    (lambda: __import__("alarmkit").Simulation(journal="j.duckdb"), r"^journal is a Journal or None, got 'j\.duckdb'; open"),
    (lambda: __import__("alarmkit").Simulation(params=[1]), r"^params is a dict .* got list"),
    (lambda: __import__("alarmkit.scenarios").scenarios.run_scenario("lease-normal", faults="always"), r"got 'always'"),
    (lambda: Journal(5), r"^the journal path is a str or a Path, got int"),
    (lambda: Journal(b"j.duckdb"), r"^the journal path is a str or a Path, got bytes"),
    (lambda: FaultPlan.from_json("[" * 100_000), r"nested too deeply"),
])
def test_public_constructors_refuse_bad_values_by_name(make, said):
    with pytest.raises(AlarmkitError, match=said):
        make()


def test_a_journal_path_with_nul_is_refused_and_no_other_file_is_made(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(AlarmkitError, match=r"holds a NUL character"):
        Journal("a\x00b.duckdb")
    assert list(tmp_path.iterdir()) == []  # DuckDB would have made a file named "a"


def test_ctrl_c_prints_a_real_one_line_message_and_exits_130(monkeypatch, capsys):
    from alarmkit import cli

    def interrupted(args):  # a real SIGINT, as Ctrl-C sends it: Python raises a bare KeyboardInterrupt
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)
        raise AssertionError("SIGINT did not interrupt")

    parser = cli.build_parser()
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    parser._subparsers._group_actions[0].choices["list"].set_defaults(fn=interrupted)
    assert cli.main(["list"]) == 130
    err = capsys.readouterr().err
    assert err == "alarmkit: list interrupted (Ctrl-C); what it finished before is kept, the rest was not done\n"


def test_error_lines_carry_no_control_characters(tmp_path):
    evil = "x\x1b[2J\u202e\nnext.duckdb"
    proc = _cli("export", "--db", evil, "--run", "1", cwd=tmp_path, real=True)
    line = _one_error(proc, r"^alarmkit: error: ")
    assert not any(c in line for c in "\x1b\u202e\r") and "\\x1b" in line


def test_recover_refuses_a_changed_spill_before_writing_anything(tmp_path):
    """A spill whose rows are not the journal's (a run id of 1.5, a null kind, text for a time) or whose
    header names a run the journal cannot hold is refused whole: the journal keeps its bytes."""
    import json

    from alarmkit.journal import EVENT_COLUMNS
    from alarmkit.journal._spill import HEADER

    db = tmp_path / "j.duckdb"
    with Journal(db) as j:
        run_scenario("lease-normal", seed=0, journal=j)
    before = db.read_bytes()
    good = [1, 99, 5, "LEASES", "ledger", "effect", None, None, None, '{"name":"x"}']
    bad_rows = {"float run": [1.5, *good[1:]], "null kind": [*good[:5], None, *good[6:]],
                "text time": [1, 99, "soon", *good[3:]], "bool seq": [1, True, *good[2:]]}
    for why, row in bad_rows.items():
        spill = tmp_path / f"{why.replace(' ', '_')}.jsonl"
        spill.write_text(json.dumps({"written_by": HEADER, "columns": EVENT_COLUMNS, "journal": str(db), "runs": {}})
                         + "\n" + json.dumps(row) + "\n", encoding="utf-8")
        p = subprocess.run([sys.executable, "-m", "alarmkit", "journal", "recover", str(spill), "--db", str(db)],
                           capture_output=True, text=True, cwd=tmp_path)
        assert p.returncode == 2 and "is not an event alarmkit wrote" in p.stderr, (why, p.stderr)
        assert len(p.stderr.strip().splitlines()) == 1
        assert db.read_bytes() == before, why


@pytest.mark.parametrize("stop, said, exc", [("sys.exit(0)", "called sys.exit(0)", "SystemExit"),
                                             ("raise KeyboardInterrupt", "called raise KeyboardInterrupt", "KeyboardInterrupt")])
def test_a_worker_that_exits_or_raises_keyboard_interrupt_is_never_a_success_nor_a_ctrl_c(tmp_path, capsys, stop, said, exc):
    from alarmkit import cli

    (tmp_path / "w.py").write_text(
        "import sys\nfrom workers import DurableObject, WorkerEntrypoint, Response\n\n"
        "class Box(DurableObject):\n"
        "    async def fetch(self, request):\n"
        "        await self.ctx.storage.setAlarm(1000)\n"
        "        return Response('ok')\n\n"
        "    async def alarm(self, info=None):\n"
        f"        {stop}\n\n"
        "class Default(WorkerEntrypoint):\n"
        "    async def fetch(self, request):\n"
        "        return await self.env.BOX.getByName('a').fetch(request)\n")
    (tmp_path / "d.json").write_text('{"steps": [{"fetch": "http://x/"}], "until": 5000}')
    db = tmp_path / "j.duckdb"
    code = cli.main(["worker", str(tmp_path / "w.py"), "--bind", "BOX=Box", "--drive", str(tmp_path / "d.json"),
                     "--db", str(db)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err == (f"alarmkit: error: worker: the code it ran {said} (raised in the simulated code of object a (alarm) "
                   "at 1,001 ms); the run stopped there, unfinished (the object is journaled as crashed, what ran "
                   "before is kept). Let the handler return or raise an ordinary exception instead\n")
    crash = duckdb.connect(str(db), read_only=True).execute(
        "SELECT t_ms, detail FROM events WHERE kind = 'crash'").fetchall()
    assert [(t, json.loads(d)["reason"]) for t, d in crash] == [(1_001, f"interrupted: {exc} in alarm")]


def test_sys_exit_in_a_workers_entrypoint_is_an_error_outside_any_object(tmp_path, capsys):
    from alarmkit import cli

    (tmp_path / "w.py").write_text("import sys\nfrom workers import WorkerEntrypoint\n\nclass Default(WorkerEntrypoint):\n"
                                   "    async def fetch(self, request):\n        sys.exit(3)\n")
    (tmp_path / "d.json").write_text('{"steps": [{"fetch": "http://x/"}]}')
    assert cli.main(["worker", str(tmp_path / "w.py"), "--drive", str(tmp_path / "d.json")]) == 2
    assert capsys.readouterr().err == (
        "alarmkit: error: worker: the code it ran called sys.exit(3); the run stopped there, unfinished "
        "(outside any Durable Object, e.g. in the worker's entrypoint; what ran before is kept). Let the handler "
        "return or raise an ordinary exception instead\n")
