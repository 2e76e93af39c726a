"""Generated spill files for ``journal recover``: any events alarmkit could have spilled (details as
the journal's text or, as an earlier alarmkit wrote them, as JSON objects) read back into the journal
as they were; a spill changed by hand (a cell of another type, a cut line, a header of another shape)
is one AlarmkitError and the journal is left as it was, never another exception."""

from __future__ import annotations

import json

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

import alarmkit as ak
from alarmkit import Journal
from alarmkit.journal.command import recover

COLS = ["run_id", "seq", "t_ms", "namespace", "object_id", "kind", "scheduled_ms", "prev_scheduled_ms", "retry_count",
        "detail"]
HEAD = {"written_by": "alarmkit unwritten events", "journal": "j.duckdb", "columns": COLS,
        "runs": {"1": {"scenario": "s", "profile": "p", "seed": 0, "params": "{}", "faults": None}}}
_text = st.text(max_size=6).filter(lambda s: "\x00" not in s)  # DuckDB text holds no NUL
_detail = st.dictionaries(st.sampled_from(["cause", "late_ms", "name", "key"]),
                          st.one_of(st.integers(-2**53, 2**53), _text, st.none(), st.booleans()), max_size=3)
_ms = st.integers(0, 2**53)


@st.composite
def spilled(draw):
    n = draw(st.integers(1, 8))
    rows = []
    for seq in range(1, n + 1):
        detail = draw(st.one_of(st.none(), _detail))
        as_object = draw(st.booleans())  # an earlier alarmkit's spill held the detail as an object
        rows.append([1, seq, draw(_ms), draw(st.one_of(st.none(), _text)), draw(st.one_of(st.none(), _text)),
                     draw(st.sampled_from(["arm", "fire", "effect", "handler_ok", "call"])), draw(st.none() | _ms),
                     draw(st.none() | _ms), draw(st.none() | st.integers(0, 2**31 - 1)),
                     None if detail is None else detail if as_object else json.dumps(detail)])
    return rows


def _write(path, head, rows):
    path.write_text("\n".join(json.dumps(x) for x in [head, *rows]) + "\n")


@settings(max_examples=8)
@given(rows=spilled())
def test_what_alarmkit_spills_reads_back_as_it_was(tmp_path_factory, rows):
    tmp = tmp_path_factory.mktemp("rt")
    spill, db = tmp / "j.duckdb.unwritten-x.jsonl", tmp / "j.duckdb"
    _write(spill, HEAD, rows)
    done = recover(spill, db)
    assert done == {"events": len(rows), "skipped": 0, "runs_added": [1]}
    with Journal(db, read_only=True) as j:
        got = j.events(1)
    for r, (_, g) in zip(rows, got.iterrows()):
        assert [None if v is None or v is pd.NA else v for v in g[COLS[1:9]].astype(object)] == r[1:9]
        want = r[9] if r[9] is None or isinstance(r[9], str) else json.dumps(r[9])
        assert (None if g["detail"] is None else json.loads(g["detail"])) == (None if want is None else json.loads(want))
    assert recover(spill, db)["skipped"] == len(rows)  # again: nothing twice


_hostile = st.one_of(st.floats(allow_nan=False), st.text(max_size=4), st.integers(-2**70, 2**70), st.booleans(),
                     st.lists(st.integers(), max_size=2), st.just({"nested": [1, {"x": None}]}), st.none())


@settings(max_examples=15)
@given(rows=spilled(), line=st.integers(0, 100), col=st.integers(0, 9), value=_hostile,
       cut=st.one_of(st.none(), st.integers(1, 40)), head_change=st.sampled_from([None, "columns", "written_by", "runs"]))
def test_a_changed_spill_is_one_error_and_the_journal_is_left_as_it_was(tmp_path_factory, rows, line, col, value, cut,
                                                                       head_change):
    tmp = tmp_path_factory.mktemp("h")
    spill, db = tmp / "j.duckdb.unwritten-x.jsonl", tmp / "j.duckdb"
    with Journal(db) as j:
        ak.run_scenario("lease-normal", journal=j)
        before = len(j.events(1))
    head = {**HEAD, "runs": {"2": HEAD["runs"]["1"]}}  # a run the journal does not hold: the rows decide
    for r in rows:
        r[0] = 2
    if head_change == "columns":
        head["columns"] = COLS[:-1]
    elif head_change == "written_by":
        head["written_by"] = "someone"
    elif head_change == "runs":
        head["runs"] = {"1": {"scenario": "other", "seed": 9}, "2": [1]}
    rows[line % len(rows)][col] = value
    _write(spill, head, rows)
    if cut is not None:
        text = spill.read_text()
        spill.write_text(text[:len(text) - cut])
    try:
        done = recover(spill, db)
    except ak.AlarmkitError as err:
        assert "\n" not in str(err)
        with Journal(db, read_only=True) as j:
            assert len(j.events(1)) == before and list(j.runs()["run_id"]) == [1]
        return
    with Journal(db, read_only=True) as j:  # taken: every row it read is there, run 1 untouched
        into_1 = sum(1 for r in rows if r[0] == 1)  # a row whose run id was changed to the journal's own run
        assert before <= len(j.events(1)) <= before + into_1 and done["events"] + done["skipped"] == len(rows)
