"""A trivial re-arming alarm handler in JavaScript (under alarmkit's JS host) against the same handler
in Python, in one run: alarm lifecycles per second, the ratio, and where the JS host's time goes.

    python benchmarks/bench_js_worker.py                 # 200 objects x 100 re-arms, best of 3
    python benchmarks/bench_js_worker.py --objects 50 --rearms 40 --repeat 1

The JS host runs twice: as configured (each side polls the pipe before blocking when two CPUs are
there) and with polling off (``ALARMKIT_JSHOST_SPIN_US=0``), so the poll's worth is a ratio of one run.
Every run must be the workload: a fire whose alarm() did not end well stops the benchmark.
Each lifecycle is one fire, one ``alarm()`` that re-arms at a random +1..1000 ms, and the
scheduler's bookkeeping; no journal (the runtime alone). The JS peer is benchmarks/bench_js_rearm.js.
Where the time goes: the pipe round trips per lifecycle (counted), the share of wall time spent
inside ``Bridge.exchange`` (the pipe, JSON both ways and Node running the handler), and Python's
making of one alarm message and decode of its report, measured on their own.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def positive(lo: int, hi: int):
    def parse(text: str) -> int:
        try:
            n = int(text.replace(",", "").replace("_", ""))
        except ValueError:
            n = None
        if n is None or not lo <= n <= hi:
            raise argparse.ArgumentTypeError(f"expected a number in {lo:,}..{hi:,}, got {text}")
        return n
    return parse


def run_python(objects: int, rearms: int) -> tuple[float, int]:
    import alarmkit as ak

    class Rearm(ak.DurableObject):
        async def start(self, budget):
            self.left = budget
            await self.ctx.storage.set_alarm(self.ctx.now() + 1 + int(self.env.rng.random() * 1000))

        async def alarm(self, info):
            self.left -= 1
            if self.left > 0:
                await self.ctx.storage.set_alarm(self.ctx.now() + 1 + int(self.env.rng.random() * 1000))

    sim = ak.Simulation(seed=1)
    sim.env.rng = random.Random(1)  # its own source, as Math.random is the JS peer's
    ns = sim.namespace("R", Rearm)
    sim.call(sim.gather(*(ns.get(f"o{i}").start(rearms) for i in range(objects))))
    t0 = time.perf_counter()
    sim.run()
    return time.perf_counter() - t0, _fires(sim)


def _fires(sim) -> int:
    """The run's alarm lifecycles: fires whose alarm() ended well. A run with any other outcome is not
    the benchmark's workload (a broken host would fail fast and look fast), so it stops the benchmark."""
    kinds = [r.kind for r in sim.rows]
    bad = {k for k in kinds if k in ("handler_error", "retry_scheduled", "abandoned", "crash")}
    fires, ok = kinds.count("fire"), kinds.count("handler_ok")
    if bad or fires != ok:
        raise SystemExit(f"bench_js_worker: the run is not the benchmark's workload: {fires:,} fires, {ok:,} ended "
                         f"well, other outcomes {sorted(bad)}")
    return ok


def run_js(objects: int, rearms: int, poll: bool = True) -> tuple:
    import os

    import alarmkit as ak
    from alarmkit.workers.js import _bridge, load

    sim = ak.Simulation(seed=1)
    saved = os.environ.get("ALARMKIT_JSHOST_SPIN_US")
    if not poll:
        os.environ["ALARMKIT_JSHOST_SPIN_US"] = "0"  # read once, when the host starts
    try:
        w = load(sim, HERE / "bench_js_rearm.js", {"R": "Rearm"})
    finally:
        if saved is None:
            os.environ.pop("ALARMKIT_JSHOST_SPIN_US", None)
        else:
            os.environ["ALARMKIT_JSHOST_SPIN_US"] = saved
    sim.call(sim.gather(*(w.env.R.getByName(f"o{i}").start(rearms) for i in range(objects))))
    bridge = sim._js_bridge
    inside = [0.0]
    exchange = _bridge.Bridge.exchange

    def timed(self, *args):
        t = time.perf_counter()
        try:
            exchange(self, *args)
        finally:
            inside[0] += time.perf_counter() - t

    bridge.exchange = timed.__get__(bridge)
    proc = bridge.proc
    proc.send({"t": "stats"})
    node0 = proc.recv()
    trips0, polled0, blocked0 = proc.round_trips, proc.polled, proc.blocked
    t0 = time.perf_counter()
    sim.run()
    wall = time.perf_counter() - t0
    py_waits = (proc.polled - polled0, proc.blocked - blocked0)
    proc.send({"t": "stats"})
    node = proc.recv()
    node_s = (node["busy_ms"] - node0["busy_ms"]) / 1000
    node_waits = (node["polled"] - node0["polled"], node["blocked"] - node0["blocked"])
    return wall, _fires(sim), proc.round_trips - trips0 - 1, inside[0], node_s, py_waits, node_waits


