"""The DuckDB journal: schema, batches, files on disk, a clear error when another process holds it."""

import json
import subprocess
import sys

import duckdb
import pytest

from alarmkit import AlarmkitError, DurableObject, Journal, JournalLocked, Simulation, run_scenario
from alarmkit.scenarios.lease import LeaseLab
from alarmkit.journal import EVENT_COLUMNS
from alarmkit.runtime.profiles import PROFILES

# these tests are about the journal, not fire lateness: simulations here take the exact fire latency
# (each fire 2 ms late), not the workerd profile's measured default (tests/runtime/test_latency_measured.py)
EXACT = PROFILES["workerd"].replace(fire_latency="exact")


def test_events_and_runs_tables_on_disk(tmp_path):
    path = tmp_path / "journal.duckdb"
    with Journal(path) as j:
        a = run_scenario("lease-normal", seed=5, journal=j, profile=EXACT)
        b = run_scenario("lease-exhaustion", seed=6, journal=j, profile=EXACT)
    con = duckdb.connect(str(path), read_only=True)
    cols = [c[0] for c in con.execute("DESCRIBE events").fetchall()]
    assert cols[:3] == ["run_id", "seq", "t_ms"]
    for c in ("object_id", "kind", "scheduled_ms", "prev_scheduled_ms", "retry_count", "detail"):
        assert c in cols
    runs = con.execute("SELECT run_id, scenario, profile, seed, params FROM runs ORDER BY run_id").fetchall()
    assert [(r[0], r[1], r[2], r[3]) for r in runs] == [
        (a.run_id, "lease-normal", "workerd", 5), (b.run_id, "lease-exhaustion", "workerd", 6)]
    assert json.loads(runs[0][4]) == {"ttls": [300, 1500]}
    n = con.execute("SELECT count(*) FROM events WHERE run_id = ?", [b.run_id]).fetchone()[0]
    assert n == b.event_count
    fires = con.execute(
        "SELECT list(retry_count ORDER BY seq) FROM events WHERE run_id = ? AND kind = 'fire'", [b.run_id]
    ).fetchone()[0]
    assert fires == [0, 1, 2, 3, 4, 5, 6]


def test_events_frame_has_json_detail_and_nullable_ints():
    with Journal() as j:
        r = run_scenario("lease-crash-after-effect", seed=1, journal=j, profile=EXACT)
        ev = j.events(r.run_id)
    assert str(ev["scheduled_ms"].dtype) == "Int64"
    assert ev["seq"].tolist() == list(range(1, len(ev) + 1))
    eff = ev[ev.kind == "effect"]
    assert [json.loads(d) for d in eff.detail] == [{"name": "revoke", "key": "lease-0"}] * 2


def test_events_are_written_in_batches_not_row_by_row(tmp_path, monkeypatch):
    calls = []
    j = Journal(tmp_path / "b.duckdb", batch_size=10)
    real = j.write_events
    monkeypatch.setattr(j, "write_events", lambda run_id, rows: (calls.append(len(rows)), real(run_id, rows)))
    r = run_scenario("lease-revival", seed=1, journal=j, profile=EXACT)
    assert calls[:-1] == [10] * (len(calls) - 1) and 0 < calls[-1] <= 10
    assert sum(calls) == r.event_count == len(j.events(r.run_id))
    j.close()


def _ledger(path, grant_ms):
    """A journal on disk, a simulation writing to it, one ledger granted lease "a"."""
    j = Journal(path)
    sim = Simulation(journal=j, scenario=path.stem, fire_latency="exact")
    ledger = sim.namespace("LEASES", LeaseLab).get("x")
    sim.call(ledger.grant("a", grant_ms))
    return j, sim, ledger


def test_user_code_failure_loses_nothing_already_recorded(tmp_path):
    path = tmp_path / "keep.duckdb"
    j, sim, ledger = _ledger(path, grant_ms=100)
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
    with pytest.raises(AlarmkitError, match=r"notes.duckdb' is not an alarmkit journal \(not a DuckDB file: text\); alarmkit leaves it alone"):
        Journal(bogus)
    assert bogus.read_text() == "hello, not a database\n" * 100


def test_unknown_run_lists_the_known_ones():
    with Journal() as j:
        run_scenario("lease-normal", journal=j, profile=EXACT)
        with pytest.raises(AlarmkitError, match=r"^no run 7 in the journal; runs here: \[1\]$"):
            j.run(7)


