"""The processes and files of one recording: a work folder, workerd, the collector, a watchdog.

Nothing of a recording outlives it, however it ends:

- the work folder (``alarmkit-record-*`` in the system temp folder) is removed by ``Session.close``
  on every exit Python sees (an error, Ctrl-C, SIGTERM: ``sigterm_raises`` turns it into an
  exception so the ``finally`` runs);
- for the exits Python does not see (SIGKILL, a crash), a watchdog started first, in its own
  session (Ctrl-C at the terminal does not reach it), waits on a pipe from this process: when the
  pipe closes without the word ``done`` (the kernel closes it when this process dies, however it
  dies), it kills workerd's process group (workerd runs in a session of its own) and removes the
  work folder;
- workerd is stopped with SIGTERM, then SIGKILL after 10 s, on every exit.

The collector is a local HTTP server the tail worker posts to; it appends to files in the work
folder, never to a user's files (``record`` copies them to ``--out`` through ``_files`` at the end).
"""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from ..errors import AlarmkitError

__all__ = ["Session", "Collector", "sigterm_raises", "Stopped"]

_WATCHDOG = r"""
import os, shutil, signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
work, groups, done = sys.argv[1], [], False
for line in sys.stdin:
    word = line.strip()
    if word == "done":
        done = True
    elif word.isdigit():
        groups.append(int(word))
if not done:
    for g in groups:
        try:
            os.killpg(g, signal.SIGKILL)
        except OSError:
            pass
shutil.rmtree(work, ignore_errors=True)
"""


class Stopped(KeyboardInterrupt):
    """The recording was stopped by a signal (SIGTERM): cleaned up, then reported like Ctrl-C."""


@contextlib.contextmanager
def sigterm_raises(what: str):
    """While inside, SIGTERM raises ``Stopped`` (so cleanup runs) instead of ending the process at once."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):  # noqa: ARG001 - signal's signature
        raise Stopped(f"{what} stopped by SIGTERM; workerd was stopped and its work folder removed")

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


class Session:
    """A work folder watched by a watchdog process; ``start_workerd`` runs workerd in it."""

    def __init__(self) -> None:
        self.work = Path(tempfile.mkdtemp(prefix="alarmkit-record-"))
        self.proc: subprocess.Popen | None = None
        try:
            self.watchdog = subprocess.Popen([sys.executable, "-c", _WATCHDOG, str(self.work)], stdin=subprocess.PIPE,
                                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                             start_new_session=True, text=True)
        except BaseException:
            shutil.rmtree(self.work, ignore_errors=True)
            raise

    def start_workerd(self, binary: str, config: Path, log: Path) -> subprocess.Popen:
        with open(log, "xb") as out:  # alarmkit's own temporary file, in its own work folder
            self.proc = subprocess.Popen([binary, "serve", str(config), "--experimental"], cwd=self.work, stdout=out,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        self.watchdog.stdin.write(f"{self.proc.pid}\n")  # its process group: start_new_session made it pgid = pid
        self.watchdog.stdin.flush()
        return self.proc

    def log_tail(self, n: int = 600) -> str:
        """The end of workerd's log as one line (for a one-line error message)."""
        try:
            text = (self.work / "workerd.log").read_text(errors="replace")
        except OSError:
            return "(no log)"
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        one = " | ".join(lines[-6:])
        return one[-n:] if one else "(empty log)"

    def stop_workerd(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)

    def close(self) -> None:
        """Stop workerd, remove the work folder, let the watchdog go (told nothing is left to kill)."""
        try:
            self.stop_workerd()
        finally:
            shutil.rmtree(self.work, ignore_errors=True)
            with contextlib.suppress(OSError, ValueError):
                self.watchdog.stdin.write("done\n")
                self.watchdog.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.watchdog.wait(timeout=10)


class Collector:
    """A local HTTP server the tail worker posts to; appends one JSON object per line to files in the
    work folder (``/tail`` -> ``tail_path``, ``/stream`` -> ``stream_path``)."""

    def __init__(self, tail_path: Path, stream_path: Path) -> None:
        lock = threading.Lock()
        # alarmkit's own temporary files, in its own work folder (created here, empty)
        files = {"/tail": open(tail_path, "x", encoding="utf-8"), "/stream": open(stream_path, "x", encoding="utf-8")}
        self.files = files
        self.bad_posts = 0
        collector = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                f = files.get(self.path)
                try:
                    items = json.loads(body)
                except ValueError:
                    items = None
                if f is not None and isinstance(items, list):
                    with lock:
                        for item in items:
                            f.write(json.dumps(item, separators=(",", ":")) + "\n")
                        f.flush()
                else:
                    collector.bad_posts += 1
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, name="alarmkit-collector", daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        for f in self.files.values():
            f.close()


def check_worker(src: Path, class_name: str) -> None:
    """Refuse a worker file that is missing, not UTF-8 text, or does not mention the class."""
    if not src.is_file():
        raise AlarmkitError(f"no worker file {src}; pass the path of your ES module, e.g. --worker src/worker.js")
    try:
        text = src.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise AlarmkitError(f"worker file {src} is not UTF-8 text; pass your ES module (.js) file") from None
    if class_name not in text:
        raise AlarmkitError(f"{src} does not mention class {class_name}; export it (export class {class_name} ...)")
