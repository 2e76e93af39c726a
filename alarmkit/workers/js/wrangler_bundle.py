"""Wrangler's own bundle beside the JavaScript host's: ``alarmkit worker --compare-wrangler``.

Where wrangler is installed in the project's ``node_modules`` (the wrangler file's folder or one above
it), ``compare_wrangler`` runs ``wrangler deploy --dry-run --outdir`` offline (``host/no-network.cjs``,
preloaded with ``node -r``, refuses every network connection) and compares what it bundled with what
the host bundles for the same file (``host/bundle-compare.mjs``): the project's modules and its
packages' modules, each by path and by a digest of its text, and the ``cloudflare:*`` modules each
leaves to the runtime. What each side supplies itself (wrangler's unenv polyfills and templates, the
host's stand-ins for Node's built-ins) is counted and named as not compared.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import WorkerError
from ..wrangler import read_wrangler
from ._node import HOST_DIR

__all__ = ["BundleComparison", "compare_wrangler", "compare_outdir", "find_wrangler"]

TIMEOUT_S = 300.0
WAY_OUT = "or leave --compare-wrangler out"


@dataclass
class BundleComparison:
    """What the two bundles hold: ``agree`` when they bundle the same modules with the same text and leave
    the same ``cloudflare:*`` modules to the runtime; else the modules only in one, or in both with
    different text. ``network_refused``: connections wrangler tried and was refused."""

    agree: bool
    modules: int
    only_wrangler: list[str] = field(default_factory=list)
    only_ours: list[str] = field(default_factory=list)
    differ: list[str] = field(default_factory=list)
    cloudflare: dict[str, list[str]] = field(default_factory=dict)
    shims: dict[str, int] = field(default_factory=dict)
    network_refused: int = 0
    wrangler_version: str = ""

    def line(self) -> str:
        """One line for the terminal."""
        head = f"wrangler {self.wrangler_version} bundle"
        skipped = (f"not compared: wrangler's own polyfills ({self.shims.get('wrangler', 0)} modules) and alarmkit's "
                   f"stand-ins ({self.shims.get('ours', 0)})")
        if self.network_refused:  # the dry run reached for the network and went on without it: said
            skipped += f"; wrangler tried the network {self.network_refused} time(s), refused: it ran offline"
        if self.agree:
            return f"{head}: agrees with alarmkit's ({self.modules} modules, same text; {skipped})"
        parts = [f"only in wrangler's: {', '.join(self.only_wrangler)}" if self.only_wrangler else "",
                 f"only in alarmkit's: {', '.join(self.only_ours)}" if self.only_ours else "",
                 f"different text: {', '.join(self.differ)}" if self.differ else ""]
        if self.cloudflare.get("wrangler") != self.cloudflare.get("ours"):
            parts.append(f"cloudflare modules: wrangler {self.cloudflare.get('wrangler')}, "
                         f"alarmkit {self.cloudflare.get('ours')}")
        return f"{head}: DIFFERS from alarmkit's ({'; '.join(p for p in parts if p)}; {skipped})"

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def find_wrangler(folder: Path) -> Path | None:
    """``node_modules/wrangler/package.json`` in ``folder`` or the nearest folder above it, as Node finds it."""
    for d in (folder, *folder.parents):
        pkg = d / "node_modules" / "wrangler" / "package.json"
        if pkg.is_file():
            return pkg
    return None


def _wrangler_bin(pkg: Path) -> tuple[Path, str]:
    try:
        meta = json.loads(pkg.read_text("utf-8"))
        rel = meta["bin"]["wrangler"] if isinstance(meta.get("bin"), dict) else meta["bin"]
        binary = (pkg.parent / str(rel)).resolve()
    except (OSError, ValueError, KeyError, TypeError):
        raise WorkerError(f"--compare-wrangler: {pkg} names no wrangler program (its bin); reinstall wrangler "
                          f"(npm install -D wrangler), {WAY_OUT}") from None
    if not binary.is_file():
        raise WorkerError(f"--compare-wrangler: wrangler's program {binary} is missing; reinstall wrangler, {WAY_OUT}")
    return binary, str(meta.get("version", "?"))


def compare_wrangler(wrangler: str | Path, entry: str | Path | None = None) -> BundleComparison:
    """Run wrangler's dry-run bundle of the project of ``wrangler`` (offline) and compare it with the host's
    bundle of ``entry`` (default: the wrangler file's ``main``). ``WorkerError`` (one line naming the way
    out) when wrangler is not installed, fails, or leaves no bundle to read."""
    from . import ensure

    cfg = read_wrangler(wrangler)
    here = Path(cfg.path).resolve().parent
    if entry is None:
        if not cfg.main:
            raise WorkerError(f"--compare-wrangler: {cfg.path} names no main, which wrangler needs; set main, {WAY_OUT}")
        entry = here / cfg.main
    entry = Path(entry).resolve()
    if entry.suffix not in (".js", ".mjs", ".ts", ".mts", ".jsx", ".tsx"):
        raise WorkerError(f"--compare-wrangler compares JavaScript bundles; {entry.name} is not a JS/TS module; {WAY_OUT}")
    pkg = find_wrangler(here)
    if pkg is None:
        raise WorkerError(f"--compare-wrangler: no wrangler in node_modules of {here} or a folder above it; "
                          f"`npm install -D wrangler` there, {WAY_OUT}")
    binary, version = _wrangler_bin(pkg)
    node, esbuild = ensure()
    # no banner: wrangler's banner checks npm for a newer wrangler (registry.npmjs.org) once its cache in the
    # temporary folder is stale, and the refusal was counted as the dry run reaching for the network
    env = dict(os.environ, WRANGLER_SEND_METRICS="false", CI="true", NO_COLOR="1", FORCE_COLOR="0",
               WRANGLER_HIDE_BANNER="true")
    preload = str(HOST_DIR / "no-network.cjs").replace("\\", "\\\\").replace('"', '\\"')
    # every Node process the dry run starts (a build command's npm, a child node) preloads it too
    env["NODE_OPTIONS"] = f'{env.get("NODE_OPTIONS", "")} --require "{preload}"'.strip()
    with tempfile.TemporaryDirectory(prefix="alarmkit-wrangler-") as out, \
            tempfile.TemporaryDirectory(prefix="alarmkit-wrangler-tmp-") as tmp:
        # wrangler's own temporary files (update-check's cache among them) in a folder of ours, removed after:
        # not in the machine's /tmp, and no answer that depends on what another process left there
        env.update(TMPDIR=tmp, TMP=tmp, TEMP=tmp)
        cmd = [node, "-r", str(HOST_DIR / "no-network.cjs"), str(binary), "deploy", "--dry-run", "--outdir", out,
               "--config", str(Path(cfg.path).resolve())]
        try:
            run = subprocess.run(cmd, cwd=here, env=env, capture_output=True, text=True, timeout=TIMEOUT_S,
                                 stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise WorkerError(f"--compare-wrangler: wrangler's dry run took over {TIMEOUT_S:.0f} s; {WAY_OUT}") from None
        except OSError as err:
            raise WorkerError(f"--compare-wrangler: could not run wrangler ({err}); {WAY_OUT}") from None
        refused = sum(line.startswith("alarmkit-no-network:") for line in run.stderr.splitlines())
        if run.returncode:
            last = _last_line(run.stderr) or _last_line(run.stdout) or "no message"
            raise WorkerError(f"--compare-wrangler: `wrangler deploy --dry-run` failed (exit {run.returncode}): {last}; "
                              f"fix what wrangler names, {WAY_OUT}")
        result = compare_outdir(Path(out), entry, here, node, esbuild, cfg)
    result.network_refused, result.wrangler_version = refused, version
    return result


def _last_line(text: str) -> str:
    """The last line of wrangler's output that says something (not a rule of dashes, not our refusals)."""
    lines = [ln.strip() for ln in text.splitlines()
             if not ln.startswith("alarmkit-no-network:") and set(ln.strip()) - set("─-=▲✘ ")]
    return lines[-1][:200] if lines else ""


