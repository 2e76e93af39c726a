"""The JavaScript host's tests need Node.js 18+ and esbuild (installed by `python3 dev.py test`)."""

from pathlib import Path

import pytest

OBJECTS = Path(__file__).resolve().parent / "objects"


@pytest.fixture(scope="session")
def js_host() -> Path:
    """The folder of the JS/TS test objects, or a skip naming why the host cannot run here."""
    from alarmkit.workers.js import available

    reason = available()
    if reason is not None:
        pytest.skip(f"the JavaScript host cannot run here: {reason}")
    return OBJECTS


# -- the Cloudflare libraries' fixtures (tests/workers/js/libs: package.json + package-lock.json, and one
# project per library) ------------------------------------------------------------------------------
LIBS = Path(__file__).resolve().parent / "libs"


def libs_cache() -> Path:
    """Where the libraries' fixture is installed: ``~/.cache/alarmkit/jslibs/<lock digest>`` (one install per lock)."""
    import hashlib
    import os

    digest = hashlib.sha256((LIBS / "package-lock.json").read_bytes()).hexdigest()[:12]
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "alarmkit" / "jslibs" / digest


@pytest.fixture(scope="session")
def js_libs(js_host) -> Path:
    """``node_modules`` holding agents, @cloudflare/actors and partyserver at the lock's versions, installed by
    ``npm ci`` from the registry once into the cache; a skip naming why when npm or the registry is not there."""
    import fcntl
    import shutil
    import subprocess

    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("the library tests install agents, @cloudflare/actors and partyserver with `npm ci`, and npm is not on PATH")
    root = libs_cache()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one install when several test processes start together
        if not (root / ".installed").exists():
            for name in ("package.json", "package-lock.json"):
                shutil.copyfile(LIBS / name, root / name)
            out = subprocess.run([npm, "ci", "--prefix", str(root), "--no-audit", "--no-fund", "--loglevel=error"],
                                 capture_output=True, text=True, timeout=900)
            if out.returncode:
                pytest.skip(f"`npm ci` of the library fixtures failed (no registry here?): {out.stderr.strip()[-300:]}")
            (root / ".installed").write_text("npm ci done\n")
    return root / "node_modules"


@pytest.fixture
def lib_project(js_libs, tmp_path):
    """``lib_project("agent")``: a copy of the library project ``libs/agent`` in ``tmp_path``, its
    node_modules the cached install (``js_libs``)."""
    import shutil

    def make(name: str) -> Path:
        dst = tmp_path / name
        shutil.copytree(LIBS / name, dst)
        (dst / "node_modules").symlink_to(js_libs, target_is_directory=True)
        return dst

    return make


@pytest.fixture(scope="session")
def npm_fixture():
    """``npm_fixture(name)``: the node_modules of ``tests/workers/js/libs/<name>`` (``npm_install``)."""
    from workers_types import npm_install  # tests/workers_types.py

    return npm_install
