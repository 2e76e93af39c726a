"""The package's shape: no import cycles (function-level imports included), and built-ins that
use the public API only. Both read the source with ``ast``; nothing is imported."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "alarmkit"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def resolve(mod: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def import_graph(include_type_checking: bool = False) -> dict[str, set[str]]:
    """Module -> the alarmkit modules it imports anywhere in its body (lazy imports included).

    ``from pkg import name`` counts as an import of ``pkg.name`` when that is a module, else of
    ``pkg``. Imports under ``if TYPE_CHECKING:`` never run and are left out unless asked for."""
    mods = modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        tree = ast.parse(path.read_text(), str(path))
        skip: set[int] = set()
        if not include_type_checking:
            for node in ast.walk(tree):
                if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                    skip.update(id(n) for b in node.body for n in ast.walk(b))
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = resolve(mod, is_pkg, node)
                for a in node.names:
                    full = f"{base}.{a.name}"
                    targets.append(full if full in mods else base)
            for t in targets:
                if t in mods and t != mod:
                    graph[mod].add(t)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def layers(graph: dict[str, set[str]]) -> list[list[str]]:
    """Modules by depth: layer 0 imports no alarmkit module; layer n imports only layers below n.
    Modules on a cycle have no layer and are left out (``cycles`` names them)."""
    depth: dict[str, int] = {}
    remaining = dict(graph)
    n = 0
    while remaining:
        ready = sorted(m for m, deps in remaining.items() if all(d in depth for d in deps if d != m))
        if not ready:
            break
        for m in ready:
            depth[m] = n
            del remaining[m]
        n += 1
    return [sorted(m for m, d in depth.items() if d == i) for i in range(n)]


def print_layers() -> None:  # pragma: no cover - run by hand: python tests/test_architecture.py
    graph = import_graph()
    for i, layer in enumerate(layers(graph)):
        print(f"layer {i}: {', '.join(m.removeprefix('alarmkit.') or 'alarmkit' for m in layer)}")
    placed = {m for layer in layers(graph) for m in layer}
    above = sorted(m.removeprefix("alarmkit.") or "alarmkit" for m in graph if m not in placed)
    if above:
        print(f"no layer (on or above a cycle): {', '.join(above)}")
    for comp in cycles(graph):
        print("cycle:", " <-> ".join(m.removeprefix("alarmkit.") for m in comp))


# -- the tests ---------------------------------------------------------------------------------------------
def test_graph_sees_lazy_and_relative_imports():
    graph = import_graph()
    assert "alarmkit.kernel" in graph["alarmkit"]  # from .kernel import ... in __init__
    assert "alarmkit.journal._events" in graph["alarmkit.journal"]  # relative, inside a face
    # cycles() finds a cycle when there is one, and names every module on it
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles():
    found = cycles(import_graph())
    assert not found, "import cycles (lazy imports included): " + "; ".join(" <-> ".join(c) for c in found)


# -- the wings: one import rule, types included ---------------------------------------------------------------
FLOOR = {"alarmkit.errors", "alarmkit._checks", "alarmkit._files", "alarmkit._paths", "alarmkit._version",
         "alarmkit._public", "alarmkit._text", "alarmkit._signals", "alarmkit._aliases"}
# the order the package reads in, bottom up; wings of one rank may use each other's public modules
RANK = {"floor": 0, "kernel": 1, "journal": 2, "runtime": 3, "scenarios": 4, "viz": 5, "diff": 6, "explore": 7,
        "calibrate": 8, "realruns": 8, "workers": 8, "cli": 9, "face": 10}
CLI = {"alarmkit.cli", "alarmkit._cli_text", "alarmkit.demo", "alarmkit.__main__"}


def wing_of(mod: str) -> str:
    """The wing a module belongs to: a folder under alarmkit/, the floor, the command line or the face."""
    parts = mod.split(".")
    if mod in FLOOR:
        return "floor"
    if mod in CLI:
        return "cli"
    if len(parts) >= 2 and parts[1] in RANK:
        return parts[1]
    return "face"  # alarmkit/__init__.py and the documented paths that are their wings' modules


def is_public_path(mod: str) -> bool:
    return not any(p.startswith("_") and not p.startswith("__") for p in mod.split("."))


def wing_violations(graph: dict[str, set[str]]) -> list[str]:
    """Every import that breaks the rule: a module imports its own wing, the floor, or a lower wing
    (same rank: a sibling) through that wing's face or one of its public modules."""
    bad = []
    for a, targets in sorted(graph.items()):
        wa = wing_of(a)
        for b in sorted(targets):
            wb = wing_of(b)
            if wa == wb or wb == "floor":
                continue
            if RANK[wb] > RANK[wa] or (wa == "floor"):
                bad.append(f"{a} imports {b}: upward ({wa} < {wb})")
            elif not is_public_path(b):
                bad.append(f"{a} imports {b}: a private module of the {wb} wing (use alarmkit.{wb})")
    return bad


