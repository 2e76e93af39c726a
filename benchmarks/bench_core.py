"""Core benchmarks, printed as ratios against a peer measured in the same run.

    python benchmarks/bench_core.py            # full size (10,000 x 100; 1,000,000 events; 100,000 leases)
    python benchmarks/bench_core.py --quick    # a tenth of the size, for a smoke run

1. alarm lifecycles/s: N objects, each re-arming R times at random +1..1000 ms from a trivial handler,
   journal on and flushed to a DuckDB file; beside it SimPy running N processes x R timeouts.
   Target: alarmkit >= 0.5x SimPy's rate.
2. journal ingest alone: events/s into a DuckDB file. Target >= 1,000,000 events/s.
3. M objects each granted one lease that expires: wall time and peak RSS (in a child process).
   Target: peak RSS <= 2 GiB.
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from alarmkit import DurableObject, Journal, Simulation


class Rearm(DurableObject):
    """Trivial handler: re-arm at a random +1..1000 ms until the budget is used up."""

    budget = 100

    def __init__(self, ctx, env):
        super().__init__(ctx, env)
        self.left = Rearm.budget

    async def start(self):
        self.ctx.storage.set_alarm(self.ctx.now() + self.env.rng.randint(1, 1000))

    async def alarm(self, info):
        self.left -= 1
        if self.left > 0:
            self.ctx.storage.set_alarm(self.ctx.now() + self.env.rng.randint(1, 1000))


def _quiet_gc() -> None:
    """Both peers get the same treatment: collect, then freeze what set-up (and imports) left alive."""
    gc.collect()
    gc.freeze()


def bench_alarmkit(objects: int, rearms: int, db: Path) -> tuple[float, int, int]:
    Rearm.budget = rearms
    journal = Journal(db)
    # no idle eviction during the run, so every object lives R fires (as each SimPy process does)
    sim = Simulation(seed=1, journal=journal, scenario="bench-lifecycles", idle_evict_ms=10**9)
    sim.env.rng = sim.kernel.rng
    ns = sim.namespace("R", Rearm)
    _quiet_gc()
    t0 = time.perf_counter()
    for i in range(objects):
        sim.call(ns.get(f"o{i}").start())
    sim.run(until=rearms * 1000 + 10_000)
    sim.close()
    wall = time.perf_counter() - t0
    fires = journal.sql("SELECT count(*) AS n FROM events WHERE kind = 'fire'")["n"][0]
    total = journal.sql("SELECT count(*) AS n FROM events")["n"][0]
    journal.close()
    return wall, int(fires), int(total)


def bench_simpy(processes: int, timeouts: int) -> tuple[float, int]:
    import random

    import simpy

    env = simpy.Environment()
    rng = random.Random(1)
    done = [0]

    def proc(env):
        for _ in range(timeouts):
            yield env.timeout(rng.randint(1, 1000))
            done[0] += 1

    for _ in range(processes):
        env.process(proc(env))
    _quiet_gc()
    t0 = time.perf_counter()
    env.run()
    return time.perf_counter() - t0, done[0]


def bench_ingest(events: int, db: Path) -> float:
    journal = Journal(db, batch_size=200_000)
    run_id = journal.start_run("bench-ingest", "workerd", 0, {})
    kinds = ("arm", "fire", "handler_ok")
    details = ({"direction": "new", "cause": "user"}, {"attempt": 1, "late_ms": 2}, None)
    t0 = time.perf_counter()
    rows = []
    for i in range(events):
        k = i % 3
        rows.append((i + 1, i, "R", f"o{i % 10_000}", kinds[k], i + 500, None, 0, details[k]))
        if len(rows) >= journal.batch_size:
            journal.write_events(run_id, rows)
            rows = []
    journal.write_events(run_id, rows)
    wall = time.perf_counter() - t0
    n = journal.sql("SELECT count(*) AS n FROM events")["n"][0]
    assert n == events, (n, events)
    journal.close()
    return wall


LEASES_CHILD = """
import json, resource, sys, time
from alarmkit import Journal, Simulation
from alarmkit.scenarios.lease import LeaseLedger
n, db = int(sys.argv[1]), sys.argv[2]
journal = Journal(db)
sim = Simulation(seed=1, journal=journal, scenario="bench-leases")
ns = sim.namespace("LEASES", LeaseLedger)
t0 = time.perf_counter()
for i in range(n):
    sim.call(ns.get(f"ledger-{i}").grant("lease", 1000 + i % 5000))
sim.run()
sim.close()
wall = time.perf_counter() - t0
left = sum(len(h.db.read("SELECT 1 FROM leases")) for h in ns.hosts.values())
effects = int(journal.sql("SELECT count(*) AS n FROM events WHERE kind = 'effect'")["n"][0])
print(json.dumps({"wall": wall, "peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  "effects": effects, "left": left}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a tenth of the size")
    ap.add_argument("--json", action="store_true", help="also print the figures as one JSON object")
    a = ap.parse_args()
    scale = 10 if a.quick else 1
    objects, rearms, events, leases = 10_000 // scale, 100, 1_000_000 // scale, 100_000 // scale
    out: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        ak_wall, fires, total = bench_alarmkit(objects, rearms, tmp / "lifecycles.duckdb")
        sp_wall, timeouts = bench_simpy(objects, rearms)
        ak_rate, sp_rate = fires / ak_wall, timeouts / sp_wall
        out["lifecycles"] = {"alarmkit_per_s": ak_rate, "simpy_per_s": sp_rate, "ratio": ak_rate / sp_rate,
                             "fires": fires, "events": total}
        print(f"1. alarm lifecycles: alarmkit {fires:,} fires ({total:,} journal events) in {ak_wall:.2f} s "
              f"= {ak_rate:,.0f}/s; SimPy {timeouts:,} timeouts in {sp_wall:.2f} s = {sp_rate:,.0f}/s; "
              f"ratio {ak_rate / sp_rate:.2f}x (target >= 0.5x)")

        ing_wall = bench_ingest(events, tmp / "ingest.duckdb")
        out["ingest"] = {"events": events, "per_s": events / ing_wall}
        print(f"2. journal ingest: {events:,} events in {ing_wall:.2f} s = {events / ing_wall:,.0f} events/s "
              f"(target >= 1,000,000/s; {events / ing_wall / 1e6:.2f}x target)")

        child = subprocess.run([sys.executable, "-c", LEASES_CHILD, str(leases), str(tmp / "leases.duckdb")],
                               capture_output=True, text=True, check=True)
        r = json.loads(child.stdout)
        gib = r["peak_rss_kib"] / 2**20
        out["leases"] = {"objects": leases, **r, "peak_rss_gib": gib}
        print(f"3. {leases:,} objects x one expiring lease: {r['wall']:.2f} s wall, peak RSS {gib:.2f} GiB "
              f"({gib / 2:.2f}x the 2 GiB budget); {r['effects']:,} revokes, {r['left']} leases left")
    if a.json:
        print(json.dumps(out))


if __name__ == "__main__":
    main()
