"""The hostile suite's harness: run the CLI as a hostile user would, and check what it leaves behind.

``run_cli`` runs ``python -m alarmkit ...`` in a child process under ``resource`` limits (address
space, CPU seconds, file size) in its own session, and afterwards kills and reports any process of
that session still alive (a child that outlived its parent). ``run_main`` runs ``alarmkit.cli.main``
in this process (no interpreter start: ten times the inputs for the same time; no memory limit).
``snapshot`` checksums every file under a folder; ``check_outcome`` asserts the contract every
command keeps: exit 0, or exit 2 with exactly one line ``alarmkit: error: ...``; no traceback; no
control characters in anything printed; and no file that existed before changed or removed unless
the caller says alarmkit may write it.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import resource
import signal
import subprocess
import sys
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "TQDM_DISABLE": "1", "PYTHONIOENCODING": "utf-8",
       "PYTHONHASHSEED": "0"}
MEMORY_BYTES = 3 * 1024**3  # address space for one child: DuckDB, pandas and plotly map ~1.5 GB at import
CPU_SECONDS = 120
FILE_BYTES = 512 * 1024**2


COUNTS: dict[str, int] = {}  # inputs run per command (or constructor), for the suite's summary line


def count(what: str) -> None:
    COUNTS[what] = COUNTS.get(what, 0) + 1


@dataclass
class Outcome:
    argv: list[str]
    code: int
    out: str
    err: str
    leftovers: list[str]  # "pid command" of the child's session still alive 5 s after it exited (killed since)
    seconds: float


def _limits() -> None:  # pragma: no cover - runs in the child, before exec
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS))
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_BYTES, FILE_BYTES))


def _session(sid: int) -> list[int]:
    import psutil

    alive = []
    for p in psutil.process_iter(["pid"]):
        try:
            if os.getsid(p.pid) == sid and p.pid != os.getpid():
                alive.append(p.pid)
        except (ProcessLookupError, PermissionError, OSError):
            continue
    return alive


def _cmdline(pid: int) -> str:
    import psutil

    try:
        return " ".join(psutil.Process(pid).cmdline())[:200]
    except psutil.Error:
        return "?"


def run_cli(argv: list[str], cwd: Path, timeout: float = 90) -> Outcome:
    """``python -m alarmkit *argv`` in a child under resource limits, in a session of its own."""
    count(f"{argv[0] if argv else '(none)'} (child)")
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "alarmkit", *argv], cwd=cwd, env=ENV, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=_limits,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise AssertionError(f"alarmkit {argv} ran past {timeout} s (a hang or runaway work)") from None
    leftovers = _session(proc.pid)
    deadline = time.monotonic() + 5  # a pool worker or resource tracker exiting on its own takes a moment
    while leftovers and time.monotonic() < deadline:
        time.sleep(0.1)
        leftovers = _session(proc.pid)
    leftovers = [f"{pid} {_cmdline(pid)}" for pid in leftovers]
    for pid in (int(p.split()[0]) for p in leftovers):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return Outcome(argv, proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), leftovers,
                   time.monotonic() - started)


def run_main(argv: list[str], cwd: Path) -> Outcome:
    """``alarmkit.cli.main(argv)`` in this process, in ``cwd``; SystemExit (argparse) is its exit code."""
    from alarmkit import cli

    count(argv[0] if argv else "(none)")
    out, err = io.StringIO(), io.StringIO()
    started = time.monotonic()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main(argv)
            except SystemExit as stop:
                code = stop.code if isinstance(stop.code, int) else 2
    finally:
        os.chdir(old)
    return Outcome(argv, code, out.getvalue(), err.getvalue(), [], time.monotonic() - started)


def snapshot(folder: Path) -> dict[str, str]:
    """Relative path -> sha256 of every file under ``folder`` (links not followed)."""
    found = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not path.is_symlink():
            found[str(path.relative_to(folder))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def control_characters(text: str) -> list[str]:
    """Characters no terminal output of alarmkit may hold: escapes, bidi overrides, NUL... (newline and
    tab are layout)."""
    return sorted({repr(c) for c in text if c not in "\n\t" and (unicodedata.category(c)[0] == "C"
                                                                  or c in "\u2028\u2029")})


def check_outcome(o: Outcome, before: dict[str, str], after: dict[str, str], may_write: tuple[str, ...] = ()) -> None:
    """The contract every command keeps on any input (see the module docstring)."""
    shown = f"alarmkit {o.argv!r} -> exit {o.code}\nstdout: {o.out[-1500:]}\nstderr: {o.err[-3000:]}"
    # 1: a run that broke an invariant, as pytest fails (run, worker, explore); never for a usage problem
    assert o.code in (0, 2) or (o.code == 1 and o.argv[:1] and o.argv[0] in ("run", "worker", "explore")), shown
    assert "Traceback" not in o.err and "Traceback" not in o.out, shown
    if o.code == 2:  # an old flag spelling adds a note line ("alarmkit: note: ..."), never a second error
        lines = [line for line in o.err.splitlines() if line.strip() and not line.startswith(("usage:", " ", "alarmkit: note: "))]
        assert len(lines) == 1 and lines[0].startswith("alarmkit: error: "), shown
    bad = control_characters(o.out + o.err.replace("\r", ""))  # \r: progress bars (in-process runs only)
    assert not bad, f"control characters {bad} printed by {shown}"
    assert not o.leftovers, f"processes left running after the command ended: {o.leftovers}; {shown}"
    changed = [p for p, digest in before.items() if after.get(p) != digest and not p.startswith(may_write)]
    assert not changed, f"files alarmkit did not write were changed or removed: {changed}; {shown}"