def test_every_module_belongs_to_a_known_wing():
    unknown = sorted(m for m in modules() if wing_of(m) == "face" and m != "alarmkit"
                     and not (PKG / f"{m.split('.')[-1]}.py").read_text().count("sys.modules[__name__] = _home"))
    assert not unknown, f"modules in no wing (give them a folder or the floor): {unknown}"


def test_imports_follow_the_wings_types_included():
    graph = import_graph(include_type_checking=True)
    bad = wing_violations(graph)
    assert not bad, "imports against the wing order:\n" + "\n".join(bad)
    found = cycles(graph)
    assert not found, "import cycles (TYPE_CHECKING imports included): " + "; ".join(" <-> ".join(c) for c in found)


def test_the_wing_rule_fails_on_a_planted_upward_or_private_import():
    graph = {"alarmkit.kernel._kernel": {"alarmkit.runtime"}, "alarmkit.viz.plots": {"alarmkit.runtime._host"},
             "alarmkit.runtime._host": {"alarmkit.kernel", "alarmkit.errors", "alarmkit.runtime._object"},
             "alarmkit.errors": {"alarmkit.journal"}, "alarmkit.realruns.record": {"alarmkit.calibrate.workerd"}}
    assert wing_violations(graph) == [
        "alarmkit.errors imports alarmkit.journal: upward (floor < journal)",
        "alarmkit.kernel._kernel imports alarmkit.runtime: upward (kernel < runtime)",
        "alarmkit.viz.plots imports alarmkit.runtime._host: a private module of the runtime wing (use alarmkit.runtime)",
    ]


def test_public_names_report_public_modules():
    """``repr``, ``help`` and tracebacks name a path a user can import: never a private module."""
    import importlib

    import alarmkit as ak

    faces = ["alarmkit", "alarmkit.kernel", "alarmkit.journal", "alarmkit.runtime", "alarmkit.viz", "alarmkit.explore",
             "alarmkit.scenarios", "alarmkit.errors", "alarmkit.realruns", "alarmkit.plots", "alarmkit.report",
             "alarmkit.faults", "alarmkit.invariants"]
    private = []
    for face in faces:
        mod = importlib.import_module(face)
        for name in getattr(mod, "__all__", []):
            obj = getattr(mod, name)
            where = getattr(obj, "__module__", None)
            if (isinstance(obj, type) or callable(obj)) and isinstance(where, str) and where.startswith("alarmkit"):
                if not is_public_path(where):
                    private.append(f"{face}.{name}: {where}")
                else:
                    assert getattr(importlib.import_module(where), obj.__name__, None) is obj, f"{face}.{name}"
    assert not private, "public names reporting private modules: " + ", ".join(private)
    assert repr(ak.Simulation) == "<class 'alarmkit.runtime.Simulation'>"


def test_every_error_is_exported_and_documented():
    import alarmkit as ak
    from alarmkit import errors

    classes = {n for n, v in vars(errors).items() if isinstance(v, type) and issubclass(v, ak.AlarmkitError)}
    assert classes == set(errors.__all__), "alarmkit.errors.__all__ must list every error class"
    assert classes <= set(ak.__all__), f"errors not exported by alarmkit: {sorted(classes - set(ak.__all__))}"
    docs = (ROOT / "docs" / "errors.md").read_text()
    assert not [c for c in classes if f"`{c}`" not in docs], "errors missing from docs/errors.md"


