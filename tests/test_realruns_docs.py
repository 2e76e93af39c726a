"""Every python block of docs/real-runs.md runs, in order, in a fresh folder."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_real_runs_doc_blocks_run(tmp_path):
    text = (ROOT / "docs" / "real-runs.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks
    script = tmp_path / "blocks.py"
    script.write_text("\n\n".join(blocks), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, env=env,
                         timeout=300)
    assert out.returncode == 0, out.stderr
