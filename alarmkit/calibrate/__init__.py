"""Calibration against the real runtime (``alarmkit calibrate``).

The lease ledger and the behaviour probes (``lab_probes.py``, ``behaviour_probes.py``,
named in ``catalogue.py``, run by ``runner.py``) run on a real ``workerd`` (the JavaScript twin in
``twin/``, driven by ``workerd.py``) and, unchanged, on the simulator (``simtwin.py`` transcribes
the twin, ``simbackend.SimWorkerd`` serves it). ``calibration.calibrate()`` runs both, imports the
real events into the journal (``importer.py``), judges every probe (``checks.py``); ``render.py``
draws and writes the results. ``reference()`` (``recorded.py``) loads the committed real run under
``alarmkit/calibrate/data/`` (shipped with the package); ``recheck(reference())`` compares today's simulator with it without Node;
``overlay_figure(probe)`` draws one probe's real and simulated timelines on one axis.
"""

from __future__ import annotations

import importlib
from typing import Any

# name -> submodule; imported on first use, so that `alarmkit --help` does not load the twins
_WHERE = {
    "Bands": "checks", "Check": "checks", "Verdict": "checks", "compare_results": "checks",
    "Calibration": "calibration", "calibrate": "calibration", "probe_names": "calibration", "recheck": "calibration",
    "run_real": "calibration", "run_sim": "calibration",
    "PROBES": "catalogue", "ProbeSpec": "catalogue", "run_probe": "runner", "run_probes": "runner",
    "reference": "recorded", "reference_path": "recorded", "write_reference": "recorded",
    "SimWorkerd": "simbackend",
    "WorkerdError": "workerd", "find_workerd": "workerd", "install_workerd": "workerd",
    "overlay_figure": "render", "text_table": "render", "write_html": "render", "band_figure": "render",
    "details_figure": "render", "overlay_events": "render",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        value = globals()[name] = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
        return value
    raise AttributeError(f"module 'alarmkit.calibrate' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
