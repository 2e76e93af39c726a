"""``journal recover`` of a spill whose events were partly written already: each event written once
(a second recover writes nothing), and a spilled event that differs from the one held at the same run and
seq (in the journal, or earlier in the spill) refused by name, the journal left as it was: an event is
never overwritten and never dropped. Real DuckDB journals written by a simulation."""

from __future__ import annotations

import json
import shutil

import pytest

from alarmkit import DurableObject, Journal, Simulation
from alarmkit.cli import main
from alarmkit.errors import AlarmkitError
from alarmkit.journal import EVENT_COLUMNS
from alarmkit.journal._spill import write_spill
from alarmkit.journal.command import recover

KEEP = 6  # events of run 1 the partial journal still holds


class Obj(DurableObject):
    async def arm(self, t):
        await self.ctx.storage.set_alarm(t)

    async def alarm(self, info):
        if self.ctx.now() < 5_000:
            await self.ctx.storage.set_alarm(self.ctx.now() + 1_000)


def _rows(path):
    with Journal(path, read_only=True) as j:
        return [list(r) for r in j.con.execute(f"SELECT {', '.join(EVENT_COLUMNS)} FROM events ORDER BY run_id, seq")
                .fetchall()]


@pytest.fixture
def journals(tmp_path):
    """(whole, partial, every event of the whole run, its runs row): the partial journal holds the first
    KEEP events of the run, as a journal whose later batches failed does."""
    whole, part = tmp_path / "whole.duckdb", tmp_path / "part.duckdb"
    with Journal(whole) as journal:
        sim = Simulation(seed=3, journal=journal)
        sim.call(sim.namespace("NS", Obj).get("a").arm(1_000))
        sim.run()
        sim.close()
    shutil.copyfile(whole, part)
    with Journal(part) as j:
        j.con.execute(f"DELETE FROM {j._target()} WHERE run_id = 1 AND seq > {KEEP}")
        runs = {1: dict(zip(("scenario", "profile", "seed", "params", "faults"), j.con.execute(
            "SELECT scenario, profile, seed, params, faults FROM runs WHERE run_id = 1").fetchone()))}
    rows = _rows(whole)
    assert len(rows) == 18 and len(_rows(part)) == KEEP
    return whole, part, rows, runs


def _spill(tmp_path, part, rows, runs, name="part.duckdb.unwritten-x.jsonl"):
    path = tmp_path / name
    write_spill(path, part, EVENT_COLUMNS, [tuple(r) for r in rows], runs)
    return path


def test_a_partly_written_spill_writes_each_missing_event_once_and_again_nothing(tmp_path, journals):
    whole, part, rows, runs = journals
    # the whole run, the events the journal holds included, and three missing events spilled twice
    spill = _spill(tmp_path, part, rows + rows[KEEP:KEEP + 3], runs)
    assert recover(spill, part) == {"events": 18 - KEEP, "skipped": KEEP + 3, "runs_added": []}
    assert _rows(part) == _rows(whole)
    assert recover(spill, part) == {"events": 0, "skipped": 18 + 3, "runs_added": []}  # idempotent
    assert _rows(part) == _rows(whole)


def test_a_detail_spaced_otherwise_is_the_same_event(tmp_path, journals):
    whole, part, rows, runs = journals
    spaced = [list(r) for r in rows]
    for r in spaced:
        if r[-1] is not None:
            r[-1] = json.dumps(json.loads(r[-1]), indent=1)
    assert recover(_spill(tmp_path, part, spaced, runs), part)["events"] == 18 - KEEP
    assert len(_rows(part)) == 18


@pytest.mark.parametrize("column, value", [("t_ms", 999_999), ("kind", "evict"), ("detail", '{"cause":"other"}')])
def test_a_spilled_event_unlike_the_one_held_is_refused_by_name_and_nothing_is_written(tmp_path, journals, column,
                                                                                       value):
    whole, part, rows, runs = journals
    changed = [list(r) for r in rows]
    i = EVENT_COLUMNS.index(column)
    held = changed[2][i]
    changed[2][i] = value  # seq 3, which the journal holds
    before = _rows(part)
    with pytest.raises(AlarmkitError) as err:
        recover(_spill(tmp_path, part, changed, runs), part)
    text = str(err.value)
    assert text.startswith(f"run 1 seq 3 of the spill ({changed[2][5]} at {changed[2][2]:,} ms) is not the event "
                           f"'{part}' already holds at that run and seq ({rows[2][5]} at {rows[2][2]:,} ms; "
                           f"{column} {str(value)!r} vs {str(held)!r}): an event is never overwritten or dropped, "
                           "so nothing was written")
    assert "\n" not in text
    assert _rows(part) == before  # neither the held event overwritten nor the missing ones written


def test_two_different_events_at_one_seq_in_the_spill_are_refused(tmp_path, journals):
    whole, part, rows, runs = journals
    other = list(rows[KEEP + 1])
    other[2] += 1
    before = _rows(part)
    spill = _spill(tmp_path, part, rows + [other], runs)
    with pytest.raises(AlarmkitError, match=rf"^run 1 seq {KEEP + 2} of the spill \({other[5]} at {other[2]:,} ms\) "
                                            rf"is not the event the spill holds earlier at that run and seq"):
        recover(spill, part)
    assert _rows(part) == before


def test_the_command_says_how_many_were_there_and_refuses_a_conflict_in_one_line(tmp_path, journals, capsys):
    whole, part, rows, runs = journals
    spill = _spill(tmp_path, part, rows, runs)
    assert main(["journal", "recover", str(spill), "--db", str(part)]) == 0
    assert f"wrote {18 - KEEP} events from {spill} into {part} ({KEEP} already there)" in capsys.readouterr().out
    changed = [list(r) for r in rows]
    changed[0][2] = 7
    bad = _spill(tmp_path, part, changed, runs, name="bad.jsonl")
    assert main(["journal", "recover", str(bad), "--db", str(part)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and err.startswith("alarmkit: error: run 1 seq 1 of the spill")
    assert _rows(part) == _rows(whole)
