"""One way to write a file: nothing in the package writes a file except through ``alarmkit/_files.py``.

Read with ``ast`` (nothing is imported): any ``open()`` for writing or appending, ``write_text``,
``write_bytes``, ``to_parquet``/``to_csv``/``write_table``, ``shutil`` copy or move, or ``os.replace``/
``os.rename`` outside ``_files.py`` fails the test, unless it is on the allow-list below with its reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "alarmkit"

# (file, what) -> why it may write without _files.py. Keep this short: every entry is a reason.
ALLOWED = {
    ("alarmkit/calibrate/workerd.py", "open:ab"):
        "workerd's own log: the child process's stdout, appended across restarts in alarmkit's own temp work folder",
    ("alarmkit/viz/bundle.py", "open:wb"):
        "the notebook kernel's log: a child's stdout in a TemporaryDirectory alarmkit made and removes",
    ("alarmkit/realruns/recproc.py", "open:xb"):
        "workerd's log during a recording: a new file (mode x) in the recording's own work folder, removed after",
    ("alarmkit/realruns/recproc.py", "open:x"):
        "the collector's tail and stream files: new files (mode x) in the recording's own work folder; --out gets "
        "copies through _files at the end (realruns/rawfiles.py)",
    ("alarmkit/_text.py", "open:w"):
        "os.devnull, once the reader of stdout went away (alarmkit import ... | head): never a file of the user's",
}
ALLOWED_FOLDERS = ()  # none: every folder of the package is read

WRITE_METHODS = {"write_text", "write_bytes", "to_parquet", "to_csv", "write_table", "write_html", "write_image"}
SHUTIL = {"copy", "copy2", "copyfile", "copyfileobj", "copytree", "move"}
OS_MOVES = {"replace", "rename", "renames"}


def _mode(call: ast.Call, at: int) -> str | None:
    """The mode of ``open(path, mode)`` (``at`` 1) or ``Path.open(mode)`` (``at`` 0): "r" when not
    given, "?" when not a literal."""
    node = call.args[at] if len(call.args) > at else next((k.value for k in call.keywords if k.arg == "mode"), None)
    if node is None:
        return "r"
    if isinstance(node, ast.Attribute) and node.attr == "O_RDONLY":
        return "r"  # os.open(path, os.O_RDONLY): read-only flags; any other flags stay "?"
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else "?"


def writes_in(source: str) -> list[tuple[int, str]]:
    """``(line, what)`` for every file write the source makes (see the module docstring)."""
    found = []
    tree = ast.parse(source)
    # a writer handed the temporary path by ``with atomic_output(..., as_path=True) as tmp:`` is the helper's
    inside = {id(n) for w in ast.walk(tree) if isinstance(w, ast.With)
              and any(isinstance(i.context_expr, ast.Call) and getattr(i.context_expr.func, "id",
                      getattr(i.context_expr.func, "attr", None)) == "atomic_output" for i in w.items)
              for b in w.body for n in ast.walk(b)}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or id(node) in inside:
            continue
        f = node.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
        owner = f.value.id if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) else None
        if name == "open" and owner not in ("duckdb", "tarfile", "zipfile", "webbrowser"):
            mode = _mode(node, 1 if isinstance(f, ast.Name) or owner in ("io", "builtins", "os") else 0)
            if mode == "?" or any(c in mode for c in "wax+"):
                found.append((node.lineno, f"open:{mode}"))
        elif name in WRITE_METHODS and isinstance(f, ast.Attribute) and owner != "_files":
            # a bare write_text(...) is _files.write_text imported by name; p.write_text(...) is pathlib's
            found.append((node.lineno, name))
        elif owner == "shutil" and name in SHUTIL:
            found.append((node.lineno, f"shutil.{name}"))
        elif owner == "os" and name in OS_MOVES:
            found.append((node.lineno, f"os.{name}"))
    return sorted(found)


def test_the_checker_sees_every_kind_of_write():
    src = ("open(p, 'w')\nopen(p, mode='ab')\nopen(p)\nopen(p, 'rb')\nPath(p).open('x')\nopen(p, m)\n"
           "p.write_text('x')\np.write_bytes(b'')\ndf.to_parquet(p)\npq.write_table(t, p)\n"
           "shutil.copyfile(a, b)\nshutil.move(a, b)\nos.replace(a, b)\nduckdb.connect(p)\nfig.write_html(p)\n"
           "os.open(p, os.O_RDONLY)\nos.open(p, os.O_WRONLY | os.O_CREAT)\nwrite_text(p, 'x', ours=None)\n_files.write_bytes(p, b'', ours=None)\n"
           "with atomic_output(p, ours=None, as_path=True) as tmp:\n    pq.write_table(t, tmp)\n")
    assert [w for _, w in writes_in(src)] == [
        "open:w", "open:ab", "open:x", "open:?", "write_text", "write_bytes", "to_parquet", "write_table",
        "shutil.copyfile", "shutil.move", "os.replace", "write_html", "open:?"]


def _package_files() -> list[Path]:
    return sorted(p for p in PKG.rglob("*.py") if p.name != "_files.py" or p.parent != PKG)


@pytest.mark.parametrize("path", _package_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_file_is_written_outside_files_py(path):
    rel = str(path.relative_to(ROOT))
    if rel.startswith(ALLOWED_FOLDERS):
        pytest.skip("checked by its own tests (see ALLOWED_FOLDERS)")
    stray = [f"{rel}:{line} {what}" for line, what in writes_in(path.read_text(encoding="utf-8"))
             if (rel, what) not in ALLOWED]
    assert not stray, ("write these through alarmkit/_files.py (atomic_output, write_text, write_bytes): "
                       + "; ".join(stray))


def test_every_allow_list_entry_is_still_needed():
    """An entry whose write is gone must leave the list (a stale reason is a hole for the next write)."""
    seen = {(str(p.relative_to(ROOT)), w) for p in _package_files()
            for _, w in writes_in(p.read_text(encoding="utf-8"))}
    assert set(ALLOWED) <= seen, sorted(set(ALLOWED) - seen)
