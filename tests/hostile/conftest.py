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

import tiers  # noqa: E402 - tests/tiers.py: the quick or full Hypothesis profile this one builds on

settings.register_profile(
    "hostile", settings.get_profile(tiers.TIER), derandomize=True, deadline=None, print_blob=True, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
)
settings.load_profile("hostile")

_started: list[float] = []
HERE = Path(__file__).parent


def pytest_collection_modifyitems(config, items):
    """A hang is a failure, not a stuck CI job: no test of this folder may run longer than 240 s."""
    for item in items:
        if HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.timeout(240))


def pytest_collection_finish(session):
    import time

    _started.append(time.monotonic())


def pytest_terminal_summary(terminalreporter):
    """One line: the inputs run per command and the time the hostile suite took (the closing note's counts)."""
    import time

    from harness import COUNTS

    if COUNTS and _started:
        shown = ", ".join(f"{k}: {v}" for k, v in sorted(COUNTS.items()))
        terminalreporter.write_line(f"hostile inputs run: {shown}; total {sum(COUNTS.values())} "
                                    f"in {time.monotonic() - _started[0]:.0f} s")


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
