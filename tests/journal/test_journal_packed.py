"""The journal's two layouts read the same: packed rows behind the ``events`` view, and the rendered
``events`` table of journals written before it (tests/data/journal-rendered.duckdb, written by the code
before the packed layout: lease-normal seed 0, prod-runaway-internal-errors seed 1, guestbook-crash-loop
seed 0, in that order). The runtime's turn model and its seeded same-instant order have since changed
runs 2 and 3 (docs/runtime.md, "Turns and commits"); run 1 is the same today, so it is compared row
for row across the layouts, and the other two are read back as they were written."""

import shutil
from pathlib import Path

import duckdb
import pytest

from alarmkit import Journal, run_scenario
from alarmkit.journal import EVENT_COLUMNS
from alarmkit.runtime.profiles import PROFILES

# these tests are about the journal's layout, not fire lateness: simulations here take the exact fire latency
# (each fire 2 ms late), not the workerd profile's measured default (tests/runtime/test_latency_measured.py)
EXACT = PROFILES["workerd"].replace(fire_latency="exact")

OLD = Path(__file__).resolve().parents[1] / "data" / "journal-rendered.duckdb"
RUNS = [("lease-normal", 0), ("prod-runaway-internal-errors", 1), ("guestbook-crash-loop", 0)]
COLS = ", ".join(EVENT_COLUMNS)


def _tables(path: Path) -> dict[str, str]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return dict(con.execute("SELECT table_name, table_type FROM information_schema.tables").fetchall())
    finally:
        con.close()