def test_buffered_rows_round_trip_through_arrow_and_duckdb(tmp_path):
    # the runtime buffers events as a flat list with host codes and pre-formatted JSON; what the
    # checkers read (sim.rows), the in-memory frame and the journal must be the same events
    sim = Simulation(seed=3, scenario="rt", fire_latency="exact")
    ledger = sim.namespace("LEASES", LeaseLab).get("x")
    sim.call(ledger.grant("a", 300))
    sim.log("deploy", None, None, None, None, {"version": "v<2>", "hosts": ("a", "b")})
    sim.run()
    rows = sim.rows
    kinds = [row[4] for row in rows]
    assert kinds[:2] == ["construct", "call"] and kinds.count("fire") == 1 and kinds.count("deploy") == 1
    fire = rows[kinds.index("fire")]
    assert fire[2:4] == ("LEASES", "x") and fire[8] == {"attempt": 1, "late_ms": fire[1] - fire[5]}
    assert rows[kinds.index("deploy")][2:4] == (None, None)
    j = Journal(tmp_path / "rt.duckdb")
    run_id = j.start_run("rt", "workerd", 3, {})
    j.write_events(run_id, sim.buffer.batch())
    ev = j.events(run_id)
    assert ev["seq"].tolist() == [row[0] for row in rows] == list(range(1, len(rows) + 1))
    assert ev["object_id"].tolist()[:2] == ["x", "x"] and ev["kind"].tolist() == kinds
    assert ev["scheduled_ms"].tolist()[kinds.index("fire")] == fire[5]
    details = [None if d is None else json.loads(d) for d in ev["detail"]]  # missing detail is None
    assert details[kinds.index("fire")] == fire[8]
    assert details[kinds.index("deploy")] == {"version": "v<2>", "hosts": ["a", "b"]}
    mem = sim.events()  # without a journal: the same frame, from the buffer
    assert mem["kind"].tolist() == kinds and mem["detail"].tolist() == ev["detail"].tolist()
    assert str(mem["object_id"].dtype) == str(ev["object_id"].dtype) == "object"
    j.close()


def test_seq_continues_across_flushes(tmp_path):
    j = Journal(tmp_path / "seq.duckdb", batch_size=7)
    r = run_scenario("lease-normal", seed=1, journal=j, profile=EXACT)
    seqs = j.events(r.run_id)["seq"].tolist()
    assert seqs == list(range(1, r.event_count + 1)) and r.event_count > 7
    j.close()


def test_a_failed_background_write_is_a_clear_error_and_keeps_every_event(tmp_path):
    path = tmp_path / "w.duckdb"
    j, sim, _ = _ledger(path, grant_ms=300)
    sim.flush()
    first = len(j.events(sim.run_id))
    cursor = j._wcon

    class FullDisk:  # the writer thread's cursor, on a disk that just filled up
        def from_arrow(self, table):
            raise duckdb.IOException("No space left on device")

    j._wcon = FullDisk()
    sim.run()
    sim.flush()  # handed to the writer thread, which fails
    sim.log("deploy", None, None, None, None, {"version": "v2"})
    with pytest.raises(AlarmkitError, match=rf"^journal {path}: a batch of \d+ events could not be written "
                                            r"\(.*No space left on device\); earlier batches are in"):
        sim.flush()  # the next batch finds the failure: it is kept too, not dropped
    j._wcon = cursor
    assert len(j.events(sim.run_id)) == first > 0  # the reader works again; nothing earlier was lost
    lost, later = j.unwritten
    assert lost.column("kind").to_pylist()[:1] == ["fire"] and lost.column("seq").to_pylist()[0] == first + 1
    # kept as the journal would hold it: the packed fire rendered, no extra column
    assert lost.column_names == EVENT_COLUMNS and lost.column("detail")[0].as_py().startswith('{"attempt":')
    assert later.column("kind").to_pylist() == ["deploy"]
    assert later.column("seq").to_pylist() == [lost.column("seq").to_pylist()[-1] + 1]
    j.close()


def test_batch_size_must_be_a_positive_int(tmp_path):
    with pytest.raises(AlarmkitError, match=r"batch_size must be a positive int of events, got 0"):
        Journal(tmp_path / "b.duckdb", batch_size=0)


def test_arm_direction_and_detail_text():
    from alarmkit.journal._events import arm_detail, direction

    assert [direction(None, 5), direction(5, None), direction(5, 3), direction(5, 9), direction(5, 5)] == [
        "new", "new", "earlier", "later", "same"]
    text = arm_detail(5, 3, "retry")
    assert json.loads(text) == {"direction": "earlier", "cause": "retry"}
    assert arm_detail(9, 1, "retry") is text  # made once per (direction, cause), then shared
    assert json.loads(arm_detail(None, 7, "user")) == {"direction": "new", "cause": "user"}


