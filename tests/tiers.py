"""The test tiers' rules, one home (tests/README.md): read by tests/conftest.py, tests/test_tiers.py,
tests/profile_table.py and the tests that scale their Hypothesis examples (``tier_examples``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
COSTS = HERE / "costs.json"
QUICK_MAX_CPU = 1.0  # CPU seconds (this process + its children) above which a measured test leaves the quick tier
NOT_QUICK = ("browser", "notebook", "workerd", "slow", "long", "costly")
TIER = os.environ.get("ALARMKIT_TEST_TIER", "full")  # set by dev.py: quick for --quick, full otherwise
ALL_ITEMS = pytest.StashKey[list]()  # every collected test, before -m deselects (tests/test_tiers.py)


def tier_examples(n: int) -> int:
    """``n`` Hypothesis examples in the full tier, a tenth of them (at least 3) in the quick one: a test's own
    ``@settings(max_examples=...)`` wins over the profile, so tests write ``max_examples=tier_examples(n)``."""
    return max(3, n // 10) if TIER == "quick" else n


def load_hypothesis_profile() -> None:
    """``quick``: 10 examples a test; ``full``: Hypothesis's 100. Neither has a deadline (timing is the
    machine's, not the code's)."""
    from hypothesis import settings

    settings.register_profile("quick", max_examples=10, deadline=None)
    settings.register_profile("full", deadline=None)
    settings.load_profile("quick" if TIER == "quick" else "full")


def measured_costs() -> dict[str, float]:
    """nodeid -> CPU seconds at the last ``dev.py test --profile`` (tests/costs.json); empty when absent."""
    try:
        return json.loads(COSTS.read_text(encoding="utf-8"))["cpu"]
    except (OSError, ValueError, KeyError):
        return {}
