"""Shared by the Python Workers tests: the fixture workers' folder and a loader."""

from pathlib import Path

import pytest

import alarmkit as ak

from pyworker_support import FIXTURES  # noqa: E402


@pytest.fixture
def load():
    """``load("ttl.py", CACHE="TtlCache", seed=0, **sim_kwargs) -> (sim, worker)``. The tests are about hosting
    Python Workers, not fire lateness: the simulation takes fire_latency="exact" (each fire 2 ms late) unless
    ``sim_kwargs`` says otherwise."""

    def make(name, seed=0, sim_kwargs=None, **bindings):
        sim = ak.Simulation(seed=seed, **{"fire_latency": "exact", **(sim_kwargs or {})})
        return sim, sim.load_worker(FIXTURES / name, bindings=bindings)

    return make
