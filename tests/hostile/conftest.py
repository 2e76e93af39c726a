"""The hostile suite: every command and the public constructors under generated hostile input.

Hypothesis runs derandomized (a fixed seed: the same inputs every run, in CI and here) with a
small number of examples per test, so the whole folder stays under three minutes on two cores
(``pytest tests/hostile`` prints the time each test took with ``--durations=0``). Commands run in
a child under ``resource`` limits (``harness.run_cli``) where a limit or a left-over process is the
point, and in this process (``harness.run_main``) where many inputs are.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).parent))  # harness.py and strategies.py, imported by name

settings.register_profile(
    "hostile", derandomize=True, deadline=None, print_blob=True, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
)
settings.load_profile("hostile")


@pytest.fixture(scope="session")
def journal_with_runs(tmp_path_factory):
    """A small journal with two runs (lease-normal, lease-exhaustion), made once; tests copy it."""
    from alarmkit import Journal
    from alarmkit.scenarios import run_scenario

    path = tmp_path_factory.mktemp("hostile-journal") / "runs.duckdb"
    with Journal(path) as j:
        run_scenario("lease-normal", seed=1, journal=j)
        run_scenario("lease-exhaustion", seed=1, journal=j)
    return path