def json_cost(n: int = 20_000) -> float:
    """Python's making of one alarm message (formatted, as the bridge does) and decode of its report,
    per pair, in seconds."""
    msg = {"t": "alarm", "iid": 17, "info": [0, 123456], "pid": 12345, "now": 123456}
    rep = json.dumps({"t": "turn", "ops": [["setAlarm", 17, 123999]], "done": [["p12345", True, None]]},
                     separators=(",", ":")).encode()
    from alarmkit.workers.js._bridge import _ALARM, _ints
    from alarmkit.workers.js._node import _decode

    t0 = time.perf_counter()
    for _ in range(n):
        (_ALARM % _ints(msg)).encode()
        _decode(rep.decode())
    return (time.perf_counter() - t0) / n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()),
                                 epilog="A lifecycle: one fire, its alarm() re-arming, and the scheduler's bookkeeping. "
                                        "x1.20 reads: the first figure is 1.2 times the second.")
    ap.add_argument("--objects", type=positive(1, 20_000), default=200, help="objects re-arming (default 200)")
    ap.add_argument("--rearms", type=positive(1, 10_000), default=100, help="re-arms per object (default 100)")
    ap.add_argument("--repeat", type=positive(1, 20), default=3, help="runs of each peer; the best counts (default 3)")
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    if args.objects * args.rearms > 2_000_000:
        print(f"bench_js_worker: {args.objects:,} objects x {args.rearms:,} re-arms is "
              f"{args.objects * args.rearms:,} lifecycles a run, past 2,000,000 (minutes of each peer); "
              "pass fewer --objects or --rearms", file=sys.stderr)
        return 2
    sys.path.insert(0, str(HERE.parent))
    from alarmkit.workers.js import available

    reason = available()
    if reason is not None:
        print(f"bench_js_worker: the JavaScript host cannot run here: {reason}", file=sys.stderr)
        return 2
    from alarmkit.workers.js._node import _spin_s

    from alarmkit.errors import AlarmkitError

    try:
        return _measure(args, _spin_s)
    except AlarmkitError as err:  # e.g. ALARMKIT_JSHOST_SPIN_US or _TIMEOUT_S out of range, a host that hung
        print(f"bench_js_worker: {err}", file=sys.stderr)
        return 2


def _measure(args: argparse.Namespace, _spin_s) -> int:
    py_best, js_best, off_best = None, None, None
    for _ in range(args.repeat):
        wall, fires = run_python(args.objects, args.rearms)
        py_best = min(py_best or (wall, fires), (wall, fires))
        js = run_js(args.objects, args.rearms)
        js_best = min(js_best or js, js)
        off = run_js(args.objects, args.rearms, poll=False)
        off_best = min(off_best or off, off)
    py_wall, py_fires = py_best
    js_wall, js_fires, trips, inside, node_s, py_waits, node_waits = js_best
    py_rate, js_rate = py_fires / py_wall, js_fires / js_wall
    off_rate = off_best[1] / off_best[0]
    spin_us = _spin_s() * 1e6
    share = lambda w: f"{w[0] / max(1, sum(w)):.0%}"  # noqa: E731
    pair = json_cost()
    print(f"lifecycles          python {py_fires:,}   js {js_fires:,}")
    print(f"lifecycles/s        python {py_rate:,.0f}   js {js_rate:,.0f}   (target for js: 20,000)")
    print(f"ratio js/python     {js_rate / py_rate:.2f}   (a lifecycle: one fire, its alarm() re-arming, the bookkeeping)")
    print(f"js, polling off     {off_rate:,.0f}/s (ALARMKIT_JSHOST_SPIN_US=0); polling {spin_us:g} us before blocking: "
          f"x{js_rate / off_rate:.2f}")
    print(f"answered polling    python {share(py_waits)}   node {share(node_waits)} of the waits for the other side")
    print(f"round trips         {trips / js_fires:.2f} per lifecycle")
    print(f"inside exchange     {inside / js_wall:.0%} of js wall time ({inside / js_fires * 1e6:.1f} us per lifecycle: "
          "pipe, JSON both ways, Node)")
    print(f"node busy           {node_s / js_fires * 1e6:.1f} us per lifecycle (Node: JSON both ways, the handler, "
          "the turn's end; includes the start() calls)")
    print(f"python json         {pair * 1e6:.1f} us per message pair (the alarm formatted, the report decoded)")
    print(f"rest (python)       {(js_wall - inside) / js_fires * 1e6:.1f} us per lifecycle (scheduler, tasks, gate)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
