"""The README's headless notebook commands work as typed: ``jupytext --to ipynb --execute`` on a
``.py`` notebook, then ``jupyter nbconvert --to html`` on what it wrote. Run on a copy, in a temporary folder."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


@pytest.mark.slow
def test_the_readme_commands_execute_a_notebook_headless(tmp_path):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    cmds = re.findall(r"^\$ \.venv/bin/(jupytext --to ipynb --execute \S+|jupyter nbconvert --to html \S+)$", readme, re.M)
    assert [c.split()[0] for c in cmds] == ["jupytext", "jupyter"], cmds
    (tmp_path / "notebooks").mkdir()
    nb = cmds[0].split()[-1]
    shutil.copy(ROOT / nb, tmp_path / nb)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "ALARMKIT_CI": "1", "ALARMKIT_OUT": str(tmp_path / "out")}
    for cmd in cmds:
        argv = cmd.split()
        p = subprocess.run([str(BIN / argv[0]), *argv[1:]], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=900)
        assert p.returncode == 0, (cmd, p.stderr[-3000:])
    executed = tmp_path / nb.replace(".py", ".ipynb")
    page = tmp_path / nb.replace(".py", ".html")
    assert '"execution_count": 1' in executed.read_text(encoding="utf-8")
    assert "plotly-graph-div" in page.read_text(encoding="utf-8")
    # lean: the figures load the one tagged plotly.min.js the kernel wrote beside the notebook (5.2 MB before)
    assert executed.stat().st_size < 1_000_000 and page.stat().st_size < 1_000_000
    from alarmkit.viz.pages import is_plotly_js

    assert is_plotly_js(executed.parent / "plotly.min.js") and '<script src="plotly.min.js">' in page.read_text(encoding="utf-8")
