"""``journal recover`` of a big spill (a journal that could not write for the rest of a long run spills
every event after the failure): the events go in as one Arrow insert, as the journal writes a batch, not a
prepared statement per event (``executemany``: 75 s for 20,000 events on this machine, a 400,000-event
spill ran past 4 minutes; 8 s now). Generated spills of several sizes; each event written once, a second
recover writes nothing."""

from __future__ import annotations

import json
import time

import pytest

from alarmkit import Journal
from alarmkit.journal import EVENT_COLUMNS
from alarmkit.journal.command import recover

HEAD = {"written_by": "alarmkit unwritten events", "journal": "j.duckdb", "columns": EVENT_COLUMNS,
        "runs": {"1": {"scenario": "s", "profile": "p", "seed": 0, "params": "{}", "faults": None}}}


class Counting:
    """A journal's connection that counts what it is asked to run row by row."""

    def __init__(self, con, seen):
        self._con, self._seen = con, seen

    def executemany(self, sql, rows):
        self._seen.append(len(rows))
        return self._con.executemany(sql, rows)

    def __getattr__(self, name):
        return getattr(self._con, name)


def _spill(path, n):
    with open(path, "w") as f:
        f.write(json.dumps(HEAD) + "\n")
        for seq in range(1, n + 1):
            f.write(json.dumps([1, seq, seq * 7, "NS", "o", "note", None if seq % 3 else seq * 9, None, seq % 5 or None,
                                json.dumps({"i": seq, "t": "é\u2028" * (seq % 4)})]) + "\n")


@pytest.mark.parametrize("n", [1, 17, 5_000, 100_000])
def test_a_spill_goes_in_as_one_insert_each_event_once(tmp_path, monkeypatch, n):
    spill, db = tmp_path / "j.duckdb.unwritten-x.jsonl", tmp_path / "j.duckdb"
    _spill(spill, n)
    seen: list[int] = []
    real = Journal.con
    monkeypatch.setattr(Journal, "con", property(lambda self: Counting(real.fget(self), seen)))
    start = time.perf_counter()
    assert recover(spill, db) == {"events": n, "skipped": 0, "runs_added": [1]}
    took = time.perf_counter() - start
    assert seen == []  # no statement per event
    assert recover(spill, db) == {"events": 0, "skipped": n, "runs_added": []}
    monkeypatch.undo()
    with Journal(db, read_only=True) as j:
        got = j.con.execute("SELECT count(*), count(DISTINCT seq), min(seq), max(seq), sum(t_ms), "
                            "count(scheduled_ms), count(retry_count) FROM events WHERE run_id = 1").fetchone()
        last = j.con.execute(f"SELECT {', '.join(EVENT_COLUMNS)} FROM events WHERE seq = ?", [n]).fetchone()
    assert got == (n, n, 1, n, 7 * n * (n + 1) // 2, n // 3, n - n // 5)
    with open(spill) as f:
        assert list(last) == json.loads(f.readlines()[-1])
    assert took < 120  # 100,000 events: ~2 s here (a statement each: minutes)
