"""Record the journals of every built-in scenario (and an explore run under faults) to compare runtimes.

    python benchmarks/journal_identity.py record before.duckdb   # on the code before a change
    python benchmarks/journal_identity.py record after.duckdb    # on the code after it
    python benchmarks/journal_identity.py compare before.duckdb after.duckdb

A hot-path change must keep every journal row for row: ``compare`` runs
``EXCEPT ALL`` both ways on the events (every column but the run id, keyed by the run's scenario,
profile, seed and its position among that key's runs) and prints the rows only one side has; exit 1 if any.
The explore run (the lease ledger under random fault plans and crash points) covers the fault hooks
that the scenarios' own plans leave unused. Runs rows are not compared: they hold wall-clock stamps.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import duckdb

from alarmkit import Journal, explore, list_scenarios, run_scenario
from alarmkit.errors import ScenarioError
from alarmkit.runtime.profiles import PROFILES

KEY = "r.scenario, r.profile, r.seed, row_number() OVER (PARTITION BY r.scenario, r.profile, r.seed ORDER BY r.run_id)"
COLUMNS = "seq, t_ms, namespace, object_id, kind, scheduled_ms, prev_scheduled_ms, retry_count, detail"


def record(path: str) -> None:
    journal = Journal(path)
    runs, refused = 0, 0
    for sc in list_scenarios():
        for profile in PROFILES:
            for seed in range(3):
                try:
                    run_scenario(sc.name, seed=seed, journal=journal, profile=profile)
                except ScenarioError:  # a scenario refusing a profile it cannot run on (both sides alike)
                    refused += 1
                    continue
                runs += 1
    explore("lease-ledger", seeds=30, journal=journal, workers=1, progress=False)
    n = journal.sql("SELECT count(*) AS n FROM events")["n"][0]
    print(f"{path}: {runs} scenario runs ({refused} refused their profile) and an explore run, {n:,} events")
    journal.close()


def compare(a: str, b: str) -> int:
    con = duckdb.connect()
    for name, path in (("a", a), ("b", b)):  # ATTACH takes no parameters: the path quoted as SQL text
        con.execute(f"ATTACH '{str(path).replace(chr(39), chr(39) * 2)}' AS {name} (READ_ONLY)")

    def side(db: str) -> str:
        return (f"SELECT k.*, {', '.join('e.' + c for c in COLUMNS.split(', '))} FROM {db}.events e JOIN "
                f"(SELECT r.run_id, {KEY} AS nth, r.scenario, r.profile, r.seed FROM {db}.runs r) k USING (run_id)")

    bad = 0
    for x, y in (("a", "b"), ("b", "a")):
        rows = con.execute(f"SELECT * EXCLUDE (run_id) FROM ({side(x)}) EXCEPT ALL "
                           f"SELECT * EXCLUDE (run_id) FROM ({side(y)})").fetchall()
        print(f"rows only in {x}: {len(rows)}")
        for row in rows[:10]:
            print("  ", row)
        bad += len(rows)
    total = con.execute(f"SELECT count(*) FROM a.events").fetchone()[0]
    print(f"{total:,} events compared")
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="record the journals into a new DuckDB file")
    rec.add_argument("path", help="a file that does not exist yet")
    cmp_ = sub.add_parser("compare", help="compare two recordings; exit 1 if any row differs")
    cmp_.add_argument("a")
    cmp_.add_argument("b")
    a = ap.parse_args(argv)
    if a.command == "record":
        if Path(a.path).exists():  # appending would double every run, and compare would then cry wolf
            ap.exit(2, f"journal_identity: {a.path} exists; record into a new file (nothing was written)\n")
        record(a.path)
        return 0
    for path in (a.a, a.b):
        if not Path(path).is_file():
            ap.exit(2, f"journal_identity: {path} is not a file; record one with: record {path}\n")
    try:
        return compare(a.a, a.b)
    except duckdb.Error as err:
        ap.exit(2, f"journal_identity: could not read {a.a} and {a.b} as recordings: {str(err).splitlines()[0]}\n")


if __name__ == "__main__":
    sys.exit(main())
