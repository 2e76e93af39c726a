"""Shared by the Python Workers tests: the fixture workers' folder and a loader."""

from pathlib import Path

import pytest

import alarmkit as ak

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def load():
    """``load("ttl.py", CACHE="TtlCache", seed=0, **sim_kwargs) -> (sim, worker)``."""

    def make(name, seed=0, sim_kwargs=None, **bindings):
        sim = ak.Simulation(seed=seed, **(sim_kwargs or {}))
        return sim, sim.load_worker(FIXTURES / name, bindings=bindings)

    return make


def kinds(sim, *wanted):
    """(t_ms, object, kind, scheduled_ms) of the journal rows of these kinds."""
    ev = sim.events()
    ev = ev[ev["kind"].isin(wanted)]
    import pandas as pd

    return [(int(t), None if pd.isna(o) else o, k, None if pd.isna(s) else int(s))
            for t, o, k, s in zip(ev["t_ms"], ev["object_id"], ev["kind"], ev["scheduled_ms"].astype(object))]
