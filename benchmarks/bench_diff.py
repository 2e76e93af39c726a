"""Diff benchmark: two runs of N events each (default 1,000,000) diffed in DuckDB.

    python benchmarks/bench_diff.py                 # 1,000,000 events per run
    python benchmarks/bench_diff.py --events 100000 # a quick one

Run A is ``bench_export``'s synthetic journal (500 objects arming, moving, firing, failing, retrying,
running effects, crashing now and then). Run B is the same run changed in four ways a review would
care about: every 500th effect runs twice (a duplicate), every 700th fire is 40 ms later (another
lateness), every 900th ``handler_ok`` is a ``handler_error`` (another outcome), and every 1,100th
user arm is gone (a missing arm). Both go into one journal file; ``ak.diff((j, 1), (j, 2),
check=False)`` is timed (reading both runs out of the journal, keying and joining them in SQL,
returning the differences), against a peer measured in the same run: ``Journal.events`` of both runs
(what reading them for a comparison by eye costs). The target: under 10 s on this machine class.
CPU seconds (``time.process_time``, every thread of the process) are printed beside the wall time:
on a shared machine the wall time grows with the load average, the CPU time much less.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import alarmkit as ak  # noqa: E402
from bench_export import synthetic_rows  # noqa: E402

TARGET_S = 10.0


def changed(rows: list[tuple]) -> list[tuple]:
    """Run B: run A with duplicates, late fires, other outcomes and missing arms (see the module doc)."""
    out, n = [], {"effect": 0, "fire": 0, "handler_ok": 0, "arm": 0}
    for r in rows:
        _, t, ns, obj, kind, sched, prev, rc, detail = r
        if kind in n:
            n[kind] += 1
        if kind == "arm" and detail.get("cause") == "user" and n["arm"] % 1_100 == 0:
            continue
        if kind == "fire" and n["fire"] % 700 == 0:
            r = (0, t + 40, ns, obj, kind, sched, prev, rc, {**detail, "late_ms": detail["late_ms"] + 40})
        if kind == "handler_ok" and n["handler_ok"] % 900 == 0:
            r = (0, t, ns, obj, "handler_error", sched, prev, rc, {"error": "Error", "message": "changed"})
        out.append(r)
        if kind == "effect" and n["effect"] % 500 == 0:
            out.append(r)
    return [(seq, *r[1:]) for seq, r in enumerate(out, start=1)]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--events", type=int, default=1_000_000, help="events per run; default 1,000,000")
    args = p.parse_args(argv)
    if args.events < 1_000:
        p.error(f"--events must be at least 1000, got {args.events}")
    with tempfile.TemporaryDirectory(prefix="bench-diff-") as tmp:
        a = synthetic_rows(args.events)
        b = changed(a)
        with ak.Journal(Path(tmp) / "j.duckdb") as j:
            for rows in (a, b):
                run = j.start_run("synthetic", "workerd", 7, {"events": len(rows)})
                for i in range(0, len(rows), j.batch_size):
                    j.write_events(run, rows[i:i + j.batch_size])
                j.end_run(run)
            t0 = time.perf_counter()
            ea, eb = j.events(1), j.events(2)
            peer = time.perf_counter() - t0
            t0, c0 = time.perf_counter(), time.process_time()
            d = ak.diff((j, 1), (j, 2), check=False)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        by = d.table()["status"].value_counts().to_dict()
        print(f"events: A {len(ea):,}, B {len(eb):,}; aligned pairs: {d.matched:,} matched, "
              f"{len(d.differences):,} differ {by}")
        print(f"first divergence: {d.first_divergence}")
        load = os.getloadavg()[0]
        print(f"diff (DuckDB): {wall:.2f} s wall, {cpu:.2f} s CPU (all threads); peer Journal.events of both runs: "
              f"{peer:.2f} s; ratio {wall / peer:.2f}x; load average {load:.1f} on {os.cpu_count()} cores")
        print(f"target under {TARGET_S:.0f} s wall: {'met' if wall < TARGET_S else 'NOT met'}")
    return 0 if wall < TARGET_S else 1


if __name__ == "__main__":
    raise SystemExit(main())
