"""Helpers of the Python Workers tests, in a module of its own (several test folders have a
conftest.py, so ``from conftest import`` is ambiguous): the fixture workers' folder and the journal
rows of some kinds."""

from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"


def kinds(sim, *wanted):
    """(t_ms, object, kind, scheduled_ms) of the journal rows of these kinds."""
    ev = sim.events()
    ev = ev[ev["kind"].isin(wanted)]
    import pandas as pd

    return [(int(t), None if pd.isna(o) else o, k, None if pd.isna(s) else int(s))
            for t, o, k, s in zip(ev["t_ms"], ev["object_id"], ev["kind"], ev["scheduled_ms"].astype(object))]
