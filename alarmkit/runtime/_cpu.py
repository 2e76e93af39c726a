"""What running code costs the virtual clock: ``Simulation(cpu_time=...)`` (docs/runtime.md, "The clock while code runs").

On workerd one isolate runs one thing at a time: a synchronous loop of ~650 ms inside ``alarm()`` moved
``Date.now()`` and ``performance.now()`` by that much, and another object's alarm due meanwhile started that
much late (probe ``cpu_loop``, round 3 on workerd 1.20261117.1). alarmkit's default is that code costs no
virtual time (deterministic: the same seed, the same journal). ``cpu_time="measured"`` charges each kernel
step's own real time, in whole ms, to the clock (``Kernel.charge``); ``cpu_time=N`` charges N ms at the end of
every ``alarm()`` run (deterministic). Each charge is journaled as a ``cpu`` event (``detail.ms``, ``what``
ran); a fire it delayed starts late by that much, so the timeline shows which handler's loop delayed it."""

from __future__ import annotations

from typing import Any

from ..errors import InvalidValue

__all__ = ["cpu_charge", "parse_cpu_time", "CPU_FIXED_MAX_MS"]

CPU_FIXED_MAX_MS = 900_000  # workerd's wall-clock limit of one alarm() run: 15 minutes


def cpu_charge(value: Any) -> int:
    """The fixed charge per ``alarm()`` run that ``cpu_time`` asks for (0: none, or measured instead)."""
    if value is None or value == "measured":
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= CPU_FIXED_MAX_MS:
        raise InvalidValue(f"Simulation(cpu_time=...) takes None (code costs no time), \"measured\" (each step's real "
                           f"time, not deterministic) or an int of ms per alarm() run in 0..{CPU_FIXED_MAX_MS:,}, "
                           f"got {value!r}")
    return value


def parse_cpu_time(text: str) -> str | int:
    """``--cpu-time`` on the command line: "measured", or whole ms per ``alarm()`` run; ValueError naming the range."""
    if text == "measured":
        return text
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= CPU_FIXED_MAX_MS:
        shown = text[:40] if text.lstrip("-").isdigit() else repr(text[:40])
        raise ValueError(f"takes \"measured\" or whole ms per alarm() run in 0..{CPU_FIXED_MAX_MS:,}, got {shown}")
    return value
