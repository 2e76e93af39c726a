"""Signals: telling a real Ctrl-C (SIGINT) from a ``KeyboardInterrupt`` a user's code raised itself."""

from __future__ import annotations

import signal
import threading
from typing import Any

__all__ = ["CtrlC"]


class CtrlC:
    """Tells a real Ctrl-C (SIGINT) from a KeyboardInterrupt raised by a user's code: both reach
    ``main`` as the same exception. Python's own handler still raises it; this one notes it first."""

    def __init__(self) -> None:
        self.seen = False
        self._old = None
        if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            self._old = signal.signal(signal.SIGINT, self._on_sigint)

    def _on_sigint(self, signum: int, frame: Any) -> None:
        self.seen = True
        signal.default_int_handler(signum, frame)

    def said_by_code(self, err: BaseException) -> bool:
        """A KeyboardInterrupt the runtime saw leave a Durable Object's code (its note), with no SIGINT
        behind it. Commands that stop work on Ctrl-C install handlers of their own and raise their own
        KeyboardInterrupt, so one without the note is always taken for a Ctrl-C."""
        return not self.seen and bool(getattr(err, "__notes__", None))

    def restore(self) -> None:
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)
