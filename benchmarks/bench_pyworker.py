"""The Python Workers host's cost, printed as a ratio against its peer measured in the same run: the same
object written against alarmkit's own API (``alarmkit.DurableObject``, snake_case storage) and loaded as
a Cloudflare Python Worker (``workers.DurableObject``, JS-named storage, SDK value conversion, isolated
module with its own clock). Both do the same work: N objects, each called once over RPC, then re-arming
R times from ``alarm()`` (a KV read and write each fire). No journal, so the runtime itself is the floor.

    python benchmarks/bench_pyworker.py            # 1,000 objects x 20 alarms
    python benchmarks/bench_pyworker.py --quick    # 100 x 20, a smoke run
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import alarmkit as ak

WORKER = '''
import time
from workers import DurableObject

class Ticker(DurableObject):
    async def start(self, n):
        await self.ctx.storage.put("left", n)
        await self.ctx.storage.setAlarm(int(time.time() * 1000) + 10)

    async def alarm(self):
        left = await self.ctx.storage.get("left")
        await self.ctx.storage.put("left", left - 1)
        if left > 1:
            await self.ctx.storage.setAlarm(int(time.time() * 1000) + 10)
'''


class Ticker(ak.DurableObject):
    async def start(self, n):
        await self.ctx.storage.put("left", n)
        await self.ctx.storage.set_alarm(self.ctx.now() + 10)

    async def alarm(self, info):
        left = await self.ctx.storage.get("left")
        await self.ctx.storage.put("left", left - 1)
        if left > 1:
            await self.ctx.storage.set_alarm(self.ctx.now() + 10)


def native(n: int, r: int) -> float:
    sim = ak.Simulation(seed=0)
    ns = sim.namespace("T", Ticker)
    t0 = time.perf_counter()
    sim.call(sim.gather(*(ns.get(f"o{i}").start(r) for i in range(n))))
    sim.run()
    return time.perf_counter() - t0


def worker(n: int, r: int, path: Path) -> float:
    sim = ak.Simulation(seed=0)
    w = sim.load_worker(path, bindings={"T": "Ticker"})
    t0 = time.perf_counter()
    sim.call(sim.gather(*(w.env.T.getByName(f"o{i}").start(r) for i in range(n))))
    sim.run()
    return time.perf_counter() - t0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--repeat", type=int, default=5)
    a = p.parse_args()
    n, r = (100, 20) if a.quick else (1_000, 20)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ticker.py"
        path.write_text(WORKER)
        times: dict[str, list[float]] = {"native": [], "worker": []}
        for _ in range(a.repeat):  # interleaved, so a busy machine slows both alike
            times["native"].append(native(n, r))
            times["worker"].append(worker(n, r, path))
        best_native, best_worker = min(times["native"]), min(times["worker"])
    fires = n * r
    print(f"{n:,} objects x {r} alarms ({fires:,} fires), best of {a.repeat}")
    print(f"  alarmkit object:      {fires / best_native:>10,.0f} fires/s")
    print(f"  Python Worker (host): {fires / best_worker:>10,.0f} fires/s  ({best_native / best_worker:.2f}x the native object)")


if __name__ == "__main__":
    main()
