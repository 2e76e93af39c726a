"""Shared by the JavaScript and the Python Workers hosts' surface checks (a module of its own, as
``chromium_paths``: several test folders have a conftest.py): ``npm_install`` puts a pinned fixture of
``tests/workers/js/libs/`` into a cache folder, and ``declared`` reads the members of ``DurableObjectState``,
``DurableObjectStorage``, ``SqlStorage`` and the worker global scope from ``@cloudflare/workers-types``."""

import re
from pathlib import Path

import pytest

LIBS = Path(__file__).resolve().parent / "workers" / "js" / "libs"


def npm_install(name: str) -> Path:
    """``tests/workers/js/libs/<name>``'s pinned packages, installed with ``npm ci`` from its committed lock file
    into a cache folder (never into the repository; again only when the lock file changed); its node_modules, or
    a skip naming why it could not be installed."""
    import os
    import shutil
    import subprocess

    from alarmkit.workers.js._node import cache_dir

    src = LIBS / name
    root = Path(os.environ.get("ALARMKIT_TESTLIBS_CACHE") or cache_dir().parent / "testlibs") / name
    lock = (src / "package-lock.json").read_text()
    if not ((root / "node_modules").is_dir() and (root / "package-lock.json").is_file()
            and (root / "package-lock.json").read_text() == lock):
        npm = shutil.which("npm")
        if not npm:
            pytest.skip(f"installing the {name} fixture needs npm, which is not on PATH")
        root.mkdir(parents=True, exist_ok=True)
        for f in ("package.json", "package-lock.json"):
            shutil.copyfile(src / f, root / f)
        out = subprocess.run([npm, "ci", "--prefix", str(root), "--no-audit", "--no-fund", "--loglevel=error"],
                             capture_output=True, text=True, timeout=600)
        if out.returncode:
            pytest.skip(f"`npm ci` of the {name} fixture failed (exit {out.returncode}): {out.stderr.strip()[-300:]}")
    return root / "node_modules"


INTERFACES = {"ctx": "DurableObjectState", "storage": "DurableObjectStorage", "sql": "SqlStorage"}
_MEMBER = re.compile(r"^\s+(?:readonly\s+)?(?:get\s+|set\s+)?([A-Za-z_$][\w$]*)\??\s*[(<:]")
_GLOBAL = re.compile(r"^declare (?:function|const|var) ([A-Za-z_$][\w$]*)\s*[:(<]")


def members(dts: str, name: str) -> list[str]:
    """The members of ``interface NAME`` or ``declare abstract class NAME`` in a .d.ts: names at brace depth 1
    and paren depth 0 (not the parameters of a signature spread over lines, not a nested type's fields)."""
    start = re.search(rf"^(?:interface|declare abstract class|declare class) {name}\b[^\n]*", dts, re.M)
    assert start, f"{name} is not declared in workers-types"
    out: list[str] = []
    depth = parens = 0
    began = False
    for line in dts[start.start():].splitlines():
        code = line.strip()
        if code.startswith(("*", "/*", "//")):
            continue
        if began and depth == 1 and parens == 0:
            m = _MEMBER.match(line)
            if m:
                out.append(m.group(1))
        for ch in line:
            if ch == "{":
                depth += 1
                began = True
            elif ch == "}":
                depth -= 1
            elif ch == "(":
                parens += 1
            elif ch == ")":
                parens -= 1
        if began and depth == 0:
            break
    return sorted(set(out))


def declared(dts: str) -> dict[str, list[str]]:
    names = {k: members(dts, v) for k, v in INTERFACES.items()}
    glob = set(members(dts, "ServiceWorkerGlobalScope")) | set(members(dts, "WorkerGlobalScope"))
    glob |= {m.group(1) for line in dts.splitlines() if (m := _GLOBAL.match(line)) and ": never" not in line}
    names["globals"] = sorted(glob)
    return names