def compare_outdir(outdir: Path, entry: Path, root: Path, node: str, esbuild: Path, cfg) -> BundleComparison:
    """Compare a wrangler ``--outdir`` already written with the host's bundle of ``entry``."""
    build = {"define": cfg.define, "alias": {k: str((root / v).resolve()) if v.startswith(".") else v
                                             for k, v in cfg.alias.items()}}
    arg = json.dumps({"entry": str(entry), "esbuild": str(esbuild), "flags": cfg.compatibility_flags, "build": build,
                      "compat": cfg.compatibility_date, "outdir": str(outdir), "root": str(root)})
    try:
        run = subprocess.run([node, "--no-warnings", str(HOST_DIR / "bundle-compare.mjs"), arg], capture_output=True,
                             text=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise WorkerError(f"--compare-wrangler: the comparison took over {TIMEOUT_S:.0f} s; {WAY_OUT}") from None
    try:
        data = json.loads(run.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        tail = (run.stderr.strip().splitlines() or ["no message"])[-1][:200]
        raise WorkerError(f"--compare-wrangler: alarmkit's own bundle of {entry.name} failed: {tail}; {WAY_OUT}") from None
    if "error" in data:
        raise WorkerError(f"--compare-wrangler: {str(data['error'])[:240]}; {WAY_OUT}")
    return BundleComparison(**data)
