"""dev.py, the set-up commands: conda or .venv, the install stamps, the JupyterLab default viewer,
and chromium from apt without recommends, without upgrades, with apt's output in a log file."""

from __future__ import annotations

import importlib.util
import json
import os
import stat
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("alarmkit_dev", ROOT / "dev.py")
dev = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(dev)

# lines of a real `apt-get -s install --no-install-recommends chromium` (Debian 12), one of them an upgrade
SIMULATION = """NOTE: This is only a simulation!
Inst chromium-common (131.0.6778.85-1~deb12u1 Debian-Security:12/stable-security [amd64])
Inst libudev1 [252.38-1~deb12u1] (252.39-1~deb12u2 Debian:12.12/stable [amd64])
Inst chromium (131.0.6778.85-1~deb12u1 Debian-Security:12/stable-security [amd64])
Conf chromium-common (131.0.6778.85-1~deb12u1 Debian-Security:12/stable-security [amd64])
"""


def test_conda_environment_is_used_only_when_active_and_not_base(tmp_path):
    env = tmp_path / "envs" / "alarmkit"
    env.mkdir(parents=True)
    active = {"CONDA_PREFIX": str(env), "CONDA_DEFAULT_ENV": "alarmkit"}
    assert dev.conda_prefix(active, str(env)) == env
    assert dev.conda_prefix(active, str(tmp_path / "elsewhere")) is None  # python3 is not the env's
    assert dev.conda_prefix({}, str(env)) is None
    assert dev.conda_prefix({**active, "CONDA_DEFAULT_ENV": "base"}, str(env)) is None
    (env / "condabin").mkdir()  # what marks a base installation
    assert dev.conda_prefix(active, str(env)) is None


def test_install_stamps(tmp_path):
    venv_stamp, want = dev.Env().stamp("dev")
    assert venv_stamp == dev.VENV / ".installed-dev" and len(want) == 64 and " " not in want  # unchanged format
    conda_stamp, conda_want = dev.Env(tmp_path).stamp("notebooks")
    assert conda_stamp == tmp_path / ".alarmkit-installed-notebooks"
    assert conda_want == f"{want} {dev.ROOT}"  # another checkout sharing the env re-installs


def test_lab_settings_open_python_files_with_jupytext(tmp_path):
    other = tmp_path / dev.LAB_OVERRIDES.parent / "mine.json"
    other.parent.mkdir(parents=True)
    other.write_text('{"x": 1}')
    path = dev.ensure_lab_settings(tmp_path)
    assert path == tmp_path / "share/jupyter/lab/settings/overrides.d/alarmkit-notebooks.json"
    settings = json.loads(path.read_text())
    assert settings["@jupyterlab/docmanager-extension:plugin"]["defaultViewers"] == {"python": "Jupytext Notebook"}
    mtime = path.stat().st_mtime_ns
    assert dev.ensure_lab_settings(tmp_path) == path and path.stat().st_mtime_ns == mtime  # not rewritten
    assert other.read_text() == '{"x": 1}'


def test_apt_plan_is_read_into_new_and_upgraded():
    assert dev.apt_upgrades(SIMULATION) == (["chromium-common", "chromium"], ["libudev1"])


@pytest.fixture
def fake_apt(tmp_path, monkeypatch):
    """An apt-get on PATH that records its arguments, prints a plan for -s and 500 lines otherwise,
    and 'installs' chromium by creating the file."""
    bin_dir, calls, chromium = tmp_path / "bin", tmp_path / "calls.txt", tmp_path / "chromium"
    bin_dir.mkdir()
    plan = tmp_path / "plan.txt"
    script = bin_dir / "apt-get"
    script.write_text(f"""#!/bin/sh
echo "$*" >> {calls}
case "$1" in
  -s) cat {plan} ;;
  install) i=0; while [ $i -lt 500 ]; do echo "Unpacking lib$i ..."; i=$((i+1)); done; touch {chromium} ;;
  *) echo "Hit:1 http://deb.debian.org/debian bookworm InRelease" ;;
esac
""")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(dev.os, "geteuid", lambda: 0, raising=False)
    return {"plan": plan, "calls": calls, "chromium": chromium, "log": tmp_path / "logs" / "apt.log"}


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX shell script stands in for apt-get")
def test_chromium_install_prints_one_line_and_logs_the_rest(fake_apt, capsys):
    fake_apt["plan"].write_text(SIMULATION.replace("Inst libudev1 [252.38-1~deb12u1] (252.39", "Inst libudev1 (252.39"))
    dev.ensure_chromium(fake_apt["log"], fake_apt["chromium"])
    out = capsys.readouterr().out.splitlines()
    assert out == [f"[dev] installing chromium and 2 package(s) it depends on, upgrading none "
                   f"(apt-get output in {fake_apt['log']})"]
    calls = fake_apt["calls"].read_text().splitlines()
    assert calls == ["update", "-s install -y --no-install-recommends --no-upgrade chromium",
                     "install -y --no-install-recommends --no-upgrade chromium"]
    assert fake_apt["log"].read_text().count("Unpacking lib") == 500
    assert fake_apt["chromium"].exists()


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX shell script stands in for apt-get")
def test_chromium_is_not_installed_when_apt_would_upgrade_a_package(fake_apt, capsys):
    fake_apt["plan"].write_text(SIMULATION)
    dev.ensure_chromium(fake_apt["log"], fake_apt["chromium"])
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and "it would upgrade 1 installed package(s) (libudev1)" in out[0], out
    assert "apt-get install -y --no-install-recommends --no-upgrade chromium" in out[0]
    assert [c.split()[0] for c in fake_apt["calls"].read_text().splitlines()] == ["update", "-s"]
    assert not fake_apt["chromium"].exists()


