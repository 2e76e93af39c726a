"""``alarmkit ARGS`` run by ``alarmkit.cli.main`` in the test's own process: the same exit code, stdout and
stderr as the console script, without the second or two a new Python spends importing DuckDB, pandas and
plotly for every call. Tests of a command's behaviour use ``run_main``; each command keeps at least one
real subprocess test (``[sys.executable, "-m", "alarmkit", ...]``) for what only a process shows: the
console script, exit codes from the interpreter, signals, resource limits, files left at exit.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import traceback
from collections.abc import Mapping


def run_main(*args: str | os.PathLike, cwd: str | os.PathLike | None = None, env: Mapping[str, str] | None = None,
             check: bool = False, **_ignored) -> subprocess.CompletedProcess:
    """What ``subprocess.run([sys.executable, "-m", "alarmkit", *args], cwd=cwd, env=env, capture_output=True,
    text=True)`` returns, run in this process: ``cwd`` and ``env`` (the whole environment, as for
    ``subprocess``) apply for the call only. An exception ``main`` lets out is printed as Python would, with
    exit code 1 (a traceback in stderr is what tests of "never a traceback" look for); ``SystemExit``
    (argparse's usage errors) gives its code. ``timeout`` and other ``subprocess.run`` keywords are accepted
    and ignored, so a call converts by changing its function only."""
    from alarmkit import cli

    argv = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    old_cwd, old_env, old_argv = os.getcwd(), dict(os.environ), sys.argv
    try:
        if cwd is not None:
            os.chdir(cwd)
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        sys.argv = ["alarmkit", *argv]
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main(argv)
            except SystemExit as stop:
                code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
                if stop.code is not None and not isinstance(stop.code, int):
                    print(stop.code, file=sys.stderr)
            except Exception:  # what the interpreter prints for an uncaught exception
                traceback.print_exc()
                code = 1
    finally:
        sys.argv = old_argv
        if env is not None:
            os.environ.clear()
            os.environ.update(old_env)
        os.chdir(old_cwd)
    proc = subprocess.CompletedProcess(["alarmkit", *argv], code or 0, out.getvalue(), err.getvalue())
    if check:
        proc.check_returncode()
    return proc