def test_buffer_flushes_at_batch_size_during_a_run(tmp_path):
    """The hot path checks the batch size once per delivery: every batch but the last is full-ish."""
    from alarmkit.journal._events import WIDTH

    class Rearm(DurableObject):
        async def alarm(self, info):
            if self.ctx.now() < 20_000:
                self.ctx.storage.set_alarm(self.ctx.now() + 100)

        async def start(self):
            self.ctx.storage.set_alarm(100)

    j = Journal(tmp_path / "j.duckdb", batch_size=50)
    sizes = []
    real = j.write_events
    j.write_events = lambda run_id, rows: (sizes.append(len(rows)), real(run_id, rows))
    sim = Simulation(journal=j, fire_latency="exact")
    sim.call(sim.namespace("R", Rearm).get("a").start())
    sim.run()
    assert len(sim.buffer.data) // WIDTH < 50  # what is left was not flushed yet
    sim.close()
    assert all(50 <= n < 53 for n in sizes[:-1]) and 0 < sizes[-1] <= 52, sizes
    # construct, call, arm; then fires at 102, 204, ... (2 ms latency), re-arming while now < 20,000:
    # 197 fires of fire + arm + handler_ok, the last without its arm; the idle eviction at the end
    assert sum(sizes) == int(j.sql("SELECT count(*) AS n FROM events")["n"][0]) == 3 + 3 * 197 - 1 + 1
    assert j.sql("SELECT max(t_ms) AS t FROM events WHERE kind = 'fire'")["t"][0] == 102 * 197
    j.close()


def test_a_read_only_journal_reads_and_refuses_to_write(tmp_path):
    path = tmp_path / "j.duckdb"
    with Journal(path) as j:
        run_scenario("lease-normal", seed=5, journal=j, profile=EXACT)
    before = path.read_bytes()
    with Journal(path, read_only=True) as r:
        assert list(r.runs()["scenario"]) == ["lease-normal"]
        with pytest.raises(AlarmkitError, match=r"^journal .*j.duckdb was opened read-only, so it cannot start a run;"):
            run_scenario("lease-normal", seed=5, journal=r, profile=EXACT)
        with pytest.raises(AlarmkitError, match=r"^journal .*was opened read-only, so it cannot clear;"):
            r.clear()
    assert path.read_bytes() == before
    with pytest.raises(AlarmkitError, match=r"^no journal file '.*missing.duckdb'; write one with"):
        Journal(tmp_path / "missing.duckdb", read_only=True)
    assert not (tmp_path / "missing.duckdb").exists()
    with pytest.raises(AlarmkitError, match=r"^read_only=True needs a journal file"):
        Journal(read_only=True)


def test_a_duckdb_file_with_other_tables_is_refused_and_left_as_it_was(tmp_path):
    path = tmp_path / "sales.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE runs (id INTEGER)")  # a 'runs' table that is not alarmkit's
    con.close()
    with pytest.raises(AlarmkitError, match=r"sales.duckdb' is a DuckDB file but not an alarmkit journal \(its tables: \['runs'\]\)"):
        Journal(path)
    con = duckdb.connect(str(path), read_only=True)
    assert con.execute("SELECT table_name FROM information_schema.tables").fetchall() == [("runs",)]
    con.close()
    with pytest.raises(AlarmkitError, match=r"^the journal path is empty"):
        Journal("")
    with pytest.raises(AlarmkitError, match=r"^journal path '.*' is a folder; pass a file path"):
        Journal(tmp_path)


def test_clear_drops_runs_and_events_and_keeps_other_tables(tmp_path):
    path = tmp_path / "j.duckdb"
    with Journal(path) as j:
        run_scenario("lease-normal", seed=5, journal=j, profile=EXACT)
        run_scenario("lease-normal", seed=6, journal=j, profile=EXACT)
        j.con.execute("CREATE TABLE notes (text TEXT)")
        j.con.execute("INSERT INTO notes VALUES ('mine')")
        assert j.clear() == 2
        assert j.runs().empty and j.events().empty
        assert run_scenario("lease-normal", seed=5, journal=j, profile=EXACT).run_id == 1
    con = duckdb.connect(str(path), read_only=True)
    assert con.execute("SELECT * FROM notes").fetchall() == [("mine",)]


def _finished(seed: int, events: list) -> dict:
    return {"scenario": "s", "profile": "workerd", "seed": seed, "params": {"n": seed}, "faults": {"crashes": []},
            "events": events, "complete": seed != 2, "applied": {"crashes[0]": seed}, "unapplied": None}


