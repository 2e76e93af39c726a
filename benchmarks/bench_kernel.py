"""Instructions per kernel step, counted by valgrind: the kernel alone, no runtime above it.

    python benchmarks/bench_kernel.py                # 2,000 timers, 50,000 vs 150,000 fires
    python benchmarks/bench_kernel.py --timers 20000

Each fire of a timer re-arms it at +1..1000 ms and queues one microtask, so a fire is one timer
step and one microtask step through ``Kernel.run()``. The child runs twice under
``valgrind --tool=cachegrind`` with two fire counts; the difference divided by the extra fires is
the cost of one fire with its microtask (imports and set-up cancel out), printed beside a SimPy
process doing one timeout per fire, counted the same way in the same run. The child is
``python -c``, so it imports the ``alarmkit`` of the current folder before any on PYTHONPATH: run it
from the root of the tree to be measured.
"""

from __future__ import annotations

import argparse
import shutil
import sys

CHILD = """
import gc, sys
gc.disable()
peer, timers, fires = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
delays = [(i * 7919) % 1000 + 1 for i in range(4096)]
left = [fires]
if peer == "simpy":
    import simpy
    env = simpy.Environment()
    def proc(env):
        while left[0] > 0:
            left[0] -= 1
            yield env.timeout(delays[left[0] & 4095])
    for i in range(timers):
        env.process(proc(env))
    env.run()
else:
    from alarmkit.kernel import Kernel
    k = Kernel(time_limit_ms=None)
    def micro(i):
        pass
    def tick(i):
        if left[0] > 0:
            left[0] -= 1
            k.call_at(k.now + delays[left[0] & 4095], tick, i)
            k.call_soon(micro, i)
    for i in range(timers):
        k.call_at(i % 1000, tick, i)
    k.run()
"""


def count(peer: str, timers: int, fires: int) -> int:
    from bench_instructions import valgrind_count  # this folder: the one valgrind run of the benchmarks

    return valgrind_count(peer, [CHILD, peer, str(timers), str(fires)])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--timers", type=int, default=2_000, help="timers in the heap (default 2,000)")
    ap.add_argument("--fires", type=int, nargs=2, default=(50_000, 150_000), metavar=("F1", "F2"),
                    help="the two fire counts whose difference is measured (default 50,000 150,000)")
    a = ap.parse_args()
    f1, f2 = a.fires
    if not 1 <= a.timers <= 1_000_000 or not 0 < f1 < f2:
        ap.error(f"need --timers in 1..1,000,000 and 0 < F1 < F2, got --timers {a.timers} --fires {f1} {f2}")
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed; install it (Debian: apt install valgrind)")
    per = {peer: (count(peer, a.timers, f2) - count(peer, a.timers, f1)) / (f2 - f1) for peer in ("simpy", "kernel")}
    print(f"instructions per fire ({a.timers:,} timers, fires {f1:,} vs {f2:,}, GC off):")
    print(f"  SimPy timeout                     {per['simpy']:>9,.0f}")
    print(f"  kernel timer + one microtask      {per['kernel']:>9,.0f}   {per['kernel'] / per['simpy']:.2f}x SimPy's")


if __name__ == "__main__":
    main()
