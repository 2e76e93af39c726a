"""Built-in scenarios. Importing this package registers them."""

from . import lease  # noqa: F401  (registers the lease-* scenarios)
from .registry import SCENARIOS, Scenario, get_scenario, list_scenarios, run_scenario, scenario

__all__ = ["SCENARIOS", "Scenario", "get_scenario", "list_scenarios", "run_scenario", "scenario"]