def test_documented_import_paths_still_work():
    import importlib

    for path, name in [("alarmkit.plots", "timeline"), ("alarmkit.report", "export_html"),
                       ("alarmkit.widgets", "Explorer"), ("alarmkit.journal", "Journal"),
                       ("alarmkit.explore", "explore"), ("alarmkit.runtime", "Simulation"),
                       ("alarmkit.faults", "FaultPlan"), ("alarmkit.invariants", "check"),
                       ("alarmkit.realruns", "import_file"), ("alarmkit.calibrate", "calibrate"),
                       ("alarmkit.profiles", "PROFILES"), ("alarmkit.facets", "AlarmProxyParent")]:
        assert hasattr(importlib.import_module(path), name), f"{path}.{name}"
    import alarmkit.plots
    import alarmkit.viz.plots

    assert alarmkit.plots is alarmkit.viz.plots  # one module, two paths: monkeypatching either works


# the runtime core: the kernel's and the runtime's private modules
RUNTIME_CORE = {m for m in modules() if wing_of(m) in ("kernel", "runtime") and not is_public_path(m)}


def attribute_reads(path: Path, attr: str) -> list[int]:
    return [n.lineno for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Attribute) and n.attr == attr]


def test_only_the_runtime_core_touches_alarm_backends():
    """Checkers read a run's final alarms through ``Simulation.alarms()``, not a host's backend."""
    outside = {m: lines for m, p in modules().items()
               if m not in RUNTIME_CORE and (lines := attribute_reads(p, "alarm_backend"))}
    assert not outside, f"modules outside the runtime core reading .alarm_backend: {outside}"


def test_every_event_row_is_an_EventRow():
    import alarmkit as ak
    from alarmkit.calibrate.importer import twin_rows
    from alarmkit.journal import EVENT_COLUMNS, frame_rows

    assert list(ak.EventRow._fields) == EVENT_COLUMNS[1:]  # one shape: the journal's columns less run_id
    r = ak.run_scenario("lease-normal", seed=0)
    rows = r.sim.rows
    assert rows and all(type(x) is ak.EventRow for x in rows)
    first = rows[0]
    assert (first.seq, first.t_ms, first.kind, first.object_id) == (1, 0, "construct", "ledger")
    again = frame_rows(r.events)
    assert again == rows and all(type(x) is ak.EventRow for x in again)
    twin = twin_rows({"probe": "p", "events": [{"kind": "construct", "t": 5, "obj": "probe"}]})
    assert twin == [ak.EventRow(1, 5, "PROBE", "probe", "construct", None, None, None, {})]
    assert r.sim.alarms() == {"ledger": None}


def test_alarm_backends_share_one_protocol_and_are_registered_in_one_place():
    import alarmkit as ak
    from alarmkit.runtime._backend import AlarmBackend
    from alarmkit.runtime._facets import _NoAlarms
    from alarmkit.runtime._runtime import SCHEDULERS

    assert set(SCHEDULERS) == {p.scheduler for p in ak.PROFILES.values()} == {"workerd", "celld"}
    for name in ("workerd", "celld"):
        assert isinstance(ak.Simulation(profile=name).scheduler, AlarmBackend)
    assert isinstance(_NoAlarms(), AlarmBackend)
    assert not isinstance(object(), AlarmBackend)
    # nothing registers a scheduler or a profile anywhere else (no import side effects)
    for m, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Assign, ast.AugAssign)):
                for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    if isinstance(t, ast.Subscript) and ast.unparse(t.value).split(".")[-1] in ("SCHEDULERS", "PROFILES"):
                        raise AssertionError(f"{m}:{node.lineno} registers into {ast.unparse(t.value)}")


def test_profiles_are_immutable_and_the_celld_scheduler_leaves_the_profile_alone():
    import dataclasses

    import pytest

    import alarmkit as ak

    with pytest.raises(TypeError):
        ak.PROFILES["mine"] = ak.PROFILES["workerd"]  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        ak.PROFILES["celld"].idle_evict_ms = 1  # type: ignore[misc]
    sim = ak.Simulation(profile="celld", resident_ms=7_000)
    assert sim.scheduler.profile is sim.profile and sim.profile.idle_evict_ms == 7_000
    with pytest.raises(ak.AlarmkitError, match=r"^profile .celld. setting resident_ms must be an int of ms in 0..2\*\*53 .* and >= 1, got 0$"):
        ak.Simulation(profile="celld", resident_ms=0)
    with pytest.raises(ak.AlarmkitError, match=r"^profile .celld. setting waker_tick_ms must be an int of ms .*, got bool True$"):
        ak.PROFILES["celld"].replace(waker_tick_ms=True)
    assert ak.PROFILES["celld"].idle_evict_ms == 3_600_000
    celld = (PKG / "runtime" / "_celld.py").read_text()
    assert "sim.profile =" not in celld and ".profile = " not in celld.replace("self.profile = sim.profile", "")
    sim.configure(resident_ms=5_000)  # before anything ran: a new scheduler for the new profile
    assert sim.scheduler.profile is sim.profile and sim.profile.idle_evict_ms == 5_000
    stub = sim.namespace("N", _pinger()).get("o")  # made, not run: configure may still come
    sim.configure(resident_ms=6_000)
    assert sim.call(stub.ping()) == "pong" and sim.profile.idle_evict_ms == 6_000
    with pytest.raises(ak.AlarmkitError, match=r"^configure\(resident_ms=\.\.\.\) must come before anything has run"):
        sim.configure(resident_ms=1_000)