def test_test_command_asks_pytest_why_tests_were_skipped(monkeypatch):
    ran = []
    monkeypatch.setattr(dev, "ensure_env", lambda extras: dev.Env())
    monkeypatch.setattr(dev, "ensure_chromium", lambda log: None)
    monkeypatch.setattr(dev, "ensure_workerd", lambda env: None)
    monkeypatch.setattr(dev, "run", lambda cmd, **kw: ran.append([str(c) for c in cmd]) or 0)
    monkeypatch.setattr(dev.os, "geteuid", lambda: 1000)  # as root, lab adds --allow-root (tests/test_dev_lab.py)
    assert dev.main(["test", "tests/kernel/test_kernel.py", "-x"]) == 0
    n = str(2 * (os.cpu_count() or 1))  # two workers a core: the suite's real-time waits overlap
    assert ran[-1][1:] == ["-m", "pytest", "-rs", "-n", n, "--dist", "loadscope", "tests/kernel/test_kernel.py", "-x"]
    assert dev.main(["test", "-n", "0", "tests/kernel/test_kernel.py"]) == 0  # the workers a contributor chose
    assert ran[-1][1:] == ["-m", "pytest", "-rs", "-n", "0", "tests/kernel/test_kernel.py"]
    assert dev.main(["lab"]) == 0
    assert ran[-1][1:] == ["-m", "jupyter", "lab", "--ServerApp.contents_manager_class=alarmkit.viz._lab.NotebookContents",
                           "notebooks/"]


def test_the_quick_tier_and_the_full_suite_run_on_every_core_with_their_hypothesis_profile(monkeypatch, capsys):
    ran = []
    monkeypatch.setattr(dev, "ensure_env", lambda extras: dev.Env())
    monkeypatch.setattr(dev, "ensure_chromium", lambda log: None)
    monkeypatch.setattr(dev, "ensure_workerd", lambda env: None)
    monkeypatch.setattr(dev, "run", lambda cmd, **kw: ran.append(([str(c) for c in cmd], kw)) or 0)
    assert dev.main(["test", "--quick", "-x"]) == 0
    cmd, kw = ran[-1]
    assert cmd[1:] == ["-m", "pytest", "-rs", "-m", "quick", "-n", "auto", "--dist", "loadscope", "-x"]
    assert kw["env"]["ALARMKIT_TEST_TIER"] == "quick"
    assert "on every core" in capsys.readouterr().out
    assert dev.main(["test", "--quick", "-n", "1"]) == 0  # the workers a contributor chose: said so, not "every core"
    assert ran[-1][0][1:] == ["-m", "pytest", "-rs", "-m", "quick", "-n", "1"]
    said = capsys.readouterr().out
    assert "with the workers you chose" in said and "every core" not in said
    assert dev.main(["test"]) == 0
    assert ran[-1][1]["env"]["ALARMKIT_TEST_TIER"] == "full"


def test_profile_runs_the_suite_on_one_core_measured_then_writes_the_tables(monkeypatch, tmp_path):
    ran = []
    env = dev.Env()
    env.state = tmp_path
    monkeypatch.setattr(dev, "ensure_env", lambda extras: env)
    monkeypatch.setattr(dev, "ensure_chromium", lambda log: None)
    monkeypatch.setattr(dev, "ensure_workerd", lambda env: None)
    monkeypatch.setattr(dev, "run", lambda cmd, **kw: ran.append([str(c) for c in cmd]) or 0)
    assert dev.main(["test", "--profile", "tests/kernel"]) == 0
    suite, table = ran
    assert suite[1:7] == ["-m", "pytest", "-rs", "-n", "0", "-p"] and suite[-1] == "tests/kernel"
    assert f"--cpu-profile={tmp_path / 'profile' / 'profile.json'}" in suite and "--cov=alarmkit" in suite
    assert table[1:] == [str(dev.ROOT / "tests" / "profile_table.py"), str(tmp_path / "profile" / "profile.json"),
                         "--coverage", str(tmp_path / "profile" / "coverage.json")]


def test_no_command_prints_the_usage(capsys):
    assert dev.main([]) == 2
    assert "python3 dev.py lab" in capsys.readouterr().out
