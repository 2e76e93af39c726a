"""Fixtures shared by test files, and the test tiers (tests/README.md).

``python3 dev.py test --quick`` runs the tests marked ``quick``; the mark is generated here at collection,
never written by hand: a test is quick unless it needs more than this process (``browser``, ``workerd``,
``notebook``), is marked ``slow`` or ``long``, or cost more than ``QUICK_MAX_CPU`` CPU seconds when last
measured (marked ``costly`` here, from tests/costs.json, written by ``python3 dev.py test --profile``).
tests/tiers.py holds the rules; tests/test_tiers.py fails when a package of alarmkit has no quick test.
"""

import fcntl
import json
import os
import subprocess
import sys

import pytest

from chromium_paths import BROWSER_ARGS, CHROMIUM  # noqa: F401 - tests/chromium_paths.py
from tiers import ALL_ITEMS, NOT_QUICK, QUICK_MAX_CPU, load_hypothesis_profile, measured_costs

pytest_plugins = ("cpu_profile",)  # --cpu-profile=PATH: each test's CPU seconds (tests/cpu_profile.py)

load_hypothesis_profile()


@pytest.fixture(scope="session")
def workerd_binary() -> str:
    """The real workerd binary, or a skip saying how to get it (it needs Node.js and npm)."""
    from alarmkit.calibrate.workerd import find_workerd, workerd_version

    binary = find_workerd()
    if binary is None:
        pytest.skip("workerd is not installed (`alarmkit calibrate --install-only`, needs Node.js)")
    try:
        workerd_version(binary)
    except (OSError, subprocess.SubprocessError, RuntimeError) as e:
        pytest.skip(f"workerd at {binary} does not run here: {e}")
    return binary


# The demo, run in a child process of its own (no scenario another test registered in this process leaks in)
DEMO_CHILD = """
import contextlib, io, json, os, sys
from alarmkit.demo import run_demo
folder = sys.argv[1]
printed = io.StringIO()
with contextlib.redirect_stdout(printed):
    results = run_demo(db=os.path.join(folder, "j.duckdb"), out=os.path.join(folder, "reports"), seed=1)
with open(os.path.join(folder, "results.json.part"), "w") as f:
    json.dump({"results": results, "printed": printed.getvalue()}, f)
os.replace(os.path.join(folder, "results.json.part"), os.path.join(folder, "results.json"))
"""


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory):
    """``alarmkit demo`` (seed 1) run once per test session: ``(folder, results, printed)``, the folder
    holding ``j.duckdb`` and ``reports/``. Under pytest-xdist the workers share one run: the first to
    ask runs it in a child process under a file lock, the others wait for it and read what it wrote
    (results as JSON). Read it; copy a file before changing it."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # pytest-N/, which holds every worker's popen-gwK/
    folder = root / "demo-shared"
    with open(root / "demo-shared.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not (folder / "results.json").exists() and not (folder / "failed.txt").exists():
                folder.mkdir(exist_ok=True)
                child = subprocess.run([sys.executable, "-c", DEMO_CHILD, str(folder)],
                                       capture_output=True, text=True, timeout=1800)
                if child.returncode != 0:
                    (folder / "failed.txt").write_text(child.stderr[-5000:] or f"exit {child.returncode}")
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    if (folder / "failed.txt").exists():
        pytest.fail("the shared demo run failed:\n" + (folder / "failed.txt").read_text(), pytrace=False)
    data = json.loads((folder / "results.json").read_text())
    return folder, data["results"], data["printed"]


@pytest.fixture(scope="module")
def browser():
    """Headless Debian Chromium through Playwright, one per test module."""
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        yield b
        b.close()


NOTEBOOK_FILES = {"test_notebooks.py", "test_notebook_html.py", "test_notebook_bundle.py", "test_jupyterlab_browser.py"}


@pytest.hookimpl(tryfirst=True)  # before -m (the mark plugin) deselects by the marks given here
def pytest_collection_modifyitems(config, items):
    """Mark what needs more than this process: ``browser`` (a test using headless Chromium),
    ``workerd`` (a test using real workerd), ``notebook`` (a real Jupyter kernel or JupyterLab), so
    that ``python3 dev.py test --quick`` can leave them out.

    Tests marked ``leaves_threads`` run last. A Dask cluster run in this process leaves threads
    behind it, and a process pool forked after that may lose a worker (a full run once failed with
    BrokenProcessPool in test_explore's pool test, which used to run after test_dask_sweep)."""
    costs = measured_costs()
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if "browser" in names:
            item.add_marker(pytest.mark.browser)
        if "workerd_binary" in names:
            item.add_marker(pytest.mark.workerd)
        if item.path.name in NOTEBOOK_FILES:
            item.add_marker(pytest.mark.notebook)
        if costs.get(item.nodeid, 0.0) > QUICK_MAX_CPU:
            item.add_marker(pytest.mark.costly)
        if not any(item.get_closest_marker(name) for name in NOT_QUICK):
            item.add_marker(pytest.mark.quick)
    config.stash[ALL_ITEMS] = list(items)  # before -m deselects: tests/test_tiers.py reads the whole suite
    items.sort(key=lambda item: item.get_closest_marker("leaves_threads") is not None)  # stable
