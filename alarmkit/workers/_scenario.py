"""Imported by the explorer's worker processes (``explore(modules=[...])``): registers the ``"worker"``
scenario there (``alarmkit.workers.runs``). Nothing else imports it."""

from ..scenarios import scenario
from .runs import DESCRIPTION, SCENARIO, scenario_fn

scenario(SCENARIO, DESCRIPTION)(scenario_fn)
