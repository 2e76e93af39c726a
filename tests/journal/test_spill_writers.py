"""Every way alarmkit spills events a journal could not write reads back with ``journal recover``
(an import's spill held each detail as a JSON object and recover refused it, "the file was
changed after alarmkit wrote it", leaving the journal with 0 runs). One test per writer of a spill:
a simulation's batch that failed its insert (Arrow), one that failed its conversion (the buffer's
plain rows), an import's rows (``EventRow`` values, detail a dict), an exploration's runs
(``add_runs``), and a spill written before this fix. Each is a round trip: the recovered events are
the events a journal that never failed holds."""

from __future__ import annotations

import json

import duckdb
import pytest

import alarmkit as ak
from alarmkit import DurableObject, Journal, Simulation
from alarmkit.errors import JournalWriteError
from alarmkit.journal import _journal
from alarmkit.journal._spill import read_spill
from alarmkit.journal.command import recover
from alarmkit.realruns import fixture, import_file

COLS = ["seq", "t_ms", "namespace", "object_id", "kind", "scheduled_ms", "prev_scheduled_ms", "retry_count", "detail"]


class Obj(DurableObject):
    async def arm(self, t):
        await self.ctx.storage.set_alarm(t)

    async def alarm(self, info):
        if self.ctx.now < 20_000:
            await self.ctx.storage.set_alarm(self.ctx.now + 1_000)


def _fail_conversion_once(monkeypatch):
    """The next batch cannot become Arrow (a MemoryError, say): the journal keeps its rows as given."""
    real, calls = _journal._table, []

    def table(*a, **kw):
        calls.append(1)
        if len(calls) == 1:
            raise MemoryError("no memory for this batch")
        return real(*a, **kw)

    monkeypatch.setattr(_journal, "_table", table)


def _simulate(path, batch_size=8):
    journal = Journal(path, batch_size=batch_size)
    sim = Simulation(journal=journal)
    sim.call(sim.namespace("NS", Obj).get("a").arm(1_000))
    return journal, sim


def _events(path, run_id=1):
    with Journal(path, read_only=True) as j:
        df = j.events(run_id)[COLS].astype(object)
        return df.where(df.notna(), None).values.tolist()


def _spill_of(tmp_path, name):
    spills = sorted(tmp_path.glob(f"{name}.unwritten-*.jsonl"))
    assert len(spills) == 1
    return spills[0]


def _whole_sim(tmp_path):
    journal, sim = _simulate(tmp_path / "whole.duckdb")
    sim.run(until=30_000)
    sim.close()
    journal.close()
    return _events(tmp_path / "whole.duckdb")


def test_a_simulation_batch_whose_insert_failed_round_trips(tmp_path):
    class FullDisk:
        def from_arrow(self, table):
            raise duckdb.IOException("No space left on device")

    journal, sim = _simulate(tmp_path / "j.duckdb")
    sim.flush()
    journal._wcon, cursor = FullDisk(), journal._wcon
    with pytest.warns(RuntimeWarning, match="the simulation carries on"):
        sim.run(until=30_000)
    with pytest.raises(JournalWriteError, match="nothing is lost"):
        sim.close()
    journal._wcon = cursor
    journal.close()
    spill = _spill_of(tmp_path, "j.duckdb")
    done = recover(spill, tmp_path / "j.duckdb")
    assert done["events"] > 0
    assert _events(tmp_path / "j.duckdb") == _whole_sim(tmp_path)


def test_a_simulation_batch_that_could_not_become_arrow_round_trips(tmp_path, monkeypatch):
    journal, sim = _simulate(tmp_path / "j.duckdb", batch_size=100_000)
    sim.run(until=30_000)
    _fail_conversion_once(monkeypatch)
    with pytest.raises(JournalWriteError, match="nothing is lost"):
        sim.close()
    monkeypatch.undo()
    journal.close()
    spill = _spill_of(tmp_path, "j.duckdb")
    head, rows = read_spill(spill)
    assert all(r[-1] is None or isinstance(r[-1], str) for r in rows)
    recover(spill, tmp_path / "j.duckdb")
    assert _events(tmp_path / "j.duckdb") == _whole_sim(tmp_path)


def test_an_import_whose_rows_could_not_be_written_round_trips(tmp_path, monkeypatch):
    """The issue's case: the import's rows are EventRow values with detail dicts."""
    clean = tmp_path / "clean.duckdb"
    with Journal(clean) as j:
        import_file(fixture("lease-exhaustion"), j)
    db = tmp_path / "j.duckdb"
    _fail_conversion_once(monkeypatch)
    with Journal(db) as j:
        with pytest.raises(JournalWriteError, match="nothing is lost") as info:
            import_file(fixture("lease-exhaustion"), j)
        assert len(j.runs()) == 0  # the import takes its half-written run out again
    monkeypatch.undo()
    spill = _spill_of(tmp_path, "j.duckdb")
    assert f"alarmkit journal recover {spill} --db {db}" in str(info.value)
    line = spill.read_text().splitlines()[1]
    assert isinstance(json.loads(line)[-1], str)  # the journal's detail text, not an object
    done = recover(spill, db)
    assert done["runs_added"] == [1] and done["skipped"] == 0
    with Journal(db, read_only=True) as j:
        runs = j.runs()
        assert list(runs["scenario"]) == ["import:tail.jsonl"]
    assert _events(db) == _events(clean)


def test_an_explorations_runs_that_could_not_be_written_round_trip(tmp_path, monkeypatch):
    from alarmkit.journal import EventRow

    events = [EventRow(1, 0, "N", "o", "arm", 500, None, None, {"direction": "new", "cause": "user"}),
              EventRow(2, 502, "N", "o", "fire", 500, None, 0, {"attempt": 1, "late_ms": 2})]
    runs = [{"scenario": "s", "profile": "p", "seed": i, "params": {}, "events": events} for i in range(2)]
    real_arrow = _journal._arrow
    monkeypatch.setattr(_journal, "_arrow", lambda *a: (_ for _ in ()).throw(TypeError("a value no column holds")))
    _fail_conversion_once(monkeypatch)
    db = tmp_path / "j.duckdb"
    with Journal(db) as j:
        with pytest.raises(JournalWriteError, match="nothing is lost"):
            j.add_runs(runs)
    monkeypatch.setattr(_journal, "_arrow", real_arrow)
    monkeypatch.undo()
    recover(_spill_of(tmp_path, "j.duckdb"), db)
    got = _events(db, 1)
    assert [r[:8] for r in got] == [list(e[:8]) for e in events]
    assert [json.loads(r[8]) for r in got] == [e.detail for e in events]


def test_a_spill_an_earlier_alarmkit_wrote_with_detail_objects_reads_back(tmp_path):
    db = tmp_path / "j.duckdb"
    with Journal(db) as j:
        j.start_run("s", "p", 0, {})
    spill = tmp_path / "j.duckdb.unwritten-20261204T000000Z-1.jsonl"
    head = {"written_by": "alarmkit unwritten events", "journal": str(db), "columns": ["run_id", *COLS], "runs": {}}
    rows = [[1, 1, 0, "N", "o", "arm", 500, None, None, {"direction": "new", "cause": "user"}],
            [1, 2, 502, "N", "o", "fire", 500, None, 0, {"attempt": 1, "late_ms": 2}]]
    spill.write_text("\n".join(json.dumps(x) for x in [head, *rows]) + "\n")
    assert recover(spill, db)["events"] == 2
    assert [json.loads(r[8]) for r in _events(db)] == [rows[0][-1], rows[1][-1]]
