"""Run the calibration twin on a real ``workerd`` (stdlib only).

``find_workerd()`` locates a workerd binary (env ``ALARMKIT_WORKERD`` or the npm install under the
cache dir), ``install_workerd()`` installs the npm package ``workerd`` there, and
``WorkerdProcess`` starts ``workerd serve`` on 127.0.0.1 with the twin worker
(``twin/worker.js``) and Durable Object storage on a local directory that survives ``restart()``;
``redeploy("v2")`` restarts it onto the twin after a deploy that removed ``FidDeploy``'s ``alarm()``.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from ..errors import WorkerdError

DEFAULT_VERSION = "1.20261117.1"
# Newest compatibility date accepted by workerd 1.20261117.1 is 2026-11-24; the date of the
# release itself is used so that the same config also loads on that exact build.
DEFAULT_COMPAT_DATE = "2026-11-17"
DEFAULT_COMPAT_FLAGS: tuple[str, ...] = ()
TWIN_DIR = Path(__file__).resolve().parent / "twin"
ENV_BINARY = "ALARMKIT_WORKERD"
ENV_CACHE = "ALARMKIT_WORKERD_CACHE"
# the twin's deploys: "v1" is worker.js; "v2" puts deploy-v2.js (FidDeploy without alarm()) before it as
# the main module
DEPLOYS = {"v1": "", "v2": '(name = "deploy-v2.js", esModule = embed "deploy-v2.js"), '}


def cache_dir() -> Path:
    """Where ``install_workerd`` puts node_modules (``$ALARMKIT_WORKERD_CACHE`` or ~/.cache/alarmkit/workerd)."""
    env = os.environ.get(ENV_CACHE)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "alarmkit" / "workerd"


def _platform_package() -> Optional[str]:
    system = {"Linux": "linux", "Darwin": "darwin", "Windows": "windows"}.get(platform.system())
    machine = platform.machine().lower()
    arch = {"x86_64": "64", "amd64": "64", "aarch64": "arm64", "arm64": "arm64"}.get(machine)
    if not system or not arch:
        return None
    return f"@cloudflare/workerd-{system}-{arch}"


def _is_exe(p: Path) -> bool:
    return p.is_file() and os.access(p, os.X_OK)


def find_workerd(cache: Optional[Path] = None) -> Optional[str]:
    """Path of a workerd binary, or None.

    Order: ``$ALARMKIT_WORKERD`` (if it names an executable file), then the platform binary of the
    npm install under ``cache`` (default :func:`cache_dir`), then its ``node_modules/.bin/workerd``.
    """
    env = os.environ.get(ENV_BINARY)
    if env:
        p = Path(env).expanduser()
        if _is_exe(p):
            return str(p)
    root = Path(cache) if cache is not None else cache_dir()
    candidates = []
    pkg = _platform_package()
    if pkg:
        candidates.append(root / "node_modules" / pkg / "bin" / "workerd")
    candidates.append(root / "node_modules" / ".bin" / "workerd")
    for c in candidates:
        if _is_exe(c):
            return str(c)
    return None


def installed_version(binary: Optional[str] = None) -> Optional[str]:
    """The npm version (``1.20261117.1``) of the workerd package ``binary`` came from, if it is known."""
    binary = binary or find_workerd()
    if not binary:
        return None
    for parent in Path(binary).resolve().parents:
        pkg = parent / "node_modules" / "workerd" / "package.json"
        if pkg.is_file():
            try:
                return json.loads(pkg.read_text()).get("version")
            except (OSError, ValueError):
                return None
    return None


def workerd_version(binary: Optional[str] = None, timeout: float = 30.0) -> str:
    """Output of ``workerd --version`` (e.g. ``"workerd 2026-11-17"``)."""
    binary = binary or find_workerd()
    if not binary:
        raise WorkerdError("workerd not found; run install_workerd() or set ALARMKIT_WORKERD")
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=timeout)
    text = (out.stdout or out.stderr).strip()
    if out.returncode != 0 or not text:
        raise WorkerdError(f"`{binary} --version` failed ({out.returncode}): {out.stderr.strip()}")
    return text


def install_workerd(version: str = DEFAULT_VERSION, cache: Optional[Path] = None, timeout: float = 600.0) -> str:
    """``npm install --prefix <cache> workerd@VERSION``; returns the binary path."""
    npm = shutil.which("npm")
    if not shutil.which("node") or not npm:
        raise WorkerdError("installing workerd needs Node.js and npm: `node` or `npm` is not on PATH")
    root = Path(cache) if cache is not None else cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    cmd = [npm, "install", "--prefix", str(root), "--no-audit", "--no-fund", f"workerd@{version}"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise WorkerdError(f"npm install workerd@{version} timed out after {timeout:.0f} s") from e
    if out.returncode != 0:
        raise WorkerdError(f"npm install workerd@{version} failed ({out.returncode}):\n{out.stderr[-2000:]}")
    binary = find_workerd(root)
    if not binary:
        raise WorkerdError(f"npm install succeeded but no workerd binary under {root}/node_modules")
    workerd_version(binary)  # proves it runs
    return binary


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def render_config(
    port: int,
    storage_dir: str | Path,
    compat_date: str = DEFAULT_COMPAT_DATE,
    compat_flags: Sequence[str] = DEFAULT_COMPAT_FLAGS,
    deploy: str = "v1",
) -> str:
    """The twin's capnp config text (``twin/config.capnp.tmpl`` filled in); ``deploy`` is a key of
    ``DEPLOYS``."""
    if deploy not in DEPLOYS:
        raise WorkerdError(f"unknown twin deploy {deploy!r}; deploys: {sorted(DEPLOYS)}")
    tmpl = (TWIN_DIR / "config.capnp.tmpl").read_text()
    flags = ", ".join(json.dumps(f) for f in compat_flags)
    return (
        tmpl.replace("@PORT@", str(int(port)))
        .replace("@STORAGE_DIR@", str(Path(storage_dir).resolve()))
        .replace("@COMPAT_DATE@", compat_date)
        .replace("@COMPAT_FLAGS@", flags)
        .replace("@DEPLOY_MODULE@", DEPLOYS[deploy])
    )


def http_get_json(url: str, timeout: float = 15.0) -> Any:
    """GET ``url`` and decode JSON; error bodies (4xx/5xx with JSON) are returned, not raised."""
    req = urllib.request.Request(url, method="GET")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.loads(resp.read().decode())
    except urllib.error.HTTPError as e:
        body = e.read().decode(errors="replace")
        try:
            return json.loads(body)
        except ValueError:
            raise WorkerdError(f"HTTP {e.code} from {url}: {body[:500]}") from e


class WorkerdProcess:
    """A ``workerd serve`` running the twin on 127.0.0.1:PORT.

    Use as a context manager. ``storage_dir`` (default: inside the temp dir) holds the Durable
    Object SQLite files; ``restart()`` stops and starts workerd on the same storage and port.
    """

    def __init__(
        self,
        binary: Optional[str] = None,
        storage_dir: Optional[str | Path] = None,
        port: Optional[int] = None,
        compat_date: str = DEFAULT_COMPAT_DATE,
        compat_flags: Sequence[str] = DEFAULT_COMPAT_FLAGS,
        experimental: bool = True,
        startup_timeout: float = 30.0,
        stop_timeout: float = 10.0,
        verbose: bool = False,
    ) -> None:
        self.binary = binary or find_workerd()
        if not self.binary:
            raise WorkerdError("workerd not found; run install_workerd() or set ALARMKIT_WORKERD")
        self._tmp = tempfile.mkdtemp(prefix="alarmkit-workerd-")
        self.workdir = Path(self._tmp)
        self.storage_dir = Path(storage_dir) if storage_dir else self.workdir / "do-storage"
        self.storage_dir.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self.compat_date = compat_date
        self.compat_flags = tuple(compat_flags)
        self.experimental = experimental
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.verbose = verbose
        self.proc: Optional[subprocess.Popen] = None
        self.log_path = self.workdir / "workerd.log"
        self.starts = 0
        self.deploy = "v1"  # the twin's code: a key of DEPLOYS (redeploy() changes it)

    # ---- lifecycle -------------------------------------------------------------------------
    def _write_config(self) -> Path:
        from .._files import write_bytes, write_text

        # both files are alarmkit's own, in its work folder: a restart replaces them
        ours = lambda p: True  # noqa: E731
        for module in ("worker.js", "deploy-v2.js", "round3.js"):
            write_bytes(self.workdir / module, (TWIN_DIR / module).read_bytes(), ours=ours, flag="workdir")
        cfg = self.workdir / "config.capnp"
        write_text(cfg, render_config(self.port, self.storage_dir, self.compat_date, self.compat_flags, self.deploy),
                   ours=ours, flag="workdir")
        return cfg

    def start(self) -> "WorkerdProcess":
        if self.proc is not None and self.proc.poll() is None:
            return self
        cfg = self._write_config()
        cmd = [self.binary, "serve", str(cfg)]
        if self.experimental:
            cmd.append("--experimental")
        if self.verbose:
            cmd.append("--verbose")
        log = open(self.log_path, "ab")
        log.write(f"\n=== start {self.starts + 1} at {time.time():.3f}: {' '.join(cmd)}\n".encode())
        log.flush()
        try:
            self.proc = subprocess.Popen(
                cmd, cwd=str(self.workdir), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            log.close()
        self.starts += 1
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise WorkerdError(f"workerd exited with {self.proc.returncode} during startup:\n{self.log_tail()}")
            try:
                if http_get_json(self.url("/health"), timeout=2.0).get("ok"):
                    return self
            except (OSError, WorkerdError, ValueError):
                pass
            time.sleep(0.05)
        self.stop()
        raise WorkerdError(f"workerd did not answer on port {self.port} within {self.startup_timeout} s:\n{self.log_tail()}")

    def stop(self) -> Optional[int]:
        """Terminate (then kill) this workerd by its own PID; returns its exit code."""
        p, self.proc = self.proc, None
        if p is None:
            return None
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=self.stop_timeout)
        return p.returncode

    def restart(self, downtime: float = 0.0) -> "WorkerdProcess":
        """Stop, wait ``downtime`` seconds, start again on the same storage dir and port."""
        self.stop()
        if downtime > 0:
            time.sleep(downtime)
        return self.start()

    def redeploy(self, deploy: str, downtime: float = 0.0) -> "WorkerdProcess":
        """Restart onto another version of the twin's code (a key of ``DEPLOYS``), on the same storage."""
        if deploy not in DEPLOYS:
            raise WorkerdError(f"unknown twin deploy {deploy!r}; deploys: {sorted(DEPLOYS)}")
        self.stop()
        self.deploy = deploy
        if downtime > 0:
            time.sleep(downtime)
        return self.start()

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self) -> "WorkerdProcess":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, n: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def version(self) -> str:
        return workerd_version(self.binary)

    # ---- the clock and names the probes use (SimWorkerd has virtual ones) -------------------
    @staticmethod
    def sleep(seconds: float) -> None:
        time.sleep(seconds)

    @staticmethod
    def monotonic() -> float:
        return time.monotonic()

    @staticmethod
    def time() -> float:
        """Wall-clock seconds since the epoch (what workerd's ``Date.now()`` reads, / 1000)."""
        return time.time()

    @staticmethod
    def new_name(prefix: str) -> str:
        return f"{prefix}-{uuid.uuid4().hex[:10]}"

    # ---- HTTP helpers ----------------------------------------------------------------------
    def url(self, path: str, params: Optional[Mapping[str, Any]] = None) -> str:
        q = ""
        if params:
            q = "?" + urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
        return f"http://127.0.0.1:{self.port}{path}{q}"

    def get(self, path: str, params: Optional[Mapping[str, Any]] = None, timeout: float = 15.0) -> Any:
        return http_get_json(self.url(path, params), timeout=timeout)

    def events(self, obj: str, cls: Optional[str] = None) -> list[dict]:
        r = self.get("/events", {"obj": obj, "cls": cls})
        if "events" not in r:
            raise WorkerdError(f"/events failed for {obj}: {r}")
        return r["events"]

    def grant(self, obj: str, lease_id: str, ttl_ms: int) -> dict:
        return self.get("/grant", {"obj": obj, "id": lease_id, "ttl": ttl_ms})

    def lab(self, obj: str, revoke_throws: Optional[int] = None, always_throw: Optional[bool] = None,
            noboot: Optional[bool] = None) -> dict:
        return self.get("/lab", {
            "obj": obj,
            "revokeThrows": revoke_throws,
            "alwaysThrow": None if always_throw is None else int(bool(always_throw)),
            "noboot": None if noboot is None else int(bool(noboot)),
        })

    def state(self, obj: str) -> dict:
        return self.get("/state", {"obj": obj})

    def probe(self, op: str, obj: str, **params: Any) -> Any:
        p = {"obj": obj}
        for k, v in params.items():
            p[k] = json.dumps(v) if isinstance(v, bool) else v
        return self.get(f"/probe/{op}", p)
