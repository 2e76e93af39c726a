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
        """A KeyboardInterrupt with no SIGINT behind it. Where this handler could not be installed (not the
        main thread, or another handler was there), only one the runtime saw leave user code counts."""
        if self._old is not None:
            return not self.seen
        return bool(getattr(err, "__notes__", None))

    def restore(self) -> None:
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)
