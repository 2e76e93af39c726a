"""The process's signals, which a Python Worker's code may read but not change: its own ``signal`` module.

Python raises no audit event for ``signal.signal`` or ``signal.alarm``, so ``_contain``'s hook does not see
them; yet a handler, a mask or a timer is the process's, shared by every object and alarmkit, and acts
outside the simulation and its clock: ``signal.alarm(1)`` killed ``alarmkit worker`` a second later (exit
-14, nothing said, the journal cut), ``signal.signal(SIGINT, SIG_IGN)`` left Ctrl-C dead for the rest of the
process. The worker's ``signal`` is a copy of the real one whose functions that set a handler, send, block,
schedule or wait for a signal refuse by name (``WorkerUnsupported``, one line, docs/errors.md); reading
(``getsignal``, the constants, ``Signals``) works. (``os.kill`` is refused by the hook.)
"""

from __future__ import annotations

import signal as _signal
import sys
import types
from typing import Any, Callable

from ...errors import WorkerUnsupported
from ._contain import owner_frame

__all__ = ["make_signal", "CHANGES"]

CHANGES = ("signal", "alarm", "setitimer", "pthread_kill", "pthread_sigmask", "siginterrupt", "set_wakeup_fd",
           "raise_signal", "sigwait", "sigwaitinfo", "sigtimedwait", "pause", "pidfd_send_signal")
WHY = ("a signal's handler, mask or timer is the process's, which every object and alarmkit share, and acts "
       "outside the simulation and its virtual clock; schedule the work with ctx.storage.setAlarm(...) or "
       "await asyncio.sleep(...), which run on the virtual clock")


def _refuser(name: str) -> Callable[..., Any]:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        kind, frame = owner_frame(sys._getframe(1))
        at = "a line of the worker's code" if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno or '?'}"
        shown = ", ".join(repr(a)[:60] for a in args[:3])
        code_of = "the worker's code" if kind == "worker" else "code the simulation runs"
        raise WorkerUnsupported(f"signal.{name}({shown}) in {code_of} at {at}: {WHY}")

    refuse.__name__ = refuse.__qualname__ = name
    return refuse


def make_signal() -> types.ModuleType:
    mod = types.ModuleType("signal", "signal, read-only: the process's signals are not the worker's to change")
    mod.__dict__.update({k: v for k, v in vars(_signal).items() if not k.startswith("__")})
    mod.__dict__.update({name: _refuser(name) for name in CHANGES if hasattr(_signal, name)})
    return mod
