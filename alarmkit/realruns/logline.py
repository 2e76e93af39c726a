"""The one-line JSON log convention: how an object tells alarmkit what it did with its alarm.

One ``console.log`` per event, its only argument a JSON string (or an object) with ``"alarmkit": 1``::

    console.log(JSON.stringify({alarmkit: 1, ev: "arm", obj: "ledger-1", t: Date.now(), at: t}))

``ev`` is one of ``construct``, ``arm`` (``at``: the time passed to setAlarm), ``disarm``,
``get`` (``value``: what getAlarm returned), ``call`` (``method``), ``effect`` (``name``, ``key``),
``alarm_start`` (``scheduledTime``, ``retryCount``, ``isRetry``), ``alarm_end``, ``alarm_throw``
(``error``, ``message``). ``obj`` names the object (``ctx.id.name``), ``id`` may carry its hex id,
``t`` is ``Date.now()``. ``alarmkit/realruns/js/recorded.js`` writes exactly these lines.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["parse_line", "EVENTS"]

EVENTS = ("construct", "arm", "disarm", "get", "call", "effect", "alarm_start", "alarm_end", "alarm_throw")


def parse_line(message: list) -> dict | None:
    """The convention's record in one log entry's arguments, or None when it is an ordinary log line."""
    if len(message) != 1:
        return None
    m: Any = message[0]
    if isinstance(m, str):
        if not m.startswith("{") or '"alarmkit"' not in m:
            return None
        try:
            m = json.loads(m)
        except ValueError:
            return None
    if not isinstance(m, dict) or m.get("alarmkit") != 1 or m.get("ev") not in EVENTS:
        return None
    return m
