"""The process's signals and interpreter, which a Python Worker's code may read but not change: its own
``signal`` and ``sys`` modules.

Python raises no audit event for ``signal.signal`` or ``signal.alarm``, so ``_contain``'s hook does not see
them; yet a handler, a mask or a timer is the process's, shared by every object and alarmkit, and acts
outside the simulation and its clock: ``signal.alarm(1)`` killed ``alarmkit worker`` a second later (exit
-14, nothing said, the journal cut), ``signal.signal(SIGINT, SIG_IGN)`` left Ctrl-C dead for the rest of the
process. The worker's ``signal`` is a copy of the real one whose functions that set a handler, send, block,
schedule or wait for a signal refuse by name (``WorkerUnsupported``, one line, docs/errors.md); reading
(``getsignal``, the constants, ``Signals``) works. (``os.kill`` is refused by the hook.)

The worker's ``sys`` is a copy of the real one: its ``stdout`` and ``stderr`` are the worker's console, as
its ``print`` is (each line a ``console`` event, ``log`` or ``error``; ``close()`` closes nothing: the
command's own output crashed on ``sys.stdout.close()``); its ``modules`` names the worker's own modules
first (``_importer.Isolated``: ``sys.modules['sys']`` is this copy), then reads the process's, and keeps
what the worker writes to itself (``sys.modules['time'] = None`` broke alarmkit's own imports);
what sets the interpreter for every object and alarmkit (``setrecursionlimit``, ``settrace``,
``setprofile``, ``addaudithook``, ``setswitchinterval``, ``set_int_max_str_digits``) is refused by name.
Assigning a name of the worker's ``sys`` (``sys.excepthook = ...``) changes the worker's copy only.
"""

from __future__ import annotations

import signal as _signal
import sys
import types
from typing import Any, Callable

from ...errors import WorkerUnsupported
from ._contain import owner_frame
from ._guard import log_line
from ._reach import Modules

__all__ = ["make_faulthandler", "make_signal", "make_sys", "CHANGES", "SYS_CHANGES"]

CHANGES = ("signal", "alarm", "setitimer", "pthread_kill", "pthread_sigmask", "siginterrupt", "set_wakeup_fd",
           "raise_signal", "sigwait", "sigwaitinfo", "sigtimedwait", "pause", "pidfd_send_signal")
WHY = ("a signal's handler, mask or timer is the process's, which every object and alarmkit share, and acts "
       "outside the simulation and its virtual clock; schedule the work with ctx.storage.setAlarm(...) or "
       "await asyncio.sleep(...), which run on the virtual clock")


SYS_CHANGES = ("setrecursionlimit", "settrace", "setprofile", "addaudithook", "setswitchinterval",
               "set_int_max_str_digits", "setdlopenflags", "activate_stack_trampoline")
SYS_WHY = ("it sets the interpreter that every object and alarmkit share (its recursion limit, its trace, profile "
           "and audit hooks, its thread switching), outside the simulation; a Worker does not own its isolate's "
           "settings: leave them as they are")


def _refuser(name: str, module: str = "signal", why: str = WHY) -> Callable[..., Any]:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        kind, frame = owner_frame(sys._getframe(1))
        at = "a line of the worker's code" if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno or '?'}"
        shown = ", ".join(repr(a)[:60] for a in args[:3])
        code_of = "the worker's code" if kind == "worker" else "code the simulation runs"
        raise WorkerUnsupported(f"{module}.{name}({shown}) in {code_of} at {at}: {why}")

    refuse.__name__ = refuse.__qualname__ = name
    return refuse


def make_signal() -> types.ModuleType:
    mod = types.ModuleType("signal", "signal, read-only: the process's signals are not the worker's to change")
    mod.__dict__.update({k: v for k, v in vars(_signal).items() if not k.startswith("__")})
    mod.__dict__.update({name: _refuser(name) for name in CHANGES if hasattr(_signal, name)})
    return mod


FAULT_CHANGES = ("dump_traceback_later", "cancel_dump_traceback_later", "register", "unregister", "enable",
                 "disable")
FAULT_WHY = ("faulthandler's timers and signal handlers are the process's, which every object and alarmkit share, "
             "and act outside the simulation (dump_traceback_later(1, exit=True) ended the command a second later "
             "with a dump of its threads); a Worker does not own its isolate's crash handling: leave it as it is")


def make_faulthandler() -> types.ModuleType:
    """The worker's ``faulthandler``: reads (``is_enabled``, ``dump_traceback``) work; what arms, cancels or
    registers a handler of the process is refused by name (Python raises no audit event for it)."""
    import faulthandler as _fh

    mod = types.ModuleType("faulthandler", _fh.__doc__)
    mod.__dict__.update({k: v for k, v in vars(_fh).items() if not k.startswith("__")})
    mod.__dict__.update({n: _refuser(n, "faulthandler", FAULT_WHY) for n in FAULT_CHANGES if hasattr(_fh, n)})
    return mod


class _Console:
    """The worker's ``sys.stdout`` / ``sys.stderr``: each line written is a console line of the worker."""

    encoding, errors, newlines = "utf-8", "strict", None

    def __init__(self, worker: Any, level: str) -> None:
        self._worker, self._level, self._part = worker, level, ""
        self.name = "<stdout>" if level == "log" else "<stderr>"

    def write(self, text: Any) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        *lines, self._part = (self._part + text).split("\n")
        for line in lines:
            log_line(self._worker, self._level, line)
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if self._part:
            part, self._part = self._part, ""
            log_line(self._worker, self._level, part)

    def close(self) -> None:
        self.flush()

    closed = False

    def isatty(self) -> bool:
        return False

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def fileno(self) -> int:
        import io

        raise io.UnsupportedOperation("the worker's console has no file descriptor")

    @property
    def buffer(self) -> "_Bytes":
        """``sys.stdout.buffer``: bytes written to it are the console's lines too (UTF-8), not the
        process's real stdout."""
        return _Bytes(self)


class _Bytes:
    """The worker's ``sys.stdout.buffer`` / ``sys.stderr.buffer``: bytes, decoded as UTF-8 (a character
    cut between two writes is kept until its end comes; a byte that is not UTF-8 is U+FFFD)."""

    def __init__(self, console: _Console) -> None:
        import codecs

        self.raw = self
        self._console = console
        self._decode = getattr(console, "_decoder", None) or codecs.getincrementaldecoder("utf-8")("replace")
        console._decoder = self._decode  # type: ignore[attr-defined] - one decoder a console: a cut character kept

    def write(self, data: Any) -> int:
        if isinstance(data, str):
            raise TypeError(f"a bytes-like object is required, not '{type(data).__name__}'")
        view = memoryview(data)
        self._console.write(self._decode.decode(view.tobytes()))
        return view.nbytes

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self._console.flush()

    def close(self) -> None:
        self.flush()

    closed = False

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self._console.fileno()


def make_sys(worker: Any) -> types.ModuleType:
    mod = types.ModuleType("sys", sys.__doc__)
    mod.__dict__.update({k: v for k, v in vars(sys).items() if not k.startswith("__")})
    out, err = _Console(worker, "log"), _Console(worker, "error")
    mod.__dict__.update(stdout=out, stderr=err, __stdout__=out, __stderr__=err, modules=Modules({}, sys.modules))
    mod.__dict__.update({n: _refuser(n, "sys", SYS_WHY) for n in SYS_CHANGES if hasattr(sys, n)})
    return mod
