"""The README's "Your own Durable Object" as a new user types it: its python blocks run in a fresh
folder, then every ``$ .venv/bin/alarmkit ...`` line of its console blocks runs there, and exits with the
code its ``# exit N`` comment states. The JS block needs Node.js and esbuild (skipped, naming why, without)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)


def section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("## Your own Durable Object")
    return text[start:text.index("\n## ", start + 5)]


def commands() -> list[tuple[list[str], int]]:
    out = []
    for lang, body in FENCE.findall(section()):
        if lang != "console":
            continue
        for line in body.splitlines():
            if line.startswith("$ .venv/bin/alarmkit "):
                cmd, _, comment = line[2:].partition("#")
                code = re.search(r"exit (\d+)", comment)
                assert code, f"README: say the exit code of {cmd.strip()!r} in a '# exit N' comment"
                out.append((shlex.split(cmd)[1:], int(code.group(1))))
    return out


@pytest.mark.slow
def test_the_readme_commands_exit_as_it_says(tmp_path):
    from alarmkit.workers.js import available

    if available() is not None:
        pytest.skip(f"the JavaScript host cannot run here: {available()}")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    blocks = "\n".join(body for lang, body in FENCE.findall(section()) if lang == "python")
    (tmp_path / "blocks.py").write_text(blocks, encoding="utf-8")
    ran = subprocess.run([sys.executable, "blocks.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=600)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "301 threw JsError: TypeError: Cannot read properties of undefined (reading 'toUpperCase')" in ran.stdout
    cmds = commands()
    assert [c[0][0] for c in cmds] == ["worker", "explore", "worker"] and [c[1] for c in cmds] == [1, 1, 0]
    outs = []
    for argv, code in cmds:
        p = subprocess.run([sys.executable, "-m", "alarmkit", *argv], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=600)
        assert p.returncode == code, (argv, p.stdout[-2000:], p.stderr[-2000:])
        assert "Traceback" not in p.stderr
        outs.append(p.stdout)
    shown = outs[0]
    assert ("alarm() at       301 ms  retry_count=0  main  threw JsError: TypeError: Cannot read properties of "
            "undefined (reading 'toUpperCase')") in shown
    assert "alarm() at    136440 ms  retry_count=6  main  abandoned after JsError: TypeError" in shown
