"""The README and docs/*.md say only what runs.

Every ```python block of README.md and of each docs/*.md runs, in the order of the file, in one
Python process per file (blocks share their names, as a reader's session would) inside a fresh
temporary folder. A block that must not run starts with a visible line ``# not run: <reason>``.
Nothing a block does may land in the repository.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.M | re.S)
NOT_RUN = "# not run:"
PYTHONISH = {"py", "python3", "ipython", "pycon"}  # fences the runner would miss: write ```python
SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", ".pytest_cache", ".ipynb_checkpoints",
             ".hypothesis"}  # Hypothesis's database: other xdist workers write it while a block runs

RUNNER = r"""
import json, linecache, sys, traceback
blocks = json.load(open(sys.argv[1], encoding="utf-8"))
ns = {"__name__": "__main__"}
for name, code in blocks:
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)
    try:
        exec(compile(code, name, "exec"), ns)
    except BaseException:
        traceback.print_exc()
        print(f"\nthe block at {name} failed", file=sys.stderr)
        sys.exit(1)
print(f"{len(blocks)} block(s) ran")
"""


def python_blocks(path: Path) -> list[tuple[int, str]]:
    """Each ```python block of a file as (line of its opening fence, code)."""
    text = path.read_text(encoding="utf-8")
    out = []
    for m in FENCE.finditer(text):
        info = m.group(1).strip().split()
        lang = info[0] if info else ""
        line = text.count("\n", 0, m.start()) + 1
        assert lang not in PYTHONISH, f"{path.name}:{line}: fence ```{lang}: write ```python so the docs test runs it"
        if lang == "python":
            out.append((line, m.group(2)))
    return out


def _snapshot() -> dict[str, int]:
    """Every file of the repository (but .git, venvs, caches) with its modification time."""
    seen = {}
    for dirpath, dirnames, filenames in os.walk(ROOT):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
        for f in filenames:
            p = os.path.join(dirpath, f)
            try:
                seen[os.path.relpath(p, ROOT)] = os.stat(p).st_mtime_ns
            except FileNotFoundError:
                pass
    return seen


def test_every_doc_file_is_collected():
    names = [p.name for p in FILES]
    assert names[0] == "README.md" and len(names) > 1, names
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    for p in FILES[1:]:
        assert f"docs/{p.name}" in text, f"README.md does not link docs/{p.name}"


def test_not_run_markers_give_a_reason():
    for path in FILES:
        for line, code in python_blocks(path):
            first = code.lstrip("\n").splitlines()[0] if code.strip() else ""
            if first.lower().startswith("# not run"):
                assert first.startswith(NOT_RUN) and first[len(NOT_RUN):].strip(), (
                    f"{path.name}:{line}: write the marker as '{NOT_RUN} <reason>', got {first!r}")


def anchors(path: Path) -> set[str]:
    """GitHub's anchors of a markdown file's headings (lowercase, punctuation dropped, spaces to hyphens)."""
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
            for h in re.findall(r"^#+ (.*)$", text, re.M)}


def test_relative_links_resolve():
    for path in FILES:
        text = path.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            dest = (path.parent / file).resolve() if file else path
            assert dest.exists(), f"{path.relative_to(ROOT)} links {target}, which does not exist"
            if anchor and dest.suffix == ".md":
                assert anchor in anchors(dest), f"{path.relative_to(ROOT)} links {target}: no such heading"


def runnable(path: Path) -> list[tuple[str, str]]:
    return [(f"{path.relative_to(ROOT)}:{line}", code) for line, code in python_blocks(path)
            if not code.lstrip("\n").startswith(NOT_RUN)]


@pytest.mark.slow
@pytest.mark.parametrize("path", [p for p in FILES if runnable(p)], ids=lambda p: str(p.relative_to(ROOT)))
def test_python_blocks_run(path, tmp_path):
    blocks = runnable(path)
    spec = tmp_path / "blocks.json"
    spec.write_text(json.dumps(blocks), encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "ALARMKIT_OUT": str(work / "out")}
    before = _snapshot()
    proc = subprocess.run([sys.executable, "-c", RUNNER, str(spec)], cwd=work, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, f"{path.name}: a python block failed\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    # new files only: a developer may edit tracked files while the suite runs
    new = sorted(p for p in set(_snapshot()) - set(before) if not Path(p).name.startswith(".") and not p.endswith("~"))
    assert not new, f"the blocks of {path.name} wrote into the repository: {new}"