def _pinger():
    import alarmkit as ak

    class Pinger(ak.DurableObject):
        def ping(self):
            return "pong"

    return Pinger


def calls_in(path: Path, func: str) -> set[str]:
    """The names of what ``func`` (a function or method of ``path``) calls."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == func:
            return {(c.func.attr if isinstance(c.func, ast.Attribute) else getattr(c.func, "id", ""))
                    for c in ast.walk(node) if isinstance(c, ast.Call)}
    raise AssertionError(f"{path.name} has no {func}")


def test_facet_hosting_reuses_the_runtime_and_the_proxy_is_public_code():
    facets = PKG / "runtime" / "_facets.py"
    # a facet RPC is Simulation.rpc (with the stub's check); aborting a facet is Host.evict
    assert "rpc" in calls_in(facets, "__getattr__") and "ensure_live" not in facets.read_text()
    assert calls_in(facets, "abort") & {"evict"} and "drop" not in calls_in(facets, "abort")
    # the user-level proxy lives in the public module and imports only public modules
    graph = import_graph()
    assert not {m for m in graph["alarmkit.runtime.facets"] if m.split(".")[-1].startswith("_")}  # TYPE_CHECKING aside
    import alarmkit as ak

    assert ak.AlarmProxyParent.__module__ == "alarmkit.runtime.facets" == ak.facet_alarm_state.__module__


def test_calibrate_has_one_command_line_and_no_names_of_top_level_modules():
    cal = {p.stem for p in (PKG / "calibrate").glob("*.py")} - {"__init__"}
    top = {p.stem for p in PKG.glob("*.py")} - {"__init__", "__main__"}
    assert not cal & top, f"calibrate/ modules named like top-level ones: {sorted(cal & top)}"
    assert {"catalogue", "runner", "lab_probes", "behaviour_probes", "polling"} <= cal and "probes" not in cal
    for p in sorted((PKG / "calibrate").glob("*.py")):
        text = p.read_text()
        if p.name != "command.py":
            assert "argparse" not in text and '__name__ == "__main__"' not in text, f"{p.name} has a command line"


def test_no_module_is_much_over_400_lines():
    """A file you can hold in your head. "~400": none past 450."""
    sizes = {m: len(p.read_text().splitlines()) for m, p in modules().items()}
    assert not {m: n for m, n in sizes.items() if n > 450}


def test_the_readme_package_map_is_the_folder_list():
    """One row per wing, naming its folder; the floor's modules named on their row; nothing that is not there."""
    import re

    text = (ROOT / "README.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| ") and "`alarmkit/" in line]
    named = {m.rstrip("/") for row in rows for m in re.findall(r"`alarmkit/([\w/.]+)`", row)}
    folders = {p.name for p in PKG.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders <= named, f"wings missing from the README's package map: {sorted(folders - named)}"
    floor = {m.split(".")[-1] + ".py" for m in FLOOR}
    assert floor <= named, f"floor modules missing from the README's package map: {sorted(floor - named)}"
    everywhere = {p.relative_to(PKG).as_posix() for p in PKG.rglob("*")} | folders
    assert not named - everywhere, f"the README's package map names missing paths: {sorted(named - everywhere)}"


# -- built-ins use the public API only ------------------------------------------------------------------------
PRIVATE_RUNTIME = RUNTIME_CORE
# runtime internals without an underscore: what the scenario API replaces
RUNTIME_INTERNALS = {"kernel", "hosts", "namespaces", "alarm_backend", "buffer", "log"}


def runtime_private_names() -> set[str]:
    """Every ``_name`` the runtime core defines on its classes (attributes, slots, methods)."""
    names: set[str] = set()
    for m in RUNTIME_CORE:
        tree = ast.parse(modules()[m].read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names.add(node.name)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
                names.add(node.value)  # __slots__ entries
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def defined_names(tree: ast.AST) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            out.add(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
    return out


def private_runtime_uses(path: Path, mod: str | None) -> list[str]:
    """Imports of private runtime modules, and reads of the runtime's private (or internal) attributes
    that ``path`` does not define itself."""
    tree = ast.parse(path.read_text(), str(path))
    private, own = runtime_private_names(), defined_names(tree)
    found = []
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = resolve(mod, path.name == "__init__.py", node) if mod else (node.module or "")
            targets = [base, *(f"{base}.{a.name}" for a in node.names)]
        found += [f"{path.name}:{node.lineno} imports {t}" for t in targets if t in PRIVATE_RUNTIME]
        if isinstance(node, ast.Attribute) and node.attr not in own and (
                node.attr in private or node.attr in RUNTIME_INTERNALS):
            found.append(f"{path.name}:{node.lineno} reads .{node.attr} ({ast.unparse(node)})")
    return found


def public_api_users() -> list[tuple[Path, str | None]]:
    mods = {p: m for m, p in modules().items()}
    pkg = [p for p in sorted((PKG / "scenarios").rglob("*.py")) + sorted((PKG / "calibrate").rglob("*.py"))]
    return [(p, mods[p]) for p in pkg] + [(p, None) for p in sorted((ROOT / "notebooks").glob("*.py"))]


def test_the_private_use_check_finds_what_it_looks_for(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from alarmkit.runtime._runtime import Simulation\nimport alarmkit.runtime._facets\n"
                   "def f(sim, ctx):\n    sim.kernel.call_at(1, print)\n    return ctx._host.db\n")
    assert sorted(private_runtime_uses(bad, None)) == [
        "bad.py:1 imports alarmkit.runtime._runtime", "bad.py:2 imports alarmkit.runtime._facets",
        "bad.py:4 reads .kernel (sim.kernel)", "bad.py:5 reads ._host (ctx._host)"]
    ok = tmp_path / "ok.py"
    ok.write_text("class A:\n    def _mine(self):\n        return self._mine\n")
    assert private_runtime_uses(ok, None) == []


def test_scenarios_notebooks_and_calibrate_use_only_the_public_runtime():
    found = [hit for path, mod in public_api_users() for hit in private_runtime_uses(path, mod)]
    assert not found, "private runtime use:\n" + "\n".join(found)


if __name__ == "__main__":  # pragma: no cover
    print_layers()


# -- comments speak of the code ----------------------------------------------------------------------------------
import re as _re

_HISTORY = _re.compile(r"(?<![\w/-] )(?<!#)\bissue \d{1,2}\b|\bseed[ -]00\d\b|REFERENCE\.md|STYLE\.md|\.\./shared\b",
                       _re.I)


def history_mentions(text: str) -> list[str]:
    """Lines citing the project's own issue numbers, its seed documents or files outside the repository.
    A public bug ("workerd issue 6866", "cloudflare-docs issue 18324") is a source, and allowed."""
    return [line.strip() for line in text.splitlines() if _HISTORY.search(line)]


def test_the_history_check_finds_what_it_looks_for():
    assert history_mentions("x = 1  # issue 17: faster\n# workerd issue 6866\n# the seed-003 ledger\n"
                            "# see ../shared/REFERENCE.md\n# cloudflare-docs issue 18324\n") == [
        "x = 1  # issue 17: faster", "# the seed-003 ledger", "# see ../shared/REFERENCE.md"]


def test_comments_speak_of_the_code_not_its_history():
    paths = [p for p in [*PKG.rglob("*.py"), *PKG.rglob("*.js"), *PKG.rglob("*.mjs"), *(ROOT / "tests").rglob("*.py"),
                         *(ROOT / "benchmarks").rglob("*.py"), ROOT / "dev.py"] if p.name != "test_architecture.py"]
    found = {str(p.relative_to(ROOT)): hits for p in paths if (hits := history_mentions(p.read_text(errors="replace")))}
    assert not found, f"comments citing the project's history instead of the code or a source: {found}"
