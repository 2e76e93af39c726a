"""One alarmkit error, naming the way out, where ak.diff (and a run's events) let a raw one out:
a closed journal (duckdb.ConnectionException), a lone surrogate in an id
(UnicodeEncodeError), a float retry count (TypeError)."""

import json

import pandas as pd
import pytest

import alarmkit as ak
from alarmkit import Journal

COLS = ["seq", "t_ms", "namespace", "object_id", "kind", "scheduled_ms", "prev_scheduled_ms", "retry_count", "detail"]


def _frame(obj="o", rc=0):
    df = pd.DataFrame([(1, 0, "N", "o", "arm", 500, None, None, json.dumps({"cause": "user"})),
                       (2, 502, "N", "o", "fire", 500, None, 0, json.dumps({"late_ms": 2}))], columns=COLS)
    df["object_id"] = df["object_id"].astype(object)
    df["retry_count"] = df["retry_count"].astype(object)
    df.loc[1, "object_id"], df.loc[1, "retry_count"] = obj, rc
    return df


def test_a_run_of_a_closed_journal_is_one_error_naming_how_to_read_it_again(tmp_path):
    path = tmp_path / "j.duckdb"
    with Journal(path) as j:
        a = ak.run_scenario("lease-ledger", seed=1, journal=j)
        b = ak.run_scenario("lease-ledger", seed=2, journal=j)
    again = f"open it again to read it: Journal({str(path)!r}, read_only=True)"
    with pytest.raises(ak.JournalClosed) as info:
        ak.diff(a.run_id, b.run_id, journal=j)
    assert str(info.value) == f"journal {path} is closed (its `with` block ended or close() was called); {again}"
    with pytest.raises(ak.JournalClosed, match="is closed"):
        ak.diff((j, 1), (j, 2))
    with pytest.raises(ak.JournalClosed, match="is closed"):
        a.events  # noqa: B018 - RunResult.events after the journal's with block
    with pytest.raises(ak.JournalClosed, match="is closed"):
        j.start_run("s", "p", 0, {})
    j.close()  # closing twice is harmless
    with Journal(path, read_only=True) as r:  # the way out works
        assert ak.diff((r, 1), (r, 2)).names == ("A", "B")


def test_an_in_memory_journal_closed_says_its_events_are_gone():
    j = Journal()
    run = ak.run_scenario("lease-ledger", seed=1, journal=j)
    j.close()
    with pytest.raises(ak.JournalClosed, match="an in-memory journal is closed .*gone with it"):
        run.events  # noqa: B018


def test_a_lone_surrogate_in_an_id_is_refused_naming_where_it_sits():
    with pytest.raises(ak.InvalidValue) as info:
        ak.diff(_frame(), _frame(obj="o\ud800"))
    assert str(info.value) == ("object_id of event seq 2 holds '\\ud800' (a lone surrogate), which no journal text can; "
                               "these events did not come from a journal: fix the value or pass Journal.events(run_id)")


@pytest.mark.parametrize("rc, text", [(1.5, "1.5"), ("2", "'2'"), (float("inf"), "inf")])
def test_a_retry_count_that_is_not_a_whole_number_is_refused_naming_it(rc, text):
    with pytest.raises(ak.InvalidValue) as info:
        ak.diff(_frame(), _frame(rc=rc))
    assert str(info.value) == (f"retry_count of event seq 2 is {text}, not a whole number; times, seq and retry_count "
                               "are ints within ±2**53 (pass events as Journal.events(run_id) gives them)")
    assert ak.diff(_frame(), _frame(rc=0.0)).same  # 0.0: a column pandas made float, the same count
