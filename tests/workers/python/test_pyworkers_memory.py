"""``memory_limit_mb``: one step of a Python Worker's code that grows the process's memory past the limit is
stopped by the watchdog with a one-line ``RunawayError`` naming the object, the step, the line and the limit;
the same loop under the limit runs; bad values are refused. Linux only (``/proc/self/statm``)."""

from __future__ import annotations

import gc
import types
from pathlib import Path

import pytest

import alarmkit as ak
from alarmkit.workers.python._contain import RSS_AVAILABLE, rss_pages, PAGE_MB

from pyworker_support import kinds

pytestmark = pytest.mark.skipif(not RSS_AVAILABLE, reason="memory_limit_mb reads /proc/self/statm (Linux)")

HOG = '''
from workers import DurableObject
{top}
class W(DurableObject):
    def __init__(self, ctx, env):
        super().__init__(ctx, env)
        {ctor}

    async def arm(self):
        await self.ctx.storage.setAlarm(1_000)

    async def alarm(self):
        xs = []
        while len(xs) < {chunks}:
            try:
                xs.append(bytearray(1 << 20))
            except Exception:
                pass
        self.ctx.storage.kv.put("kept", len(xs))

    async def ok(self):
        return "still here"
'''
FOREVER = 10**9
LOOP = "xs = []\nwhile True:\n    xs.append(bytearray(1 << 20))\n"


def load(tmp_path: Path, chunks: int = FOREVER, top: str = "", ctor: str = "pass", **sim_kw):
    (tmp_path / "src").mkdir(parents=True, exist_ok=True)
    (tmp_path / "src" / "entry.py").write_text(HOG.format(chunks=chunks, top=top, ctor=ctor))
    sim = ak.Simulation(seed=0, **sim_kw)
    w = sim.load_worker(tmp_path / "src" / "entry.py", bindings={"W": "W"})
    return sim, w, w.env.W.getByName("a")


def worker_frames() -> list:
    gc.collect()
    return [o for o in gc.get_objects() if isinstance(o, types.FrameType) and o.f_code.co_name == "alarm"
            and o.f_code.co_filename.endswith("entry.py")]


def test_an_alarm_that_allocates_forever_stops_in_one_line_at_its_virtual_time_and_lets_go(tmp_path):
    sim, w, a = load(tmp_path, memory_limit_mb=64)
    sim.call(a.arm())
    before = rss_pages() * PAGE_MB
    with pytest.raises(ak.RunawayError) as err:
        sim.run()
    text = str(err.value)
    assert "\n" not in text and text.startswith("object a (alarm) grew the process's memory by ")
    grew = int(text.split(" by ")[1].split(" MB")[0].replace(",", ""))
    assert 64 < grew < 64 + 200  # past the limit, and stopped within a few of the watchdog's 10 ms looks
    line = text.split("entry.py:")[1].split(" ")[0]
    assert line in ("14", "15", "16", "17")  # the loop's lines: where the watchdog's exception landed
    assert (" MB in one step without returning to the simulation (memory_limit_mb=64), stopped at "
            f"{tmp_path / 'src' / 'entry.py'}:{line} (an allocation that never ends") in text
    assert text.endswith("the object was reset as a crash resets it; if the code needs the memory, raise the limit: "
                         "Simulation(memory_limit_mb=...) or sim.memory_limit_mb = None for no limit "
                         "(alarmkit worker --memory-limit MB)")
    assert sim.now == 1_001  # the alarm's fire (set for 1,000, delivered at 1,001): the stop's virtual time
    assert [k[2] for k in kinds(sim, "crash")] == ["crash"]
    assert worker_frames() == []  # nothing keeps the stopped frame, so its 64 MB are free again
    assert rss_pages() * PAGE_MB - before < 32
    assert sim.call(a.ok()) == "still here"  # the simulation goes on


def test_the_same_loop_under_the_limit_runs_to_its_end(tmp_path):
    sim, w, a = load(tmp_path, chunks=48, memory_limit_mb=128)
    sim.call(a.arm())
    sim.run(until=5_000)
    assert [k[:3] for k in kinds(sim, "handler_ok", "crash")] == [(1_001, "a", "handler_ok")]


def test_no_limit_lets_a_step_grow_past_the_limit_it_would_meet(tmp_path):
    sim, w, a = load(tmp_path, chunks=160, memory_limit_mb=None)
    assert sim.memory_limit_mb is None and ak.Simulation().memory_limit_mb == 2_048
    sim.memory_limit_mb = 16  # set on the simulation after the load: read at each run
    sim.call(a.arm())
    with pytest.raises(ak.RunawayError, match=r"\(memory_limit_mb=16\)"):
        sim.run()
    assert sim.now == 1_001
    sim.memory_limit_mb = None
    sim.call(a.arm())
    sim.run(until=5_000)
    assert [k[:3] for k in kinds(sim, "handler_ok", "crash")] == [(1_001, "a", "crash"), (3_434, "a", "handler_ok")]


def test_a_constructor_and_the_module_top_are_bounded_too(tmp_path):
    sim, w, a = load(tmp_path, ctor=LOOP.replace("\n", "\n        ").strip(), memory_limit_mb=48)
    with pytest.raises(ak.RunawayError, match=r"^object a \(the constructor\) grew the process's memory by [\d,]+ MB "
                                              r".*memory_limit_mb=48.*entry\.py:9 "):
        sim.call(a.ok())
    with pytest.raises(ak.WorkerError, match=r"^importing .*entry\.py grew the process's memory by [\d,]+ MB .*"
                                             r"stopped at .*entry\.py:5 .*: the worker was not loaded; if the code "
                                             r"needs the memory, raise the limit"):
        load(tmp_path / "top", top=LOOP, memory_limit_mb=48)


@pytest.mark.parametrize("bad", [0, -5, 1.5, True, "64", (1 << 20) + 1, float("nan")])
def test_a_bad_memory_limit_is_refused_naming_it_the_range_and_none(bad):
    with pytest.raises(ak.InvalidValue) as err:
        ak.Simulation(memory_limit_mb=bad)
    assert str(err.value) == f"memory_limit_mb must be a whole number of MB in 1..1,048,576 or None (no limit), got {bad!r}"
    sim = ak.Simulation()
    with pytest.raises(ak.InvalidValue, match=r"^memory_limit_mb must be a whole number of MB in 1\.\.1,048,576"):
        sim.memory_limit_mb = bad
    assert sim.memory_limit_mb == 2_048  # unchanged by the refusal
    from alarmkit.workers import run_worker

    with pytest.raises(ak.InvalidValue, match=r"^memory_limit_mb must be a whole number"):
        run_worker(None, "drive.json", memory_limit_mb=bad)


def test_where_resident_memory_cannot_be_read_the_budget_checks_nothing_and_breaks_nothing(tmp_path, monkeypatch):
    from alarmkit.workers.python import _contain

    monkeypatch.setattr(_contain, "RSS_AVAILABLE", False)  # as on macOS or Windows: no /proc/self/statm
    assert _contain.rss_pages() == 0
    sim, w, a = load(tmp_path, chunks=64, memory_limit_mb=16)
    sim.call(a.arm())
    sim.run(until=5_000)
    assert [k[:3] for k in kinds(sim, "handler_ok", "crash")] == [(1_001, "a", "handler_ok")]
