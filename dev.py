#!/usr/bin/env python3
"""The project's set-up commands, runnable with nothing but python3 (3.11+):

    python3 dev.py demo       # the main job: run every scenario, write journal.duckdb and reports/*.html
    python3 dev.py test       # the whole test suite on every core (what CI runs); extra arguments go to pytest
    python3 dev.py lab        # JupyterLab on notebooks/ (double-click a notebook to open it as one)
    python3 dev.py notebooks  # the teaching bundle: every notebook executed, as HTML, in notebooks-html/
                              # (--out DIR; other arguments go to `alarmkit notebooks`, e.g. --only 02,07 --ci)
    python3 dev.py docs       # the API reference, from the docstrings (pdoc), in docs-api/ (--out DIR)
    python3 dev.py test --quick   # the quick tier, on every core: before every commit (tests/README.md)
    python3 dev.py test --profile # the whole suite on one core, measured: CPU per test and coverage, written
                                  # into tests/README.md and tests/costs.json

Each creates or reuses ./.venv and installs what it needs (re-installing only when pyproject.toml
changes; pip's output goes to .venv/pip.log, shown if it fails). Run from an activated conda environment (not base), they use that environment instead
of making ./.venv. ``test`` also makes sure the test suite's outside helpers are present: Debian's
chromium for the browser tests (via apt-get, when run as root, never upgrading installed packages;
apt's output goes to a log file) and workerd from npm for the calibration tests (when Node.js is
installed). pytest then says why each skipped test was skipped.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
CHROMIUM = Path("/usr/bin/chromium")
# JupyterLab reads every overrides.d/*.json of its app settings as defaults (jupyterlab_server's
# settings_utils); this one makes a double-click open a .py (the notebooks are py:percent) with
# jupytext's notebook factory instead of the text editor.
LAB_OVERRIDES = Path("share", "jupyter", "lab", "settings", "overrides.d", "alarmkit-notebooks.json")
# The news prompt ("Would you like to get notified about official Jupyter news?") is a toast over the
# notebook's first cell: fetchNews "false" (JupyterLab 4's apputils-extension notification.json) never asks
# and fetches nothing; checkForUpdates would need the network too.
LAB_SETTINGS = {"@jupyterlab/docmanager-extension:plugin": {"defaultViewers": {"python": "Jupytext Notebook"}},
                "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False}}


def say(msg: str) -> None:
    print(f"[dev] {msg}", flush=True)


def run(cmd: list, **kw) -> int:
    return subprocess.call([str(c) for c in cmd], **kw)


def conda_prefix(environ=os.environ, prefix: str = sys.prefix) -> Path | None:
    """The active conda environment, when this python3 is its interpreter and it is not base."""
    active = environ.get("CONDA_PREFIX")
    if not active or Path(prefix).resolve() != Path(active).resolve():
        return None
    if environ.get("CONDA_DEFAULT_ENV") == "base" or (Path(active) / "condabin").is_dir():
        return None  # never install into conda's base environment
    return Path(active)


class Env:
    """Where alarmkit gets installed: ./.venv, or the active conda environment."""

    def __init__(self, conda: Path | None = None) -> None:
        self.conda = conda
        if conda is not None:
            self.prefix = conda
            self.python = Path(sys.executable)
            self.bin = Path(sysconfig.get_path("scripts"))
            self.state = ROOT / ".alarmkit"  # logs; git ignores it
        else:
            self.prefix = VENV
            self.bin = VENV / ("Scripts" if os.name == "nt" else "bin")
            self.python = self.bin / "python"
            self.state = VENV

    def stamp(self, extras: str) -> tuple[Path, str]:
        """The stamp file saying what was installed, and what it must say to skip pip."""
        want = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
        if self.conda is None:
            return VENV / f".installed-{extras or 'core'}", want
        # one conda environment may serve several checkouts: the editable install must be this one
        return self.prefix / f".alarmkit-installed-{extras or 'core'}", f"{want} {ROOT}"


def ensure_env(extras: str) -> Env:
    if sys.version_info < (3, 11):
        sys.exit(f"alarmkit needs Python 3.11 or newer; this is {sys.version.split()[0]} ({sys.executable})")
    env = Env(conda_prefix())
    if env.conda is None and os.environ.get("CONDA_PREFIX"):
        say(f"not installing into conda environment {os.environ['CONDA_PREFIX']} (it is base, or python3 is not "
            f"its interpreter): using {VENV}; `conda activate alarmkit` first to use that environment")
    if env.conda is None and not env.python.exists():
        say(f"creating {VENV}")
        try:
            venv.EnvBuilder(with_pip=True).create(VENV)
        except Exception as err:  # Debian without python3-venv, for one
            sys.exit(f"could not create {VENV}: {err}\n(on Debian/Ubuntu: apt-get install python3-venv)")
    stamp, want = env.stamp(extras)
    if not (stamp.exists() and stamp.read_text() == want):
        where = f"conda environment {env.prefix}" if env.conda else str(VENV)
        say(f"installing alarmkit[{extras}] into {where} (first run takes a few minutes)")
        spec = f".[{extras}]" if extras else "."
        log = env.state / "pip.log"  # pip's warnings (e.g. a machine's index settings) go here, not on screen
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "w") as out:
            rc = run([env.python, "-m", "pip", "install", "--disable-pip-version-check", "-q", "-e", spec], cwd=ROOT,
                     stdout=out, stderr=subprocess.STDOUT)
        if rc:
            sys.exit(f"pip install failed (exit {rc}); its output is in {log}:\n" + log.read_text()[-3000:])
        stamp.write_text(want)
    ensure_lab_settings(env.prefix)
    return env


def ensure_lab_settings(prefix: Path) -> Path:
    """Write the JupyterLab default that opens notebooks/*.py as notebooks, into the environment."""
    path = prefix / LAB_OVERRIDES
    text = json.dumps(LAB_SETTINGS, indent=2) + "\n"
    if not (path.exists() and path.read_text(encoding="utf-8") == text):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return path


LAB_CONTENTS = "alarmkit.viz._lab.NotebookContents"


def lab_arguments(rest: list[str], euid: int | None = None) -> list[str]:
    """``jupyter lab``'s arguments for ``dev.py lab REST``: ``notebooks/`` unless REST names a folder or
    file that exists (or sets the root with ``--notebook-dir``/``--ServerApp.root_dir``), so ``--port 8889``
    still serves the notebooks; ``--allow-root`` when run as root (JupyterLab exits at once otherwise); the
    contents manager of ``alarmkit.viz._lab``, which keeps an untouched notebook from opening marked unsaved."""
    euid = os.geteuid() if euid is None and hasattr(os, "geteuid") else euid
    args = list(rest)
    rooted = any(a.startswith(("--notebook-dir", "--ServerApp.root_dir", "--ServerApp.notebook_dir")) for a in args)
    named = any(not a.startswith("-") and (ROOT / a).exists() for a in args)
    if not rooted and not named:
        args.append("notebooks/")
    if not any(a.startswith("--ServerApp.contents_manager_class") for a in args):
        args.insert(0, f"--ServerApp.contents_manager_class={LAB_CONTENTS}")  # untouched notebooks open clean
    if euid == 0 and "--allow-root" not in args:
        args.insert(0, "--allow-root")
    return args


def apt_upgrades(simulation: str) -> tuple[list[str], list[str]]:
    """From ``apt-get -s install`` output: the packages it would newly install, and those it would upgrade."""
    new, upgraded = [], []
    for line in simulation.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "Inst":
            (upgraded if len(parts) > 2 and parts[2].startswith("[") else new).append(parts[1])
    return new, upgraded


def ensure_chromium(log: Path, chromium: Path = CHROMIUM) -> None:
    """Install Debian's chromium and only what it depends on; never upgrade an installed package.

    Recommends are what upgraded packages before: chromium's recommended tree (udev, upower, perl
    modules, ...) pins newer systemd, perl and gdk-pixbuf. ``--no-upgrade`` only protects packages
    named on the command line, so the plan is simulated first and refused if it upgrades anything.
    """
    if chromium.exists():
        return
    if not (shutil.which("apt-get") and hasattr(os, "geteuid") and os.geteuid() == 0):
        say(f"no {chromium}: the browser tests will be skipped (as root: apt-get install --no-install-recommends chromium)")
        return
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w", encoding="utf-8") as out:
        out.write("$ apt-get update\n")
        out.flush()
        subprocess.call(["apt-get", "update"], stdout=out, stderr=subprocess.STDOUT, env=env)
        cmd = ["apt-get", "install", "-y", "--no-install-recommends", "--no-upgrade", "chromium"]
        plan = subprocess.run(["apt-get", "-s", *cmd[1:]], capture_output=True, text=True, env=env)
        out.write(f"$ apt-get -s {' '.join(cmd[1:])}\n{plan.stdout}{plan.stderr}")
        new, upgraded = apt_upgrades(plan.stdout)
        if plan.returncode or not new:
            say(f"apt-get cannot install chromium (see {log}): the browser tests will be skipped")
            return
        if upgraded:
            say(f"chromium not installed: it would upgrade {len(upgraded)} installed package(s) "
                f"({', '.join(upgraded[:6])}{', ...' if len(upgraded) > 6 else ''}); to accept that, run "
                f"`{' '.join(cmd)}` (plan in {log}); the browser tests will be skipped")
            return
        say(f"installing chromium and {len(new) - 1} package(s) it depends on, upgrading none (apt-get output in {log})")
        out.write(f"$ {' '.join(cmd)}\n")
        out.flush()
        rc = subprocess.call(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    if rc or not chromium.exists():
        say(f"apt-get install chromium failed (exit {rc}; see {log}): the browser tests will be skipped")


def ensure_workerd(env: Env) -> None:
    if not shutil.which("npm"):
        say("no Node.js/npm: the real-workerd calibration tests will be skipped")
        return
    rc = run([env.python, "-m", "alarmkit", "calibrate", "--install-only"], cwd=ROOT)
    if rc:
        say("workerd could not be installed from npm: the calibration tests will be skipped")
    # the JavaScript host's esbuild (pinned by alarmkit/workers/js/host/package-lock.json, into ~/.cache)
    rc = run([env.python, "-c", "from alarmkit.workers.js import install; install()"], cwd=ROOT)
    if rc:
        say("esbuild could not be installed from npm: the JavaScript host's tests will be skipped")


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("demo", "test", "lab", "notebooks", "docs"):
        print(__doc__.strip())
        return 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "demo":
        env = ensure_env("notebooks")
        return run([env.bin / "alarmkit", "demo", *rest], cwd=ROOT)
    if cmd == "lab":
        env = ensure_env("notebooks")
        return run([env.python, "-m", "jupyter", "lab", *lab_arguments(rest)], cwd=ROOT)
    if cmd == "notebooks":
        env = ensure_env("notebooks")
        rest = ["--html" if a == "--out" else "--html=" + a[6:] if a.startswith("--out=") else a for a in rest]
        out = [] if any(a == "--html" or a.startswith("--html=") for a in rest) else ["--html", "notebooks-html"]
        return run([env.bin / "alarmkit", "notebooks", *out, *rest], cwd=ROOT)
    env = ensure_env("dev")
    if cmd == "docs":
        return build_docs(env, rest)
    if "--quick" in rest:
        rest = [a for a in rest if a != "--quick"]
        n = workers(rest)
        say("running the quick tier (tests marked quick at collection: no browser, notebook, real workerd, slow "
            f"or costly test; tests/README.md) {'on every core' if n else 'with the workers you chose'}")
        return run([env.python, "-m", "pytest", "-rs", "-m", "quick", *n, *rest], cwd=ROOT,
                   env=tier_env("quick"))
    ensure_chromium(env.state / "apt.log")
    ensure_workerd(env)
    if "--profile" in rest:
        return profile(env, [a for a in rest if a != "--profile"])
    n = workers(rest, per_core=2)
    say(f"running the test suite {'on every core (two workers a core)' if n else 'with the workers you chose'}")
    return run([env.python, "-m", "pytest", "-rs", *n, *rest], cwd=ROOT, env=tier_env("full"))


def workers(rest: list[str], per_core: int = 1) -> list[str]:
    """pytest-xdist's workers, unless the arguments choose them: ``-n auto`` (one per core) for the quick
    tier, which is all CPU; two per core for the whole suite, where real workerd, browsers and Jupyter
    kernels wait in real time and another worker's tests can use the core meanwhile (tests/README.md).
    ``loadscope`` keeps a module's tests on one worker, so a module's Chromium or kernel starts once."""
    chosen = any(a in ("-n", "--numprocesses", "no:xdist") or a.startswith(("-n", "--numprocesses=", "--dist"))
                 for a in rest)
    n = "auto" if per_core == 1 else str(per_core * (os.cpu_count() or 1))
    return [] if chosen else ["-n", n, "--dist", "loadscope"]


def tier_env(tier: str) -> dict[str, str]:
    """The environment of a test run: ``ALARMKIT_TEST_TIER`` sets Hypothesis's examples (tests/conftest.py)."""
    return {**os.environ, "ALARMKIT_TEST_TIER": tier}


def profile(env: Env, rest: list[str]) -> int:
    """``dev.py test --profile``: the whole suite on one core with each test's CPU time and coverage.py, then
    the tables of tests/README.md and tests/costs.json (the quick tier's measured costs) rewritten."""
    out = env.state / "profile"
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("profile*.json"):
        old.unlink()
    say(f"profiling the test suite on one core (CPU time per test, coverage); raw data in {out}")
    rc = run([env.python, "-m", "pytest", "-rs", "-n", "0", "-p", "no:randomly", "--durations=50",
              f"--cpu-profile={out / 'profile.json'}", "--cov=alarmkit", f"--cov-report=json:{out / 'coverage.json'}", *rest], cwd=ROOT, env=tier_env("full"))
    done = run([env.python, ROOT / "tests" / "profile_table.py", out / "profile.json", "--coverage", out / "coverage.json"],
               cwd=ROOT)
    return rc or done
# every public module, at its home (alarmkit.plots and the other old paths are these modules)
API_MODULES = ("alarmkit", "alarmkit.errors", "alarmkit.kernel", "alarmkit.journal", "alarmkit.journal.invariants",
               "alarmkit.runtime", "alarmkit.runtime.faults", "alarmkit.runtime.profiles", "alarmkit.runtime.facets",
               "alarmkit.scenarios", "alarmkit.viz", "alarmkit.viz.plots", "alarmkit.viz.report",
               "alarmkit.viz.widgets", "alarmkit.explore", "alarmkit.calibrate", "alarmkit.realruns")


def build_docs(env: Env, rest: list[str]) -> int:
    """``dev.py docs [--out DIR]``: the API reference of every public module, from the docstrings."""
    out = "docs-api"
    if "--out" in rest:
        i = rest.index("--out")
        if i + 1 >= len(rest):
            print("dev.py docs: --out needs a folder, e.g. --out docs-api", file=sys.stderr)
            return 2
        out, rest = rest[i + 1], rest[:i] + rest[i + 2:]
    say(f"writing the API reference into {out}/")
    return run([env.python, "-m", "pdoc", *API_MODULES, "--no-show-source", "--docformat", "restructuredtext",
                "-o", out, *rest], cwd=ROOT, stderr=subprocess.DEVNULL if "-v" not in rest else None)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
