"""What an import keeps in memory per invocation and how it writes (an import
peaked at ~11x the file's size). Measured by benchmarks/bench_import_memory.py: 430 MB -> 340 MB
for a 50 MB trace. These tests hold the mechanisms that brought it down."""

from alarmkit import Journal
from alarmkit.realruns import fixture, importer
from alarmkit.realruns.reader import TraceFile
from alarmkit.realruns.traces import Invocation, Records, iter_records


def _invocations():
    acc = Records("tail.jsonl")
    for line, rec in iter_records(TraceFile(fixture("lease-exhaustion"))):
        acc.add(rec, line)
    return acc.out


def test_invocations_take_slots_and_share_their_repeated_strings():
    invs = _invocations()
    assert not hasattr(invs[0], "__dict__") and "logs" in Invocation.__slots__
    lines = [r for inv in invs for r in inv.logs]
    assert len(lines) > 10
    objs = {id(r["obj"]) for r in lines if r.get("obj") == "ledger-exhaust"}
    assert len(objs) == 1  # one string for the object's name, not one per log line
    keys = {id(k) for r in lines for k in r if k == "ev"}
    assert len(keys) == 1  # the keys are the module's constants, not the JSON decoder's fresh strings
    hexes = {id(inv.object_hex) for inv in invs if inv.object_hex}
    assert len(hexes) == 1


def test_an_import_writes_its_rows_a_chunk_at_a_time(tmp_path, monkeypatch):
    monkeypatch.setattr(importer, "WRITE_CHUNK", 7)
    sizes = []
    with Journal(tmp_path / "j.duckdb") as j:
        real = j.write_events
        monkeypatch.setattr(j, "write_events", lambda run_id, rows: (sizes.append(len(rows)), real(run_id, rows)))
        result = importer.import_file(fixture("lease-exhaustion"), j)
        assert len(j.events(result.run_id)) == len(result.rows) == 30
    assert sizes == [7, 7, 7, 7, 2]
