"""Every notebook runs top to bottom in a real kernel, with CI's small parameters.

The notebooks live in git as py:percent text (notebooks/*.py); jupytext turns each into a
notebook here, nbclient executes it with the venv's python3 kernel in a temp folder, and any
cell error fails the test with the cell's source and traceback.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
from pathlib import Path

import pytest

jupytext = pytest.importorskip("jupytext")
nbclient = pytest.importorskip("nbclient")
from jupytext.config import load_jupytext_config  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py"))
CELL_TIMEOUT_S = 300


def test_there_are_twelve_notebooks():
    assert [p.name[:2] for p in NOTEBOOKS] == ["01", "02", "03", "04", "05", "06", "07", "08", "09", "10", "11", "12"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_thin_paired_percent_text(path):
    text = path.read_text(encoding="utf-8")
    nb = jupytext.reads(text, fmt="py:percent")
    assert nb.metadata["jupytext"]["formats"] == "ipynb,py:percent"
    assert nb.metadata["kernelspec"]["name"] == "python3"
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith(f"# {int(path.name[:2])} · ")
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.strip() for c in code)
    for src in code:  # thin: all logic lives in the package, so no cell defines a function or class
        tree = ast.parse(src)
        defs = [n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        assert not defs, f"{path.name}: a cell defines {defs}; move it into alarmkit"
        assert "eval(" not in src
    # the round trip is stable: what git holds is what jupytext (and JupyterLab, on save) writes
    config = load_jupytext_config(str(path))
    assert jupytext.writes(nb, fmt="py:percent", config=config) == text, f"run: jupytext --to py:percent {path.name}"


def test_no_notebook_outputs_are_kept_in_git():
    """Only the .py sources are tracked; a tracked .ipynb must have no outputs."""
    git = shutil.which("git")
    if git is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    tracked = subprocess.run([git, "ls-files", "notebooks/*.ipynb"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    for name in tracked:
        nb = jupytext.read(ROOT / name)
        with_outputs = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and (c.outputs or c.execution_count)]
        assert not with_outputs, f"{name} is tracked with outputs in cells {with_outputs}; clear them"
    assert subprocess.run([git, "check-ignore", "-q", "notebooks/x.ipynb"], cwd=ROOT).returncode == 0


def test_the_notebooks_doc_lists_every_notebook():
    text = (ROOT / "docs" / "notebooks.md").read_text(encoding="utf-8")
    for path in NOTEBOOKS:
        assert path.name in text, f"docs/notebooks.md does not mention {path.name}"
    assert "python3 dev.py lab" in text


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_executes_without_errors(path, tmp_path, monkeypatch):
    monkeypatch.setenv("ALARMKIT_CI", "1")
    monkeypatch.setenv("ALARMKIT_OUT", str(tmp_path / "out"))
    before = sorted(p.name for p in (ROOT / "notebooks").iterdir())
    nb = jupytext.read(path)
    client = nbclient.NotebookClient(nb, kernel_name="python3", timeout=CELL_TIMEOUT_S,
                                     resources={"metadata": {"path": str(tmp_path)}})
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as err:
        pytest.fail(f"{path.name}: {_plain(str(err))[:6000]}", pytrace=False)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors
    ran = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count for c in ran), "some cells did not run"
    # outputs go to the temp folder, never beside the notebooks
    assert sorted(p.name for p in (ROOT / "notebooks").iterdir()) == before


def _plain(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)
