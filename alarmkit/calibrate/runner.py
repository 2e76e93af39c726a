"""Running probes from the catalogue on one backend (a real ``WorkerdProcess`` or ``SimWorkerd``).
``alarmkit calibrate`` (``command.py``) is the command line; this module has none of its own."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional

from .catalogue import LONG, PROBES, QUICK
from .lab_probes import scenario_revival
from .workerd import WorkerdError, WorkerdProcess

__all__ = ["run_probe", "run_probes", "strip_events"]


def run_probe(wd: WorkerdProcess, name: str) -> dict:
    spec = PROBES[name]
    started = time.monotonic()
    have = getattr(wd, "compat_date", None)
    try:
        if spec.compat_date and have not in (spec.compat_date, "simulated"):
            raise WorkerdError(f"probe {name} needs a workerd started at compatibility date {spec.compat_date}, "
                               f"this one runs {have}: start WorkerdProcess(compat_date={spec.compat_date!r})")
        out = spec.fn(wd, **spec.kwargs)
    except Exception as e:  # keep the other probes' results
        out = {"probe": name, "error": f"{type(e).__name__}: {e}"}
    out["name"] = name
    out["long"] = spec.long
    out["wall_s"] = round(time.monotonic() - started, 2)
    return out


def run_probes(wd: WorkerdProcess, names: Optional[list[str]] = None, include_long: bool = False,
               parallel: int = 1) -> dict[str, dict]:
    """Run probes (default: all quick ones, plus long ones if ``include_long``).

    Probes that do not restart workerd run on up to ``parallel`` threads; restarting ones run
    afterwards, one at a time. ``revival`` reuses the ``exhaustion`` result when both are selected.
    """
    if names is None:
        names = QUICK + (LONG if include_long else [])
    plain = [n for n in names if not PROBES[n].restarts]
    restarting = [n for n in names if PROBES[n].restarts]
    results: dict[str, dict] = {}
    if parallel > 1 and len(plain) > 1:
        with ThreadPoolExecutor(max_workers=parallel) as ex:
            for n, r in zip(plain, ex.map(lambda n: run_probe(wd, n), plain)):
                results[n] = r
    else:
        for n in plain:
            results[n] = run_probe(wd, n)
    for n in restarting:
        if n == "revival" and "exhaustion" in results and "error" not in results["exhaustion"]:
            started = time.monotonic()
            try:
                r = scenario_revival(wd, after_exhaustion=True, exhaustion=results["exhaustion"])
            except Exception as e:
                r = {"probe": n, "error": f"{type(e).__name__}: {e}"}
            r.update(name=n, long=True, wall_s=round(time.monotonic() - started, 2))
            results[n] = r
        else:
            results[n] = run_probe(wd, n)
    return results


def strip_events(res: Any) -> Any:
    """Copy of a result tree without the bulky ``events`` lists."""
    if isinstance(res, dict):
        return {k: strip_events(v) for k, v in res.items() if k != "events"}
    if isinstance(res, list):
        return [strip_events(v) for v in res]
    return res
