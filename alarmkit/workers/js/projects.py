"""A worker project with npm dependencies (``package.json`` and its ``package-lock.json``), installed as
``npm ci`` installs it, into a cache folder: never into the project, which may be a source checkout.

``install_project(folder)`` copies the project's own files (not ``node_modules``, not dot-folders) into
``~/.cache/alarmkit/projects/<name>-<hash of the lock file>`` (``$ALARMKIT_PROJECTS_CACHE``), runs
``npm ci`` there once per lock file and returns the copy's folder; load the copy's wrangler file or
entry. Notebook 12 installs its Agent this way (notebooks/workers/agent/).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from ..._files import write_bytes
from ...errors import JsHostError
from ._node import cache_dir

__all__ = ["install_project", "projects_dir"]

_SKIP = ("node_modules",)


def projects_dir() -> Path:
    return Path(os.environ.get("ALARMKIT_PROJECTS_CACHE") or cache_dir().parent / "projects")


def install_project(folder: str | os.PathLike, timeout: float = 900.0) -> Path:
    """The installed copy of the project in ``folder`` (see the module docstring); ``JsHostError`` naming
    what is wrong: no such folder, no lock file, npm missing, ``npm ci`` failing (its last lines)."""
    src = Path(folder)
    if not src.is_dir():
        raise JsHostError(f"no project folder {str(src)!r}")
    lock = src / "package-lock.json"
    if not lock.is_file() or not (src / "package.json").is_file():
        raise JsHostError(f"{str(src)!r} has no package.json and package-lock.json: pin the project's packages "
                          "(npm install --package-lock-only) so every run installs the same versions")
    digest = hashlib.sha256(lock.read_bytes()).hexdigest()[:16]
    root = projects_dir() / f"{src.resolve().name}-{digest}"
    done = root / ".alarmkit-installed"
    _copy(src, root)
    if done.is_file():
        return root
    npm = shutil.which("npm")
    if not npm:
        raise JsHostError(f"installing {str(src)!r} needs npm, which is not on PATH (install Node.js 18 or newer)")
    cmd = [npm, "ci", "--prefix", str(root), "--no-audit", "--no-fund", "--loglevel=error"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=root)
    except subprocess.TimeoutExpired:
        raise JsHostError(f"`npm ci` of {str(src)!r} timed out after {timeout:.0f} s") from None
    if out.returncode:
        tail = " ".join(out.stderr.strip().splitlines()[-3:])[:400]
        raise JsHostError(f"`npm ci` of {str(src)!r} failed (exit {out.returncode}): {tail}")
    write_bytes(done, digest.encode(), ours=_ours, what="the project's install mark")
    return root


def _ours(path: Path) -> bool:  # the cache folder is alarmkit's own: only its copies are ever replaced
    return projects_dir().resolve() in path.resolve().parents


def _copy(src: Path, root: Path) -> None:
    """The project's files into ``root`` (again each time: a source edited since is the one that runs)."""
    root.mkdir(parents=True, exist_ok=True)
    for path in src.rglob("*"):
        rel = path.relative_to(src)
        if any(part in _SKIP or (part.startswith(".") and part != ".npmrc") for part in rel.parts):
            continue
        if path.is_file():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            write_bytes(root / rel, path.read_bytes(), ours=_ours, what="a copy of the project's file")
