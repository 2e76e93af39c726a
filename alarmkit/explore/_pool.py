"""The built-in local process pool: started, never forked, once per session; dies with its parent.

A ``fork`` copies a parent's threads' held locks into the child, which can then wait on them
forever; a Jupyter kernel always has threads, and numpy, pyarrow or DuckDB add their own. So the
pool's workers are ``spawn``-ed: fresh interpreters that import alarmkit themselves (in a script,
they import the script too, as ``__mp_main__``: hence the ``if __name__ == "__main__":`` guard).
That start-up is paid once: the pool is kept for the next ``explore`` of the session (the same
width), and shut down at exit. Each worker ignores Ctrl-C (the parent decides) and exits when
its parent dies, even killed with SIGKILL: Linux's parent-death signal, and a watch on getppid.
"""

from __future__ import annotations

import atexit
import importlib
import multiprocessing
import os
import signal
import sys
import threading
from concurrent.futures import ProcessPoolExecutor

__all__ = ["local_pool", "discard", "shutdown"]

_lock = threading.Lock()
_shared: dict = {}  # "pool": the ProcessPoolExecutor, "width": its worker count
_WATCH_S = 0.5  # how often a worker checks that its parent is alive (the fallback to PDEATHSIG)


def local_pool(width: int, preload: tuple[str, ...] = ()) -> ProcessPoolExecutor:
    """The session's pool of ``width`` spawned workers: the running one if it fits and is healthy,
    else a new one (its workers start now, in the background, while the caller goes on, and
    import the ``preload`` modules: the caller names them, so this module depends on nothing)."""
    with _lock:
        pool = _shared.get("pool")
        if pool is not None and _shared["width"] == width and not _unusable(pool):
            return pool
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        on_main = threading.current_thread() is threading.main_thread()
        pool = ProcessPoolExecutor(width, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_worker_start, initargs=(os.getpid(), on_main, tuple(preload)))
        for _ in range(width):  # start every worker now: their imports overlap the caller's own work
            pool.submit(int)
        _shared.update(pool=pool, width=width)
        return pool


def discard(pool: ProcessPoolExecutor) -> None:
    """Give ``pool`` up without waiting (Ctrl-C, a broken pool): the chunks not started are
    cancelled, the few running finish (a second or so) and their workers exit."""
    with _lock:
        if _shared.get("pool") is pool:
            _shared.clear()
    # Not terminate(): a worker killed while the pool's feeder thread writes to it leaves that
    # thread blocked for good, and the interpreter's exit waits on it (seen: Ctrl-C, then a hang)
    pool.shutdown(wait=False, cancel_futures=True)


def shutdown() -> None:
    """Shut the session's pool down (at exit; tests call it to start from nothing)."""
    with _lock:
        pool = _shared.pop("pool", None)
        _shared.clear()
    if pool is not None:
        pool.shutdown(wait=True, cancel_futures=True)


atexit.register(shutdown)


def _unusable(pool: ProcessPoolExecutor) -> bool:
    return bool(getattr(pool, "_broken", False) or getattr(pool, "_shutdown_thread", False))


# -- in the worker -------------------------------------------------------------------------------


def _worker_start(parent: int, pdeathsig: bool, preload: tuple[str, ...] = ()) -> None:
    """Runs first in each worker: die with the parent, leave Ctrl-C to it, import alarmkit now."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if pdeathsig and sys.platform.startswith("linux"):
        # the parent thread that spawned us is the main thread, alive as long as the parent is
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):  # pragma: no cover - no prctl: the watch thread does it
            pass
    if os.getppid() != parent:  # the parent died before we could ask to die with it
        os._exit(1)
    threading.Thread(target=_watch, args=(parent,), name="alarmkit-parent-watch", daemon=True).start()
    for module in preload:  # e.g. alarmkit.scenarios (registers the built-in scenarios), alarmkit._sweep
        importlib.import_module(module)


def _watch(parent: int) -> None:
    import time

    while os.getppid() == parent:
        time.sleep(_WATCH_S)
    os._exit(1)  # orphaned: the parent is gone and nobody will read our results
