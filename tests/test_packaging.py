"""What an installed alarmkit carries: a wheel built from the tracked files, installed into a fresh
venv outside the repository, runs ``alarmkit calibrate --reference`` (the reference run ships inside
the package) and has ``py.typed``.

The fresh venv gets alarmkit's dependencies from this test environment's site-packages through a
``.pth`` path line; only the isolated build fetches setuptools (from the package index or pip's
cache), as ``pip install .`` does. Path lines do not run the ``.pth`` files found there, so this
environment's editable alarmkit (if any) is not importable from the fresh venv."""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout to list the tracked files")
    tmp = tmp_path_factory.mktemp("wheel")
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, check=True).stdout.decode().split("\0")
    src = tmp / "src"
    for f in filter(None, files):
        if (ROOT / f).is_file():
            (src / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / f, src / f)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                    "--disable-pip-version-check", "-w", str(tmp / "dist"), str(src)], check=True, cwd=tmp)
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    deps = [p for p in [*site.getsitepackages(), sysconfig.get_paths()["purelib"]] if Path(p).is_dir()]
    Path(purelib, "_alarmkit_test_deps.pth").write_text("\n".join(dict.fromkeys(deps)) + "\n")
    wheel = next((tmp / "dist").glob("alarmkit-*.whl"))
    # without PYTHONPATH and away from the checkout: pip counts an alarmkit.egg-info (an editable install's) on
    # its path as alarmkit installed already ("the same version as the provided wheel") and installs nothing
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps",
                    "--disable-pip-version-check", str(wheel)], check=True, cwd=tmp, env=env)
    return venv


@pytest.mark.slow
def test_installed_wheel_runs_calibrate_reference_outside_the_repo(installed, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    where = subprocess.run([str(installed / "bin" / "python"), "-c",
                            "import alarmkit, pathlib; p = pathlib.Path(alarmkit.__file__).parent; "
                            "print(p); print((p / 'py.typed').is_file())"],
                           capture_output=True, text=True, env=env, cwd=tmp_path, check=True).stdout.split()
    assert Path(where[0]).is_relative_to(installed), f"imported {where[0]}, not the installed copy"
    assert where[1] == "True", "py.typed is not in the installed package"
    proc = subprocess.run([str(installed / "bin" / "alarmkit"), "calibrate", "--reference"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "comparing today's simulator with the run recorded on" in proc.stderr
    assert "crash_after_effect" in proc.stdout  # one row per probe of the recorded run
