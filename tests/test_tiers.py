"""The test tiers (tests/README.md): the quick tier is generated at collection (tests/tiers.py), covers
every package of alarmkit, and its measured cost fits the two minutes ``python3 dev.py test --quick`` has."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import tiers

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
# the quick tier's budget: 2 minutes wall on 2 cores is 240 CPU-seconds, less the workers' start and
# collection (about 15 s each) and room for the tests added before the next `dev.py test --profile`
QUICK_CPU_BUDGET = 150.0


def packages() -> list[str]:
    """Every package of alarmkit, dotted: alarmkit, alarmkit.kernel, alarmkit.workers.js, ..."""
    return sorted(".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "alarmkit").rglob("__init__.py"))


def imported(path: Path) -> set[str]:
    """The alarmkit modules a test file imports (``from alarmkit import x`` counts as ``alarmkit.x``)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return {m for m in found if m.split(".")[0] == "alarmkit"}


def packages_of(path: Path) -> set[str]:
    """The packages a test file tests: those it imports, and the one its folder mirrors (tests/workers/js/ ->
    alarmkit.workers.js), each with the packages above it."""
    rel = path.relative_to(TESTS).parent.parts
    modules = imported(path) | ({".".join(("alarmkit", *rel))} if rel else set())
    return {".".join(m.split(".")[:i]) for m in modules for i in range(1, m.count(".") + 2)}


def quick_files(config) -> set[Path]:
    """The files holding a quick test, from this session when it collected the whole suite, else from a
    collection in a child (``pytest --collect-only -m quick``)."""
    items = config.stash.get(tiers.ALL_ITEMS, [])
    every = {p.resolve() for p in TESTS.rglob("test_*.py")}
    if {Path(str(i.path)).resolve() for i in items} >= every:
        return {Path(str(i.path)).resolve() for i in items if i.get_closest_marker("quick")}
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "quick", "-p", "no:cacheprovider",
                          str(TESTS)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return {(ROOT / line.split("::")[0]).resolve() for line in out.stdout.splitlines() if "::" in line}


def test_every_package_has_a_quick_test(request):
    files = quick_files(request.config)
    covered = set().union(*(packages_of(f) for f in files))
    missing = [p for p in packages() if p not in covered]
    assert not missing, (f"no quick test imports or mirrors {missing}: add a cheap test of its main path (under "
                         f"{tiers.QUICK_MAX_CPU} CPU-seconds, no browser/notebook/workerd) in tests/<package>/")


def test_a_package_without_a_quick_test_is_named(tmp_path):
    # the check above can fail: a folder's file that imports nothing of alarmkit still counts for its package,
    # a file elsewhere counts only for what it imports
    assert packages_of(TESTS / "workers" / "js" / "test_js_pipe.py") >= {"alarmkit", "alarmkit.workers", "alarmkit.workers.js"}
    stray = TESTS / "test_tiers.py"
    assert "alarmkit.kernel" not in packages_of(stray) and "alarmkit.journal" not in packages_of(stray)
    assert {"alarmkit.kernel", "alarmkit.workers.js"} <= set(packages())


def test_the_quick_mark_is_generated_from_marks_and_measured_cost(request):
    items = request.config.stash.get(tiers.ALL_ITEMS, [])
    costs = tiers.measured_costs()
    for item in items:
        excluded = [m for m in tiers.NOT_QUICK if item.get_closest_marker(m)]
        assert bool(item.get_closest_marker("quick")) == (not excluded), item.nodeid
        if costs.get(item.nodeid, 0.0) > tiers.QUICK_MAX_CPU:
            assert item.get_closest_marker("costly"), item.nodeid


def test_the_quick_tier_fits_its_budget():
    costs = tiers.measured_costs()
    if not costs:
        pytest.skip("no tests/costs.json: `python3 dev.py test --profile` measures the suite")
    data = json.loads(tiers.COSTS.read_text(encoding="utf-8"))
    quick = sum(c for node, c in costs.items() if node in set(data["quick"]))
    assert quick <= QUICK_CPU_BUDGET, (f"the quick tier measured {quick:.0f} CPU-s, over its {QUICK_CPU_BUDGET:.0f}: "
                                       f"lower tests/tiers.py's QUICK_MAX_CPU or make the costliest quick tests cheaper")
