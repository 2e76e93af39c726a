#!/usr/bin/env python3
"""The project's set-up commands, runnable with nothing but python3 (3.11+):

    python3 dev.py demo       # the main job: run every scenario, write journal.duckdb and reports/*.html
    python3 dev.py test       # the whole test suite (what CI runs)
    python3 dev.py notebooks  # the teaching bundle: every notebook executed, as HTML, in notebooks-html/

Each creates or reuses ./.venv and installs what it needs (re-installing only when pyproject.toml
changes). ``test`` also makes sure the test suite's outside helpers are present: Debian's chromium
for the browser tests (via apt-get, when run as root) and workerd from npm for the calibration
tests (when Node.js is installed). Extra arguments after ``test`` go to pytest; ``notebooks`` takes
``--out DIR`` and passes the rest to ``alarmkit notebooks`` (e.g. ``--only 02,07 --ci``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / "python"
CHROMIUM = Path("/usr/bin/chromium")


def say(msg: str) -> None:
    print(f"[dev] {msg}", flush=True)


def run(cmd: list, **kw) -> int:
    return subprocess.call([str(c) for c in cmd], **kw)


def ensure_venv(extras: str) -> None:
    if sys.version_info < (3, 11):
        sys.exit(f"alarmkit needs Python 3.11 or newer; this is {sys.version.split()[0]} ({sys.executable})")
    if not PY.exists():
        say(f"creating {VENV}")
        try:
            venv.EnvBuilder(with_pip=True).create(VENV)
        except Exception as err:  # Debian without python3-venv, for one
            sys.exit(f"could not create {VENV}: {err}\n(on Debian/Ubuntu: apt-get install python3-venv)")
    stamp = VENV / f".installed-{extras or 'core'}"
    want = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if stamp.exists() and stamp.read_text() == want:
        return
    say(f"installing alarmkit[{extras}] into {VENV} (first run takes a few minutes)")
    spec = f".[{extras}]" if extras else "."
    rc = run([PY, "-m", "pip", "install", "--disable-pip-version-check", "-q", "-e", spec], cwd=ROOT)
    if rc:
        sys.exit(f"pip install failed (exit {rc}); see the messages above")
    stamp.write_text(want)


def ensure_chromium() -> None:
    if CHROMIUM.exists():
        return
    if shutil.which("apt-get") and os.geteuid() == 0:
        say("installing Debian's chromium for the browser tests (apt-get)")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        run(["apt-get", "update", "-qq"], env=env)
        run(["apt-get", "install", "-y", "-qq", "chromium"], env=env)
    if not CHROMIUM.exists():
        say("no /usr/bin/chromium: the browser tests will be skipped (apt-get install chromium)")


def ensure_workerd() -> None:
    if not shutil.which("npm"):
        say("no Node.js/npm: the real-workerd calibration tests will be skipped")
        return
    rc = run([PY, "-m", "alarmkit", "calibrate", "--install-only"], cwd=ROOT)
    if rc:
        say("workerd could not be installed from npm: the calibration tests will be skipped")


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("demo", "test", "notebooks"):
        print(__doc__.strip())
        return 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "demo":
        ensure_venv("notebooks")
        return run([BIN / "alarmkit", "demo", *rest], cwd=ROOT)
    if cmd == "notebooks":
        ensure_venv("notebooks")
        rest = ["--html" if a == "--out" else "--html=" + a[6:] if a.startswith("--out=") else a for a in rest]
        out = [] if any(a == "--html" or a.startswith("--html=") for a in rest) else ["--html", "notebooks-html"]
        return run([BIN / "alarmkit", "notebooks", *out, *rest], cwd=ROOT)
    ensure_venv("dev")
    ensure_chromium()
    ensure_workerd()
    say("running the test suite")
    return run([PY, "-m", "pytest", *rest], cwd=ROOT)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
