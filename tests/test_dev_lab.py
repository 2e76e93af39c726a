"""``python3 dev.py lab``: as root it passes --allow-root, with extra arguments it still serves
notebooks/, and the Lab it starts never asks about Jupyter news. The last two are checked against a
real ``jupyter lab`` (no browser): it stays up as root and serves the override as its setting."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("alarmkit_dev_lab", ROOT / "dev.py")
dev = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(dev)


CM = "--ServerApp.contents_manager_class=alarmkit.viz._lab.NotebookContents"


def test_root_gets_allow_root_and_extra_arguments_keep_the_notebooks():
    assert dev.lab_arguments([], euid=0) == ["--allow-root", CM, "notebooks/"]
    assert dev.lab_arguments([], euid=1000) == [CM, "notebooks/"]
    assert dev.lab_arguments(["--port", "8889"], euid=1000) == [CM, "--port", "8889", "notebooks/"]
    assert dev.lab_arguments(["--allow-root", "--no-browser"], euid=0) == [CM, "--allow-root", "--no-browser",
                                                                           "notebooks/"]
    # a folder or file that exists is what the user asked to serve; a root dir option too
    assert dev.lab_arguments(["notebooks/01_lease_ledger_tour.py"], euid=1000) == [CM, "notebooks/01_lease_ledger_tour.py"]
    assert dev.lab_arguments(["--ServerApp.root_dir=/tmp"], euid=0) == ["--allow-root", CM, "--ServerApp.root_dir=/tmp"]
    mine = "--ServerApp.contents_manager_class=x.Y"  # the user's own contents manager is kept
    assert dev.lab_arguments([mine], euid=1000) == [mine, "notebooks/"]


def test_main_lab_runs_jupyter_with_them(monkeypatch):
    ran = []
    monkeypatch.setattr(dev, "ensure_env", lambda extras: dev.Env())
    monkeypatch.setattr(dev, "run", lambda cmd, **kw: ran.append([str(c) for c in cmd]) or 0)
    monkeypatch.setattr(dev.os, "geteuid", lambda: 0)
    assert dev.main(["lab", "--port=8890"]) == 0
    assert ran[-1][1:] == ["-m", "jupyter", "lab", "--allow-root", CM, "--port=8890", "notebooks/"]


def test_the_lab_settings_turn_the_news_prompt_off(tmp_path):
    path = dev.ensure_lab_settings(tmp_path)
    settings = json.loads(path.read_text())
    assert settings["@jupyterlab/apputils-extension:notification"] == {"fetchNews": "false", "checkForUpdates": False}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX users")
def test_a_real_lab_started_with_these_arguments_stays_up_and_serves_the_override(tmp_path):
    pytest.importorskip("jupyterlab")
    dev.ensure_lab_settings(tmp_path)
    port, token = _free_port(), "t" * 32
    env = {**os.environ, "PYTHONPATH": str(ROOT), **{f"JUPYTER{k}_DIR": str(tmp_path / v) for k, v in (
        ("_CONFIG", "config"), ("_RUNTIME", "runtime"), ("LAB_SETTINGS", "user-settings"),
        ("LAB_WORKSPACES", "workspaces"))}}
    args = dev.lab_arguments(["--no-browser", "--ip=127.0.0.1", f"--port={port}", "--ServerApp.port_retries=0",
                              f"--IdentityProvider.token={token}",
                              f"--LabApp.app_settings_dir={tmp_path / dev.LAB_OVERRIDES.parent.parent}"])
    args = [a if a != "notebooks/" else str(ROOT / "notebooks") for a in args]
    log = tmp_path / "lab.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "jupyter", "lab", *args], env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True, cwd=tmp_path)
    try:
        url = f"http://127.0.0.1:{port}/lab/api/settings/@jupyterlab/apputils-extension:notification?token={token}"
        deadline, got = time.monotonic() + 90, None
        while time.monotonic() < deadline and got is None:
            assert proc.poll() is None, f"jupyter lab exited ({proc.returncode}):\n{log.read_text()[-2000:]}"
            try:
                with urllib.request.urlopen(url, timeout=2) as r:
                    got = json.loads(r.read())
            except OSError:
                time.sleep(0.3)
        assert got is not None, log.read_text()[-2000:]
        # an override becomes the schema's default (jupyterlab_server settings_utils), which Lab uses
        # while the user has not set the value
        defaults = {k: v.get("default") for k, v in got["schema"]["properties"].items()}
        assert (defaults["fetchNews"], defaults["checkForUpdates"]) == ("false", False)
        assert "fetchNews" not in got["settings"]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=20)
