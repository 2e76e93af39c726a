"""The hash seed and a Python Worker's determinism (docs/workers.md, "The hash seed"): a worker that iterates
a set of strings journals the same rows in two processes with the same ``PYTHONHASHSEED``, and its order
follows the seed (so a process with another seed, or Python's random one, may journal another order)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

WORKER = '''
from workers import DurableObject

class W(DurableObject):
    async def go(self):
        for name in {"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"}:
            print(name)
'''
DRIVE = '''
import sys
import alarmkit as ak
sim = ak.Simulation(seed=0)
w = sim.load_worker(sys.argv[1], bindings={"W": "W"})
sim.call(w.env.W.getByName("a").go())
ev = sim.events()
print(",".join(t.split('"text":"')[1].split('"')[0] for t in ev[ev["kind"] == "console"]["detail"]))
'''


def journal_order(tmp_path: Path, seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    out = subprocess.run([sys.executable, "-c", DRIVE, str(tmp_path / "entry.py")], env=env, capture_output=True,
                         text=True, timeout=120, check=True)
    return out.stdout.strip()


def test_the_same_hash_seed_gives_the_same_journal_another_seed_another_order(tmp_path):
    (tmp_path / "entry.py").write_text(WORKER)
    first, again = journal_order(tmp_path, "0"), journal_order(tmp_path, "0")
    other = journal_order(tmp_path, "1")
    assert sorted(first.split(",")) == ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
    assert first == again
    assert sorted(other.split(",")) == sorted(first.split(",")) and other != first  # the seed decides the order
