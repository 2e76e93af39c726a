"""Core benchmarks, printed as ratios against a peer measured in the same run.

    python benchmarks/bench_core.py            # full size (10,000 x 100; 1,000,000 events; 100,000 leases)
    python benchmarks/bench_core.py --quick    # a tenth of the size, for a smoke run
    python benchmarks/bench_core.py --repeat 5 # benchmarks 1 and 2 five times each, best counts (default 3)

1. alarm lifecycles/s: N objects, each re-arming R times at random +1..1000 ms from a trivial handler
   that awaits set_alarm (as README teaches), journal on and flushed to a DuckDB file. Two peers in
   the same run (target 1 in docs/performance.md): SimPy running N processes x R timeouts (bare; target >= 0.5x),
   and a like-for-like SimPy process doing the same bookkeeping (the alarm row per object, the fire,
   arm and handler_ok events as integers) inserted into a DuckDB file at the end (target >= 1.0x).
1b. the same with one SQL write per fire (an upsert into the object's own SQLite database), beside
   SimPy plus raw sqlite3 doing the same write in one database per process (target 2: >= 0.67x).
2. journal ingest alone: buffered events/s into a DuckDB file. Target >= 2,000,000 events/s.
   Logging them (Simulation.log) is timed apart and printed beside it.
3. M objects each granted one lease that expires: wall time and peak RSS (in a child process).
   Target: peak RSS <= 2 GiB for 100,000; <= 4 GiB for 1,000,000 (--leases 1000000, ~20 min).
4. explore's throughput on the lease ledger: runs/s journaled to a DuckDB file, and without a journal.
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
from alarmkit.journal._events import WIDTH, EventBatch
from alarmkit.journal import BATCH_SIZE


class Rearm(DurableObject):
    """Trivial handler: re-arm at a random +1..1000 ms until the budget is used up."""

    budget = 100

    def __init__(self, ctx, env):
        super().__init__(ctx, env)
        self.left = Rearm.budget

    async def start(self):
        await self.ctx.storage.set_alarm(self.ctx.now() + self.env.rng.randint(1, 1000))

    async def alarm(self, info):
        self.left -= 1
        if self.left > 0:
            await self.ctx.storage.set_alarm(self.ctx.now() + self.env.rng.randint(1, 1000))


class RearmSql(Rearm):
    """Rearm plus one durable SQL write per fire (target 2 in docs/performance.md)."""

    def __init__(self, ctx, env):
        super().__init__(ctx, env)
        ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS fires (k INTEGER PRIMARY KEY, n INTEGER)")

    async def alarm(self, info):
        self.left -= 1
        self.ctx.storage.sql.exec("INSERT OR REPLACE INTO fires (k, n) VALUES (1, ?)", self.left)
        if self.left > 0:
            await self.ctx.storage.set_alarm(self.ctx.now() + self.env.rng.randint(1, 1000))


def _quiet_gc() -> None:
    """Both peers get the same treatment: collect, then freeze what set-up (and imports) left alive."""
    gc.unfreeze()  # what an earlier repeat froze can be collected now
    gc.collect()
    gc.freeze()


def bench_alarmkit(objects: int, rearms: int, db: Path, cls: type = Rearm) -> tuple[float, int, int]:
    Rearm.budget = rearms
    journal = Journal(db)
    # no idle eviction during the run, so every object lives R fires (as each SimPy process does)
    sim = Simulation(seed=1, journal=journal, scenario="bench-lifecycles", idle_evict_ms=10**9)
    sim.env.rng = sim.kernel.rng
    ns = sim.namespace("R", cls)
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


# the like-for-like peer's event kinds, as integer codes
_FIRE, _ARM, _OK = 1, 2, 3


def bench_simpy_journal(processes: int, timeouts: int, db: Path) -> tuple[float, int, int]:
    """SimPy doing alarmkit's bookkeeping (target 1's like-for-like peer): per process an
    alarm row (a dict entry, as the scheduler's ``rows``), and per timeout three events (fire, arm or
    none at the last, handler_ok with the next alarm) as integers in one flat list, inserted into a
    DuckDB file at the end, inside the timing (alarmkit's figure includes its journal's close too).
    Process creation (alarmkit's ``start()`` calls) is timed as well. Returns (seconds, timeouts, events)."""
    import random

    import duckdb
    import pyarrow as pa
    import simpy

    env = simpy.Environment()
    rng = random.Random(1)
    rows: dict[int, int] = {}
    buf: list = []

    def proc(env, i):
        now = env.now
        at = rows[i] = now + rng.randint(1, 1000)
        buf.extend((now, i, _ARM, at, None, None))
        for n in range(timeouts):
            yield env.timeout(at - env.now)
            now = env.now
            buf.extend((now, i, _FIRE, at, None, n + 1))
            if n + 1 < timeouts:
                nxt = rows[i] = now + rng.randint(1, 1000)
                buf.extend((now, i, _ARM, nxt, at, None))
            else:
                nxt = None
                del rows[i]
            buf.extend((now, i, _OK, at, nxt, None))
            at = nxt

    _quiet_gc()
    t0 = time.perf_counter()
    for i in range(processes):
        env.process(proc(env, i))
    env.run()
    names = ("t_ms", "object", "kind", "scheduled_ms", "other_ms", "n")
    batch = pa.table({name: pa.array(buf[k::6], pa.int64()) for k, name in enumerate(names)})
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE events (t_ms BIGINT, object BIGINT, kind BIGINT, scheduled_ms BIGINT, "
                "other_ms BIGINT, n BIGINT)")
    con.execute("INSERT INTO events SELECT * FROM batch")
    con.close()
    wall = time.perf_counter() - t0
    return wall, timeouts * processes, len(buf) // 6


def bench_simpy_sql(processes: int, timeouts: int) -> tuple[float, int]:
    """Bare SimPy plus raw ``sqlite3`` doing RearmSql's write (target 2's peer): one
    in-memory database per process (as alarmkit keeps one per object), the same upsert per
    timeout in autocommit (one durable statement)."""
    import random
    import sqlite3

    import simpy

    env = simpy.Environment()
    rng = random.Random(1)
    done = [0]
    conns = []
    for _ in range(processes):
        conn = sqlite3.connect(":memory:", isolation_level=None)
        conn.execute("PRAGMA page_size=512")
        conn.execute("CREATE TABLE IF NOT EXISTS fires (k INTEGER PRIMARY KEY, n INTEGER)")
        conns.append(conn)

    def proc(env, conn):
        left = timeouts
        for _ in range(timeouts):
            yield env.timeout(rng.randint(1, 1000))
            left -= 1
            conn.execute("INSERT OR REPLACE INTO fires (k, n) VALUES (1, ?)", (left,))
            done[0] += 1

    for conn in conns:
        env.process(proc(env, conn))
    _quiet_gc()
    t0 = time.perf_counter()
    env.run()
    wall = time.perf_counter() - t0
    for conn in conns:
        conn.close()
    return wall, done[0]


def bench_ingest(events: int, db: Path) -> tuple[float, float, int, float]:
    """Journal ingest alone: ``events`` buffered events, in the batches a simulation hands over,
    from the runtime's buffer into a DuckDB file (Arrow conversion, the writer thread, close).
    The events are logged first through ``Simulation.log``, timed apart: that is the runtime's
    cost, paid in benchmark 1. The mix is benchmark 1's: arm, fire and handler_ok on 10,000
    objects, details as the runtime writes them. Returns (ingest seconds, logging seconds, events,
    ingest CPU seconds of the whole process, the writer thread's included: on a shared machine the
    figure that the other users move least)."""
    sim = Simulation(seed=1, scenario="bench-ingest")  # no journal: log() only buffers
    ns = sim.namespace("R", Rearm)
    hosts = [ns.get(f"o{i}")._host for i in range(10_000)]
    arm = '{"direction":"later","cause":"user"}'
    log, kernel, buf = sim.log, sim.kernel, sim.buffer.data
    _quiet_gc()
    t0 = time.perf_counter()
    for i in range(0, events, 3):
        host = hosts[(i // 3) % 10_000]
        kernel.now = i
        # fire and handler_ok packed as Simulation.deliver and _alarm_done log them (alarmkit/_events.py)
        buf += (i, ~host.code, "fire", i - 2, i // 30_000 + 1, 0, None)  # attempt n of this object, 2 ms late
        log("arm", host, i + 500, i, None, arm)
        buf += (i, ~host.code, "handler_ok", i - 2, i + 500, 0, None)
    log_wall = time.perf_counter() - t0
    data, size = sim.buffer.take().data, BATCH_SIZE * WIDTH
    batches = [EventBatch(sim.buffer, data[k:k + size], 1 + k // WIDTH) for k in range(0, len(data), size)]
    journal = Journal(db)
    run_id = journal.start_run("bench-ingest", "workerd", 1, {"events": events})
    t0, c0 = time.perf_counter(), time.process_time()
    for batch in batches:
        journal.write_events(run_id, batch)
    journal.close()  # waits for the writer thread: every event is in the file
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    with Journal(db) as check:
        n = check.sql("SELECT count(*) AS n FROM events")["n"][0]
    assert n == len(data) // WIDTH, (n, len(data) // WIDTH)
    return wall, log_wall, int(n), cpu


def bench_explore(seeds: int, db: Path) -> tuple[int, float, float, float, float]:
    """explore's throughput on the lease ledger (its crash-point search plus ``seeds`` random plans),
    in this process (one worker, so the figure is the engine's, not the pool's): runs per second
    with every run journaled to a DuckDB file, and with no journal (the peer: the runs alone).
    Returns (runs, seconds with the journal, seconds without, and the same two in process CPU seconds)."""
    from alarmkit import explore

    walls, cpus = [], []
    for journal in (Journal(db), None):
        _quiet_gc()
        t0, c0 = time.perf_counter(), time.process_time()
        ex = explore("lease-ledger", seeds=seeds, journal=journal, executor="serial", progress=False)
        if journal is not None:
            journal.close()  # every run in the file: part of the journaled figure
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return ex.runs, walls[0], walls[1], cpus[0], cpus[1]


LEASES_CHILD = """
import json, resource, sys, time
from alarmkit import Journal, Simulation
from alarmkit.scenarios.lease import LeaseLedger
n, db = int(sys.argv[1]), sys.argv[2]
journal = Journal(db)
# a million idle timers come due at one virtual instant: no step limit (the default stops at 100,000)
sim = Simulation(seed=1, journal=journal, scenario="bench-leases", step_limit=None, event_limit=None)
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
    ap.add_argument("--repeat", type=int, default=3, help="runs of benchmarks 1 and 2; the best counts (default 3)")
    ap.add_argument("--only", choices=("1", "2", "3", "4"), nargs="+", default=None,
                    help="run only these benchmarks (1 includes 1b)")
    ap.add_argument("--leases", type=int, default=None,
                    help="objects of benchmark 3 (default 100,000; the target is 1,000,000 within 4 GiB)")
    a = ap.parse_args()
    if a.repeat < 1:
        ap.error(f"--repeat must be at least 1, got {a.repeat}")
    if a.leases is not None and not 1 <= a.leases <= 10_000_000:
        ap.error(f"--leases must be in 1..10,000,000 objects, got {a.leases:,}")
    scale = 10 if a.quick else 1
    objects, rearms, events, leases = 10_000 // scale, 100, 1_000_000 // scale, 100_000 // scale
    leases = a.leases or leases
    want = set(a.only or ("1", "2", "3", "4"))
    out: dict = {}
    t0 = time.perf_counter()
    for _ in range(10_000_000):
        pass
    loop = time.perf_counter() - t0
    out["machine"] = {"empty_loop_10m_s": loop}
    print(f"0. this machine: a 10M-iteration empty Python loop takes {loop:.2f} s (absolute rates scale with it)")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if "1" in want:
            # The peers run in turns and each keeps its best time (as timeit does): on a shared machine
            # the least disturbed run is the truest; the spread of the paired ratios is printed too.
            ak_walls, sp_walls, lk_walls = [], [], []
            for rep in range(a.repeat):
                ak_wall, fires, total = bench_alarmkit(objects, rearms, tmp / f"lifecycles-{rep}.duckdb")
                sp_wall, timeouts = bench_simpy(objects, rearms)
                lk_wall, lk_fires, lk_events = bench_simpy_journal(objects, rearms, tmp / f"simpy-{rep}.duckdb")
                ak_walls.append(ak_wall)
                sp_walls.append(sp_wall)
                lk_walls.append(lk_wall)
            ak_rate, sp_rate, lk_rate = fires / min(ak_walls), timeouts / min(sp_walls), lk_fires / min(lk_walls)
            pairs = sorted((fires / ak) / (timeouts / sp) for ak, sp in zip(ak_walls, sp_walls))
            lk_pairs = sorted((fires / ak) / (lk_fires / lk) for ak, lk in zip(ak_walls, lk_walls))
            out["lifecycles"] = {"alarmkit_per_s": ak_rate, "simpy_per_s": sp_rate, "ratio": ak_rate / sp_rate,
                                 "paired_ratios": pairs, "fires": fires, "events": total,
                                 "simpy_journal_per_s": lk_rate, "ratio_like_for_like": ak_rate / lk_rate,
                                 "paired_ratios_like_for_like": lk_pairs, "simpy_journal_events": lk_events}
            print(f"1. alarm lifecycles (best of {a.repeat}): alarmkit {fires:,} fires ({total:,} journal events) "
                  f"in {min(ak_walls):.2f} s = {ak_rate:,.0f}/s;\n"
                  f"   bare SimPy {timeouts:,} timeouts in {min(sp_walls):.2f} s = {sp_rate:,.0f}/s; ratio "
                  f"{ak_rate / sp_rate:.2f}x (target >= 0.5x; paired runs {pairs[0]:.2f}x..{pairs[-1]:.2f}x);\n"
                  f"   like-for-like SimPy ({lk_events:,} integer events into a DuckDB file) in {min(lk_walls):.2f} s = "
                  f"{lk_rate:,.0f}/s; ratio {ak_rate / lk_rate:.2f}x (target >= 1.0x; paired runs "
                  f"{lk_pairs[0]:.2f}x..{lk_pairs[-1]:.2f}x)")

            sql_objects, sql_rearms = 2_000 // scale, 50  # the benchmark's size: every database stays open (pool 2,048)
            sq_walls, ps_walls = [], []
            for rep in range(a.repeat):
                sq_wall, sq_fires, _ = bench_alarmkit(sql_objects, sql_rearms, tmp / f"sql-{rep}.duckdb", RearmSql)
                ps_wall, ps_fires = bench_simpy_sql(sql_objects, sql_rearms)
                sq_walls.append(sq_wall)
                ps_walls.append(ps_wall)
            sq_rate, ps_rate = sq_fires / min(sq_walls), ps_fires / min(ps_walls)
            sq_pairs = sorted((sq_fires / w) / (ps_fires / p) for w, p in zip(sq_walls, ps_walls))
            out["lifecycles_sql"] = {"alarmkit_per_s": sq_rate, "simpy_sqlite_per_s": ps_rate, "ratio": sq_rate / ps_rate,
                                     "paired_ratios": sq_pairs, "fires": sq_fires}
            print(f"1b. one SQL write per fire ({sql_objects:,} objects x {sql_rearms}, best of {a.repeat}): alarmkit "
                  f"{sq_rate:,.0f}/s (journal to a DuckDB file); SimPy + raw sqlite3 {ps_rate:,.0f}/s; ratio "
                  f"{sq_rate / ps_rate:.2f}x (target >= 0.67x; paired runs {sq_pairs[0]:.2f}x..{sq_pairs[-1]:.2f}x)")

        if "2" in want:
            runs = [bench_ingest(events, tmp / f"ingest-{rep}.duckdb") for rep in range(a.repeat)]
            ing_wall, log_wall, events = min(r[0] for r in runs), min(r[1] for r in runs), runs[0][2]
            rates = sorted(events / r[0] / 1e6 for r in runs)
            cpu = min(r[3] for r in runs)
            out["ingest"] = {"events": events, "per_s": events / ing_wall, "log_per_s": events / log_wall,
                             "both_per_s": events / (ing_wall + log_wall), "runs_million_per_s": rates,
                             "cpu_s": cpu}
            print(f"2. journal ingest (best of {a.repeat}): {events:,} buffered events into a DuckDB file in "
                  f"{ing_wall:.2f} s = {events / ing_wall:,.0f} events/s (target >= 2,000,000/s: "
                  f"{events / ing_wall / 2e6:.2f}x; runs {rates[0] / 2:.2f}x..{rates[-1] / 2:.2f}x); logging them took "
                  f"{log_wall:.2f} s ({events / log_wall:,.0f}/s), both together {events / (ing_wall + log_wall):,.0f}/s;\n"
                  f"   ingest CPU (both threads, best of {a.repeat}) {cpu:.2f} s = {events / cpu:,.0f} events per CPU second")

        if "3" in want:
            child = subprocess.run([sys.executable, "-c", LEASES_CHILD, str(leases), str(tmp / "leases.duckdb")],
                                   capture_output=True, text=True, check=True)
            r = json.loads(child.stdout)
            gib = r["peak_rss_kib"] / 2**20
            out["leases"] = {"objects": leases, **r, "peak_rss_gib": gib}
            budget = 4 if leases > 100_000 else 2
            print(f"3. {leases:,} objects x one expiring lease: {r['wall']:.2f} s wall, peak RSS {gib:.2f} GiB "
                  f"({gib / budget:.2f}x the {budget} GiB budget); {r['effects']:,} revokes, {r['left']} leases left")

        if "4" in want:
            runs, ex_db, ex_none, cpu_db, cpu_none = bench_explore(100 // scale, tmp / "explore.duckdb")
            out["explore"] = {"runs": runs, "journal_s": ex_db, "no_journal_s": ex_none,
                              "runs_per_s": runs / ex_db, "no_journal_runs_per_s": runs / ex_none,
                              "journal_cpu_s": cpu_db, "no_journal_cpu_s": cpu_none}
            print(f"4. explore lease-ledger ({runs} runs: its crash-point search and {100 // scale} seeds, one process): "
                  f"{runs / ex_db:,.0f} runs/s journaled to a DuckDB file, {runs / ex_none:,.0f} runs/s without a journal "
                  f"(journaled at {ex_none / ex_db:.2f}x the runs alone);\n"
                  f"   per CPU second: {runs / cpu_db:,.0f} runs journaled, {runs / cpu_none:,.0f} without")

    if a.json:
        print(json.dumps(out))


if __name__ == "__main__":
    main()
