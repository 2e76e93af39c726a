"""Where an awaiting lifecycle's instructions go: callgrind totals and a per-function table.

    python benchmarks/bench_attribution.py                 # 100 objects, re-arms 10 vs 40
    python benchmarks/bench_attribution.py --objects 200 --rearms 10 60

The lifecycle is bench_instructions.py's (``Rearm``: each object awaits ``set_alarm`` at a random
+1..1000 ms, the alarm fires, the handler awaits the next ``set_alarm``), with no journal. Two
measurements, both differences of two runs (R1 and R2 re-arms per object) divided by
``objects x (R2 - R1)`` so that imports and set-up cancel out, GC off in the child:

1. ``valgrind --tool=callgrind``: instructions per lifecycle in total, and per C function (self
   cost), e.g. the eval loop, ``heappush``, the allocator. Instructions, not seconds.
2. Python functions: this interpreter (3.11) has no perf trampoline, so callgrind cannot see
   Python frames (3.11 inlines Python-to-Python calls inside one eval loop). Each Python
   function's share is counted exactly instead as the bytecodes it executes itself (a
   ``sys.settrace`` opcode trace, deterministic) and calls per lifecycle; the column
   ``~instr`` apportions callgrind's total by that bytecode share. It is an estimate (a bytecode
   that calls C, e.g. ``heappush``, counts once): read it for ranking, the total is exact.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = """
import gc, sys
gc.disable()
sys.path.insert(0, {here!r})
n, r = int(sys.argv[1]), int(sys.argv[2])
from bench_core import Rearm
from alarmkit import Simulation
Rearm.budget = r
sim = Simulation(seed=1, journal=None, scenario="bench-attribution", idle_evict_ms=10**9)
sim.env.rng = sim.kernel.rng
ns = sim.namespace("R", Rearm)
for i in range(n):
    sim.call(ns.get(f"o{{i}}").start())
sim.run(until=r * 1000 + 10_000)
sim.close()
"""


def callgrind(objects: int, rearms: int, tmp: Path) -> tuple[int, Counter]:
    """Total instructions and self instructions per C function of one child run under callgrind."""
    out = tmp / f"cg-{rearms}.out"
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1",
           "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, "-c",
                           CHILD.format(here=str(HERE)), str(objects), str(rearms)],
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"callgrind run failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    ann = subprocess.run(["callgrind_annotate", "--threshold=100", str(out)], capture_output=True, text=True)
    total, per = 0, Counter()
    for line in ann.stdout.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*?)\s+\[", line) or re.match(r"\s*([\d,]+)\s+(\S.*)$", line)
        if not m:
            continue
        n, name = int(m.group(1).replace(",", "")), m.group(2).strip()
        if "PROGRAM TOTALS" in name:
            total = n
        elif ":" in name:
            per[name.split(":", 1)[1].split(" [")[0].split("'")[0]] += n
    return total, per


def bytecodes(objects: int, rearms: int) -> tuple[Counter, Counter]:
    """Bytecodes executed (self) and calls per Python function of one in-process run, traced."""
    import gc

    sys.path.insert(0, str(HERE))
    from bench_core import Rearm

    from alarmkit import Simulation

    ops, calls = Counter(), Counter()

    def name(code) -> str:
        return f"{Path(code.co_filename).stem}.{getattr(code, 'co_qualname', code.co_name)}"

    def tracer(frame, event, arg):
        if event == "call":
            frame.f_trace_opcodes = True
            calls[name(frame.f_code)] += 1
        elif event == "opcode":
            ops[name(frame.f_code)] += 1
        return tracer

    Rearm.budget = rearms
    gc.disable()
    sim = Simulation(seed=1, journal=None, scenario="bench-attribution", idle_evict_ms=10**9)
    sim.env.rng = sim.kernel.rng
    ns = sim.namespace("R", Rearm)
    for i in range(objects):
        sim.call(ns.get(f"o{i}").start())
    sys.settrace(tracer)
    try:
        sim.run(until=rearms * 1000 + 10_000)
    finally:
        sys.settrace(None)
        gc.enable()
    sim.close()
    return ops, calls


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--objects", type=int, default=100, help="objects; default 100")
    ap.add_argument("--rearms", type=int, nargs=2, default=(10, 40), metavar=("R1", "R2"),
                    help="the two re-arm counts whose difference is measured; default 10 40")
    ap.add_argument("--top", type=int, default=25, help="rows of each table; default 25")
    a = ap.parse_args()
    r1, r2 = a.rearms
    if a.objects < 1 or not 0 < r1 < r2 or a.top < 1:
        ap.error(f"need --objects >= 1, 0 < R1 < R2 and --top >= 1, got --objects {a.objects} "
                 f"--rearms {r1} {r2} --top {a.top}")
    if shutil.which("valgrind") is None or shutil.which("callgrind_annotate") is None:
        raise SystemExit("valgrind (with callgrind_annotate) is not installed; install it (Debian: apt install valgrind)")
    lives = a.objects * (r2 - r1)
    with tempfile.TemporaryDirectory() as tmp:
        (lo, clo), (hi, chi) = callgrind(a.objects, r1, Path(tmp)), callgrind(a.objects, r2, Path(tmp))
    total = (hi - lo) / lives
    print(f"callgrind: {total:,.0f} instructions per awaiting lifecycle ({a.objects} objects, re-arms {r1} vs {r2}, "
          "no journal, GC off)\n")
    print(f"{'C function (self)':50} {'instr/lifecycle':>16}")
    cdiff = Counter({k: (chi[k] - clo.get(k, 0)) / lives for k in chi})
    for k, v in cdiff.most_common(a.top):
        print(f"  {k[:48]:48} {v:>16,.0f}")
    olo, nlo = bytecodes(a.objects, r1)
    ohi, nhi = bytecodes(a.objects, r2)
    ops = Counter({k: (ohi[k] - olo.get(k, 0)) / lives for k in ohi})
    all_ops = sum(ops.values())
    print(f"\n{'Python function (self bytecodes)':50} {'calls':>7} {'bytecodes':>10} {'~instr':>8}")
    for k, v in ops.most_common(a.top):
        c = (nhi[k] - nlo.get(k, 0)) / lives
        print(f"  {k[:48]:48} {c:>7.2f} {v:>10.1f} {total * v / all_ops:>8,.0f}")
    print(f"  {'(all Python functions)':48} {'':>7} {all_ops:>10.1f} {total:>8,.0f}")


if __name__ == "__main__":
    main()