def test_add_runs_writes_a_chunk_as_start_write_end_would_run_by_run(tmp_path):
    from alarmkit import EventRow

    rows = lambda k: [EventRow(s, 10 * s, "NS", f"o{k}", "fire", 10 * s, None, 0, {"attempt": s}) for s in (1, 2, 3)]
    runs = [_finished(seed, rows(seed)) for seed in (1, 2, 3)] + [_finished(4, [])]
    cols = "scenario, profile, seed, params, faults, complete, faults_applied, faults_unapplied"
    with Journal(tmp_path / "chunk.duckdb") as a, Journal(tmp_path / "each.duckdb") as b:
        a.start_run("before", "workerd", 0, {})
        assert a.add_runs(runs) == [2, 3, 4, 5]  # numbered after the runs already there
        b.start_run("before", "workerd", 0, {})
        for r in runs:
            i = b.start_run(r["scenario"], r["profile"], r["seed"], r["params"], r["faults"])
            b.write_events(i, r["events"])
            b.end_run(i, r["complete"], r["applied"], r["unapplied"])
        assert a.sql(f"SELECT run_id, {cols} FROM runs ORDER BY run_id").equals(
            b.sql(f"SELECT run_id, {cols} FROM runs ORDER BY run_id"))
        assert a.events().equals(b.events()) and len(a.events()) == 9
        assert a.sql("SELECT count(*) AS n FROM runs WHERE ended_at IS NULL")["n"][0] == 1  # only "before"


def test_add_runs_with_a_bad_value_falls_back_to_run_by_run_and_keeps_the_events(tmp_path):
    from alarmkit import EventRow

    good = [EventRow(1, 10, "NS", "o", "fire", 10, None, 0, None)]
    bad = [EventRow(1, 2**70, "NS", "o", "fire", 10, None, 0, None)]  # no BIGINT holds this time
    with Journal(tmp_path / "j.duckdb") as j:
        with pytest.raises(AlarmkitError, match="could not be converted"):
            j.add_runs([_finished(1, good), _finished(2, bad)])
        assert j.sql("SELECT seed FROM runs ORDER BY run_id")["seed"].tolist() == [1, 2]  # as run by run: run 1 whole
        assert len(j.events(1)) == 1 and j.events(2).empty
        assert [r[2] for r in j.unwritten_rows()] == [2**70]  # the bad run's event, kept


@pytest.mark.parametrize("name", ["lease-exhaustion", "prod-rearm-at-now"])  # retries (late, attempts > 1); next_ms both ways
def test_packed_hot_events_read_the_same_every_way_out(tmp_path, name):
    """fire and handler_ok are buffered packed (their number in prev_scheduled_ms, no text: _events);
    the journal file, sim.rows, sim.events() and a kept batch's plain rows all show the same event."""
    from alarmkit import run_scenario

    journal = Journal(tmp_path / "j.duckdb")
    r = run_scenario(name, seed=3, journal=journal)
    written = journal.events(r.run_id)
    alone = run_scenario(name, seed=3)  # no journal: read from the buffer
    rows, frame = alone.sim.rows, alone.sim.events()
    plain = alone.sim.buffer.batch().plain(None)
    fires = written[written.kind == "fire"]
    assert len(fires) > 3 and fires.prev_scheduled_ms.isna().all()
    for _, e in fires.iterrows():
        late = e.t_ms - e.scheduled_ms
        assert e.detail.startswith('{"attempt":') and e.detail.endswith(f',"late_ms":{late}}}')
    assert fires.detail.str.contains('"attempt":1,').sum() < len(fires)  # later attempts too
    oks = written[written.kind == "handler_ok"].detail
    assert oks.str.match(r'^\{"next_ms":(null|\d+)\}$').all()
    if name == "prod-rearm-at-now":
        assert set(oks) >= {'{"next_ms":null}', '{"next_ms":1000}'}
    cols = ["seq", "t_ms", "namespace", "object_id", "kind", "scheduled_ms", "prev_scheduled_ms", "retry_count", "detail"]
    assert written[cols].astype(object).where(written[cols].notna(), None).values.tolist() == \
        frame[cols].astype(object).where(frame[cols].notna(), None).values.tolist()
    assert [list(p[1:]) for p in plain] == frame[cols].astype(object).where(frame[cols].notna(), None).values.tolist()
    assert [(x.kind, x.prev_scheduled_ms, x.detail) for x in rows] == \
        [(p[5], p[7], None if p[9] is None else json.loads(p[9])) for p in plain]
    journal.close()