def _rows(path: Path) -> list[tuple]:
    """Every event as plain DuckDB reads ``events`` (no alarmkit code between), in order."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute(f"SELECT {COLS} FROM events ORDER BY run_id, seq").fetchall()
    finally:
        con.close()


@pytest.fixture(scope="module")
def new_journal(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("packed") / "new.duckdb"
    with Journal(path) as j:
        for name, seed in RUNS:
            run_scenario(name, seed=seed, journal=j, profile=EXACT)
    return path


def _as_old(rows: list[tuple]) -> list[tuple]:
    """Rows without ``"in_alarm":true`` (an arm made inside alarm(), journal arm_detail): the old file predates it."""
    return [(*r[:-1], r[-1].replace(',"in_alarm":true', "") if isinstance(r[-1], str) else r[-1]) for r in rows]


@pytest.fixture(scope="module")
def as_old(new_journal, tmp_path_factory) -> Path:
    """The new journal without the one field the old file predates: ``"in_alarm":true`` on an arm made
    inside alarm() (journal arm_detail). Every other byte of the rows must match the old file."""
    path = tmp_path_factory.mktemp("as-old") / "new.duckdb"
    shutil.copyfile(new_journal, path)
    con = duckdb.connect(str(path))
    try:
        where = "WHERE kind = 'arm' AND detail LIKE '%,\"in_alarm\":true}'"
        (marked,) = con.execute(f"SELECT count(*) FROM event_rows {where}").fetchone()
        assert marked > 0  # lease-normal re-arms from alarm(): the field is there to strip
        con.execute(f"UPDATE event_rows SET detail = replace(detail, ',\"in_alarm\":true', '') {where}")
    finally:
        con.close()
    return path


def test_a_new_journal_stores_the_hot_kinds_packed_and_renders_them_in_a_view(new_journal):
    assert _tables(new_journal) == {"runs": "BASE TABLE", "event_rows": "BASE TABLE", "events": "VIEW"}
    con = duckdb.connect(str(new_journal), read_only=True)
    packed, texts, kinds = con.execute(
        "SELECT count(*) FILTER (WHERE packed), count(*) FILTER (WHERE packed AND detail IS NOT NULL), "
        "list(DISTINCT kind ORDER BY kind) FILTER (WHERE packed) FROM event_rows").fetchone()
    hot = con.execute("SELECT count(*) FROM events WHERE kind IN ('fire', 'handler_ok')").fetchone()[0]
    con.close()
    assert packed == hot > 240 and texts == 0  # no text stored for them
    assert kinds == ["fire", "handler_ok"]


def test_a_journal_written_before_the_packed_layout_reads_the_same_rows(as_old):
    new_journal = as_old
    assert _tables(OLD) == {"runs": "BASE TABLE", "events": "BASE TABLE"}
    old = _rows(OLD)
    assert len(old) == 1701
    assert [r for r in old if r[0] == 1] == [r for r in _rows(new_journal) if r[0] == 1]  # plain SQL: view and table
    with Journal(OLD, read_only=True) as a, Journal(new_journal, read_only=True) as b:
        assert a.events(1).equals(b.events(1))
        every = a.events()  # the reader reads what SQL reads, the hot kinds' text included
        assert len(every) == len(old) and every["detail"].tolist() == [r[-1] for r in old]
        assert a.runs()[["scenario", "seed", "params"]].equals(b.runs()[["scenario", "seed", "params"]])
    # the retried fires and both kinds of handler_ok are among them, rendered to the same text
    details = {r[-1] for r in old if r[5] in ("fire", "handler_ok")}
    assert {'{"next_ms":null}', '{"next_ms":1500}', '{"attempt":2,"late_ms":2}'} <= details


def test_attached_journals_read_through_the_view(as_old):
    new_journal = as_old
    con = duckdb.connect()  # as benchmarks/journal_identity.py compares two recordings
    con.execute(f"ATTACH '{new_journal}' AS a (READ_ONLY)")
    con.execute(f"ATTACH '{OLD}' AS b (READ_ONLY)")
    diff = con.execute(f"SELECT count(*) FROM (SELECT {COLS} FROM a.events WHERE run_id = 1 "
                       f"EXCEPT ALL SELECT {COLS} FROM b.events WHERE run_id = 1)")
    assert diff.fetchone()[0] == 0
    con.close()


def test_an_old_journal_keeps_its_layout_and_takes_new_runs_rendered(tmp_path):
    path = tmp_path / "old.duckdb"
    shutil.copyfile(OLD, path)
    before = _rows(path)
    with Journal(path) as j:
        r = run_scenario("lease-normal", seed=0, journal=j, profile=EXACT)
        j.add_runs([{"scenario": "s", "profile": "workerd", "seed": 1, "params": {},
                     "events": run_scenario("lease-normal", seed=0, profile=EXACT).sim.rows}])
    assert _tables(path) == {"runs": "BASE TABLE", "events": "BASE TABLE"}
    after = _rows(path)
    assert after[:len(before)] == before  # nothing already there changed
    first = [x[1:] for x in before if x[0] == 1]
    assert _as_old([x[1:] for x in after if x[0] == r.run_id]) == first  # the same run again, the same rows
    assert _as_old([x[1:] for x in after if x[0] == r.run_id + 1]) == first  # and through add_runs


def test_sql_inserting_into_a_new_journals_events_table_keeps_that_layout(tmp_path):
    """``events`` stays a plain table until the first write_events or add_runs (calibration files are
    filled with INSERT INTO events); one that holds rows then keeps it."""
    path = tmp_path / "direct.duckdb"
    with Journal(path) as j:
        old = duckdb.connect(str(OLD), read_only=True)
        df = old.execute("SELECT * FROM events WHERE run_id = 1").df()  # noqa: F841 - read by name below
        old.close()
        j.con.execute("INSERT INTO events SELECT * FROM df")
        j.start_run("lease-normal", "workerd", 0, {})
        r = run_scenario("lease-normal", seed=0, journal=j, profile=EXACT)
    assert _tables(path)["events"] == "BASE TABLE" and "event_rows" not in _tables(path)
    rows = _rows(path)
    assert [x[1:] for x in rows if x[0] == 1] == _as_old([x[1:] for x in rows if x[0] == r.run_id])


def test_add_runs_and_clear_on_the_packed_layout(tmp_path, new_journal):
    path = tmp_path / "chunk.duckdb"
    runs = [{"scenario": name, "profile": "workerd", "seed": seed, "params": {},
             "events": run_scenario(name, seed=seed, profile=EXACT).sim.rows} for name, seed in RUNS]
    with Journal(path) as j:
        assert j.add_runs(runs) == [1, 2, 3]
        assert _rows_of(j) == _rows(new_journal)
        assert j.clear() == 3 and j.events().empty
        assert set(_tables_of(j)) == {"runs", "events"}  # an empty journal: events a table again
        run_scenario("lease-normal", seed=0, journal=j, profile=EXACT)
        assert _tables_of(j)["events"] == "VIEW"
        assert _rows_of(j) == [x for x in _rows(new_journal) if x[0] == 1]


def _rows_of(j: Journal) -> list[tuple]:
    return j.con.execute(f"SELECT {COLS} FROM events ORDER BY run_id, seq").fetchall()


def _tables_of(j: Journal) -> dict[str, str]:
    return dict(j.con.execute("SELECT table_name, table_type FROM information_schema.tables").fetchall())
