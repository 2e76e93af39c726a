"""The DuckDB journal: schema, batches, files on disk, a clear error when another process holds it."""

import json
import subprocess
import sys

import duckdb
import pytest

from alarmkit import AlarmkitError, Journal, JournalLocked, Simulation, run_scenario
from alarmkit.scenarios.lease import LeaseLab


def test_events_and_runs_tables_on_disk(tmp_path):
    path = tmp_path / "journal.duckdb"
    with Journal(path) as j:
        a = run_scenario("lease-normal", seed=5, journal=j)
        b = run_scenario("lease-exhaustion", seed=6, journal=j)
    con = duckdb.connect(str(path), read_only=True)
    cols = [c[0] for c in con.execute("DESCRIBE events").fetchall()]
    assert cols[:3] == ["run_id", "seq", "t_ms"]
    for c in ("object_id", "kind", "scheduled_ms", "prev_scheduled_ms", "retry_count", "detail"):
        assert c in cols
    runs = con.execute("SELECT run_id, scenario, profile, seed, params FROM runs ORDER BY run_id").fetchall()
    assert [(r[0], r[1], r[2], r[3]) for r in runs] == [
        (a["run_id"], "lease-normal", "workerd", 5), (b["run_id"], "lease-exhaustion", "workerd", 6)]
    assert json.loads(runs[0][4]) == {"ttls": [300, 1500]}
    n = con.execute("SELECT count(*) FROM events WHERE run_id = ?", [b["run_id"]]).fetchone()[0]
    assert n == b["events"]
    fires = con.execute(
        "SELECT list(retry_count ORDER BY seq) FROM events WHERE run_id = ? AND kind = 'fire'", [b["run_id"]]
    ).fetchone()[0]
    assert fires == [0, 1, 2, 3, 4, 5, 6]


def test_events_frame_has_json_detail_and_nullable_ints():
    with Journal() as j:
        r = run_scenario("lease-crash-after-effect", seed=1, journal=j)
        ev = j.events(r["run_id"])
    assert str(ev["scheduled_ms"].dtype) == "Int64"
    assert ev["seq"].tolist() == list(range(1, len(ev) + 1))
    eff = ev[ev.kind == "effect"]
    assert [json.loads(d) for d in eff.detail] == [{"name": "revoke", "key": "lease-0"}] * 2


def test_events_are_written_in_batches_not_row_by_row(tmp_path, monkeypatch):
    calls = []
    j = Journal(tmp_path / "b.duckdb", batch_size=10)
    real = j.write_events
    monkeypatch.setattr(j, "write_events", lambda run_id, rows: (calls.append(len(rows)), real(run_id, rows)))
    r = run_scenario("lease-revival", seed=1, journal=j)
    assert calls[:-1] == [10] * (len(calls) - 1) and 0 < calls[-1] <= 10
    assert sum(calls) == r["events"] == len(j.events(r["run_id"]))
    j.close()


def test_user_code_failure_loses_nothing_already_recorded(tmp_path):
    path = tmp_path / "keep.duckdb"
    j = Journal(path)
    sim = Simulation(journal=j, scenario="misbehaving")
    ledger = sim.namespace("LEASES", LeaseLab).get("x")
    sim.call(ledger.grant("a", 100))
    with pytest.raises(TypeError):
        sim.call(ledger.grant("b", "soon"))  # ctx.now() + "soon": the user's TypeError
    sim.run()
    sim.close()
    j.close()
    with Journal(path) as again:
        kinds = again.events(sim.run_id)["kind"].tolist()
    assert kinds.count("call") == 2 and "fire" in kinds and "effect" in kinds


HOLDER = """
import duckdb, sys, time
con = duckdb.connect(sys.argv[1])
print("ready", flush=True)
time.sleep(30)
"""


def test_a_journal_held_by_another_process_names_the_file_and_the_way_out(tmp_path):
    path = tmp_path / "held.duckdb"
    Journal(path).close()
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(JournalLocked) as err:
            Journal(path)
        msg = str(err.value)
        assert str(path) in msg and "another process" in msg and "--db" in msg
    finally:
        holder.kill()
        holder.wait(timeout=10)


def test_a_file_that_is_not_duckdb_is_a_clear_error(tmp_path):
    bogus = tmp_path / "notes.duckdb"
    bogus.write_text("hello, not a database\n" * 100)
    with pytest.raises(AlarmkitError, match="not a DuckDB journal|cannot open journal"):
        Journal(bogus)


def test_unknown_run_lists_the_known_ones():
    with Journal() as j:
        run_scenario("lease-normal", journal=j)
        with pytest.raises(AlarmkitError, match=r"^no run 7 in the journal; runs here: \[1\]$"):
            j.run(7)
