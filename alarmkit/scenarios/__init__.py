"""Built-in scenarios. Importing this package registers them."""

from . import lease  # noqa: F401  (registers the lease-* scenarios)
from . import antipatterns  # noqa: F401  (registers lease-ledger and the six anti-pattern variants)
from . import guestbook  # noqa: F401  (registers guestbook-* and keepalive-celld-vs-workerd)
from . import pains_code, pains_platform  # noqa: F401  (registers the six prod-* scenarios)
from . import order  # noqa: F401  (registers order-handoff: a bug only another same-instant order shows)
from .registry import SCENARIOS, RunResult, Scenario, get_scenario, list_scenarios, run_scenario, scenario

__all__ = ["SCENARIOS", "RunResult", "Scenario", "get_scenario", "list_scenarios", "run_scenario", "scenario"]
