"""Node.js for the JavaScript host: finding it (18 or newer), installing esbuild from npm into a
cache directory (pinned by ``host/package-lock.json``, never into the repository), and one host
process driven over two pipes (4-byte little-endian length, then JSON).
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ...errors import JsHostError, JsValueError

__all__ = ["HOST_DIR", "MIN_NODE", "cache_dir", "find_node", "find_esbuild", "install", "NodeProcess"]

HOST_DIR = Path(__file__).resolve().parent / "host"
MIN_NODE = 18  # node:fs readSync on a pipe, ES modules from data: URLs, global Request/Response (Node 18)


def _encoder() -> Any:
    """json's C encoder, made once: ``JSONEncoder.encode`` makes a new one on every call. Compact, ASCII,
    no NaN or infinity (JSON has none); a cycle is a RecursionError (no marker dict to look it up in)."""
    c = getattr(json.encoder, "c_make_encoder", None)
    if c is None:  # a Python without the _json accelerator
        return json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
    run = c(None, json.JSONEncoder().default, json.encoder.encode_basestring_ascii, None, ":", ",", False, False, False)
    return lambda obj: "".join(run(obj, 0))


def _decode(text: str) -> Any:
    """One message from host.mjs (JSON.stringify's output: no whitespace around it) by json's scanner
    itself, without ``loads``' whitespace matching around it."""
    return _scan(text, 0)[0]


_encode = _encoder()
_scan = json.JSONDecoder().scan_once
SPIN_US = 100  # how long each side polls the pipe for an answer before it blocks (see NodeProcess)

def _answer_s() -> float:
    """Wall-clock seconds one message may take before the host is declared hung (a synchronous endless
    loop in the module): 60, or ``$ALARMKIT_JSHOST_TIMEOUT_S``."""
    text = os.environ.get("ALARMKIT_JSHOST_TIMEOUT_S", "60")
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 86_400:
        raise JsHostError(f"ALARMKIT_JSHOST_TIMEOUT_S must be seconds in (0, 86400], got {text!r}; unset it for 60")
    return value


def _spin_s() -> float:
    """Wall-clock seconds each side polls the pipe before it blocks: ``SPIN_US`` microseconds, or
    ``$ALARMKIT_JSHOST_SPIN_US`` (0 never polls); 0 when this process may run on one CPU only, where a
    poll would take the CPU the other side needs to answer."""
    text = os.environ.get("ALARMKIT_JSHOST_SPIN_US")
    if text is None:
        value = float(SPIN_US)
    else:
        try:
            value = float(text)
        except ValueError:
            value = -1.0
        if not 0 <= value <= 10_000:
            raise JsHostError(f"ALARMKIT_JSHOST_SPIN_US must be microseconds in [0, 10000], got {text!r}; "
                              f"unset it for {SPIN_US}")
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # no affinity call (not Linux): the CPUs of the machine
        cpus = os.cpu_count() or 1
    return value / 1e6 if cpus > 1 else 0.0


def cache_dir() -> Path:
    """Where esbuild is installed: ``$ALARMKIT_JSHOST_CACHE`` or ``~/.cache/alarmkit/jshost``."""
    env = os.environ.get("ALARMKIT_JSHOST_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "alarmkit" / "jshost"


def find_node() -> str:
    """The ``node`` binary (``$ALARMKIT_NODE`` or PATH), checked to be version 18 or newer."""
    node = os.environ.get("ALARMKIT_NODE") or shutil.which("node")
    if not node:
        raise JsHostError("running a JavaScript worker needs Node.js 18 or newer: `node` is not on PATH "
                          "(install it, e.g. `conda env create -f environment.yml`, or set ALARMKIT_NODE)")
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as err:
        raise JsHostError(f"could not run {node} --version ({err}); install Node.js 18 or newer") from None
    m = re.match(r"v(\d+)\.", out)
    if not m or int(m.group(1)) < MIN_NODE:
        raise JsHostError(f"running a JavaScript worker needs Node.js {MIN_NODE} or newer; {node} is {out or 'unknown'} "
                          "(install a newer Node.js or point ALARMKIT_NODE at one)")
    return node


def find_esbuild(cache: Path | None = None) -> Path | None:
    """esbuild's ES module entry under the cache, if installed at the pinned version."""
    root = cache or cache_dir()
    pinned = json.loads((HOST_DIR / "package.json").read_text())["dependencies"]["esbuild"]
    pkg = root / "node_modules" / "esbuild" / "package.json"
    try:
        if json.loads(pkg.read_text()).get("version") != pinned:
            return None
    except (OSError, ValueError):
        return None
    entry = root / "node_modules" / "esbuild" / "lib" / "main.js"
    return entry if entry.exists() else None


def install(cache: Path | None = None, timeout: float = 600.0) -> Path:
    """``npm ci`` of the host's pinned packages (esbuild) into ``cache``; returns esbuild's entry."""
    root = cache or cache_dir()
    found = find_esbuild(root)
    if found is not None:
        return found
    npm = shutil.which("npm")
    if not npm:
        raise JsHostError("installing esbuild for the JavaScript host needs npm, which is not on PATH "
                          "(install Node.js 18 or newer with npm)")
    from ..._files import write_text  # the one way alarmkit writes a file

    root.mkdir(parents=True, exist_ok=True)
    ours = lambda p: p.name in ("package.json", "package-lock.json")  # noqa: E731 - the cache dir is alarmkit's own
    for name in ("package.json", "package-lock.json"):
        write_text(root / name, (HOST_DIR / name).read_text(), ours=ours, what="the JavaScript host's npm manifest")
    cmd = [npm, "ci", "--prefix", str(root), "--no-audit", "--no-fund", "--loglevel=error"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise JsHostError(f"`{' '.join(cmd)}` timed out after {timeout:.0f} s") from None
    found = find_esbuild(root)
    if out.returncode or found is None:
        raise JsHostError(f"`{' '.join(cmd)}` failed (exit {out.returncode}): {out.stderr.strip()[-500:]}")
    return found


class NodeProcess:
    """One ``node host.mjs`` process; ``send(msg)`` and ``recv()`` exchange JSON messages.

    The two sides take turns: one runs while the other waits for its answer. A wait that blocks in
    the kernel costs a wake-up (tens of microseconds on a virtual machine whose idle CPU must be
    woken), more than a trivial turn takes; so with two CPUs or more each side first polls the pipe
    for up to ``spin_s`` (host.mjs does the same) and blocks only when no answer came. A wait that
    outlasts its poll makes the next ones block at once, doubling up to 64 waits, so a slow peer or
    a busy machine is not made slower still by polling for nothing."""

    def __init__(self, node: str) -> None:
        self.answer_s = _answer_s()
        self.spin_s = _spin_s()
        to_r, to_w = os.pipe()
        from_r, from_w = os.pipe()
        self._err = tempfile.TemporaryFile()  # no name: Node's own messages, shown when it dies
        try:
            self.proc = subprocess.Popen(
                [node, "--no-warnings", str(HOST_DIR / "host.mjs"), str(to_r), str(from_w), f"{self.spin_s * 1e6:g}"],
                pass_fds=(to_r, from_w), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._err,
                preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
            )
        finally:
            os.close(to_r)
            os.close(from_w)
        os.set_blocking(from_r, False)  # this end is Python's alone: a read that finds nothing returns at once
        self._out, self._in = to_w, from_r
        self._buf = bytearray()
        self._skip = self._backoff = 0  # waits left to block without polling; the next backoff's length
        self.stalled = False  # True once a message went unanswered for answer_s (the process is stopped)
        self.round_trips = 0  # messages sent, for the benchmark's account of where the time goes
        self.polled = self.blocked = 0  # waits answered while polling, waits that blocked in select()
        hello = self.recv()
        if hello.get("t") != "ready":
            raise JsHostError(f"the JavaScript host did not start: {hello!r}")

    def send(self, msg: dict | str) -> None:
        """Send ``msg``, a dict or its JSON text already made (the bridge formats its alarm messages
        rather than encode them); raises ``JsValueError`` (nothing sent) for a value JSON cannot carry."""
        try:
            body = (msg if msg.__class__ is str else _encode(msg)).encode("utf-8")
        except (TypeError, ValueError, RecursionError) as err:
            raise JsValueError(f"values cross to JavaScript as JSON, and this one cannot ({err}); pass "
                               "strings, finite numbers, bools, None, lists and dicts with string keys") from None
        data = len(body).to_bytes(4, "little") + body
        self.round_trips += 1
        try:
            n = os.write(self._out, data)
            while n < len(data):  # over the pipe's 64 KiB: the rest as Node reads it
                data = data[n:]
                n = os.write(self._out, data)
        except (BrokenPipeError, OSError):
            raise self._died() from None

    def recv(self) -> dict[str, Any]:
        buf = self._buf
        if not buf:  # the usual case: nothing left over, and the next chunk is one whole message
            chunk = self._chunk()
            if len(chunk) == 4 + int.from_bytes(chunk[:4], "little"):
                return _decode(chunk[4:].decode("utf-8"))
            buf += chunk
        while True:
            if len(buf) >= 4:
                end = 4 + int.from_bytes(buf[:4], "little")
                if len(buf) >= end:
                    body = buf[4:end].decode("utf-8")
                    del buf[:end]
                    return _decode(body)
            buf += self._chunk()

    def _chunk(self) -> bytes:
        fd = self._in
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            chunk = None
            if self.spin_s:
                if self._skip:
                    self._skip -= 1
                else:
                    chunk = self._poll(fd)
            if chunk is None:
                chunk = self._block(fd)
        except OSError:  # closed by close(): the host is gone
            raise self._died() from None
        if not chunk:
            raise self._died()
        return chunk

    def _poll(self, fd: int) -> bytes | None:
        clock = time.perf_counter
        end = clock() + self.spin_s
        while clock() < end:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                continue
            self.polled += 1
            self._backoff = 0
            return chunk
        self._backoff = self._skip = min(2 * self._backoff + 1, 64)
        return None

    def _block(self, fd: int) -> bytes:
        self.blocked += 1
        ready, _, _ = select.select([fd], [], [], self.answer_s)
        if not ready:
            self.stalled = True
            self.close()
            raise JsHostError(
                f"the JavaScript host did not answer within {self.answer_s:g} s of wall-clock time (a synchronous "
                "endless loop in the worker's code?); its process was stopped and this simulation cannot go on; "
                f"if the code is only slow, raise ALARMKIT_JSHOST_TIMEOUT_S (seconds, now {self.answer_s:g})")
        return os.read(fd, 65536)

    def _died(self) -> JsHostError:
        if self._err.closed:  # stopped by close() (a stall): nothing to wait for or read
            return JsHostError("the JavaScript host was stopped earlier in this simulation; it cannot go on")
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self._err.seek(0)
        tail = self._err.read().decode("utf-8", "replace").strip().splitlines()[-5:]
        return JsHostError(f"the JavaScript host exited (code {self.proc.returncode}): {' | '.join(tail) or 'no message'}")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._out, self._in):
            try:
                os.close(fd)
            except OSError:
                pass
        self._out = self._in = -1
        self._err.close()


def _die_with_parent() -> None:
    """In the Node child, before it runs: SIGKILL it when alarmkit's process dies (``PR_SET_PDEATHSIG``),
    SIGKILL and SIGTERM included; a user's endless loop in JS would never read the closed pipe."""
    import ctypes
    import signal as _signal

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, _signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux's libc: the pipe's end still stops a host that reads it
        pass
