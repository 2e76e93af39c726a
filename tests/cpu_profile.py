"""A pytest plugin: the CPU time each test costs, written as JSON lines with ``--cpu-profile=PATH``.

Wall time (pytest's ``--durations``) depends on what else the machine runs; CPU time does not (much):
each test's CPU is this process's (``time.process_time``) plus that of the child processes it waited
for (``resource.RUSAGE_CHILDREN``: a CLI subprocess, a Jupyter kernel, workerd, Chromium's driver), over
its set-up, call and tear-down. A session- or module-scoped fixture is charged to the first test using it.
``tests/profile_table.py`` turns the JSON into the table in tests/README.md (``python3 dev.py test --profile``).
Under xdist each worker writes ``PATH`` with its id added; the table script reads them all. A line is
written as each test ends, so a run stopped part-way still says what its tests cost.
"""

from __future__ import annotations

import json
import os
import resource
import time
from pathlib import Path

import pytest


def pytest_addoption(parser):
    parser.addoption("--cpu-profile", metavar="PATH", default=None,
                     help="write each test's CPU seconds (this process + its children), wall seconds and markers as JSON lines")


def _children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if not item.config.getoption("--cpu-profile"):
        yield
        return
    cpu, kids, wall = time.process_time(), _children(), time.perf_counter()
    yield
    _write(item.config, {
        "nodeid": item.nodeid,
        "file": item.nodeid.split("::")[0],
        "cpu": round(time.process_time() - cpu, 4),
        "children": round(_children() - kids, 4),
        "wall": round(time.perf_counter() - wall, 4),
        "markers": sorted({m.name for m in item.iter_markers()}),
        "outcome": getattr(item, "_cpu_outcome", "passed"),
    })


def _path(config) -> Path:
    out = Path(config.getoption("--cpu-profile"))
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    return out.with_name(f"{out.stem}.{worker}{out.suffix}") if worker else out


def _write(config, record: dict) -> None:
    with open(_path(config), "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.skipped and getattr(item, "_cpu_outcome", None) is None:
        item._cpu_outcome = "skipped"
    elif report.failed:
        item._cpu_outcome = "failed"


def pytest_sessionstart(session):
    if session.config.getoption("--cpu-profile"):
        path = _path(session.config)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("", encoding="utf-8")
