"""Imported by the explorer's worker processes (``explore(modules=[...])``): registers the ``"worker"``
scenario there (``alarmkit.workers.runs``). Nothing else imports it."""

from .runs import register

register()
