"""What keeps a Python Worker's code inside the simulation: one PEP 578 audit hook, and one watchdog.

The hook (``sys.addaudithook``, installed once per process when the first Python Worker loads; an
audit hook cannot be removed) refuses, with a ``WorkerUnsupported`` raised at the call, what would leave
the simulation: the network (``socket.*``: a connect, a bind, a DNS lookup, a new socket), a file written,
created, moved or removed (``open`` for writing, ``os.remove``, ``os.rename``, ``os.mkdir``...), a process
(``subprocess.Popen``, ``os.system``, ``os.exec*``, ``os.spawn*``, ``os.posix_spawn``, ``os.fork``) and a
thread (``_thread.start_new_thread``). It refuses a call made *from the worker's own modules*: walking
the stack from the call outwards, the first frame that is a worker module's refuses, the first that is
alarmkit's own (its journal, its storage) or the user's own code outside the worker (a fake binding, a
notebook) allows; the standard library and installed packages are passed over (a
``urllib.request.urlopen`` in the worker is refused; the same call in a fake binding is not). The import
system's own bytecode cache (``__pycache__``) is allowed. A worker frame refuses outside a gated step
too (``gate``: a worker's import, a kernel step of a simulation that holds a Python Worker): a ``__del__`` or
``weakref`` callback of the worker's that Python's collector runs after the simulation wrote files before;
Python cannot raise there, so ``_unraisable`` says it in one line on stderr.

``_posixsubprocess.fork_exec`` (what ``subprocess`` and ``multiprocessing``'s ``spawn`` start a process with)
has no audit event: alarmkit adds one (``_fork_exec_audited``; ``multiprocessing``'s spawn started a process
before). Python 3.13 audits the start of a thread (``_thread.start_new_thread``); on 3.11 and 3.12 alarmkit adds
that event, wrapping ``_thread.start_new_thread`` (and ``threading._start_new_thread``) in a function that
audits and then calls it: nothing else about threads changes.

This is a guard against code that would leave the simulation by accident or habit, not a sandbox against
code that tries: ``ctypes`` or a file descriptor opened before the worker loaded get past it.

The watchdog: a daemon thread that, while a gated step has run for ``Simulation.wall_limit_s`` seconds of
wall-clock time without another step starting, raises ``WallClockLimit`` (a ``BaseException``, so
``except Exception`` in the worker does not swallow it) in the thread running the step, when that thread
is in the worker's own code (``PyThreadState_SetAsyncExc``). ``gate`` turns it into a one-line error.
With ``Simulation.memory_limit_mb`` set it also looks, every 10-50 ms while a gated step runs, at the process's
resident memory (``/proc/self/statm``, one ``pread`` of ~1 us; ``RSS_AVAILABLE`` is False where there is
none, and then memory is not checked): a step whose memory grew past the limit since the watchdog first saw
it gets ``MemoryLimit`` (a ``WallClockLimit``, so every place that passes one on passes it) the same way.
"""

from __future__ import annotations

import ctypes
import os
import sys
import sysconfig
import threading
import time
import _thread
from typing import Any, Callable

from ...errors import WorkerUnsupported

__all__ = ["install", "register_file", "gate", "ensure_watchdog", "WallClockLimit", "MemoryLimit", "owner_frame",
           "STATE", "sqlite_in_memory", "RSS_AVAILABLE", "rss_pages", "PAGE_MB"]

_ALARMKIT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep
_LIBS = tuple(sorted({os.path.join(p, "") for k in ("stdlib", "platstdlib", "purelib", "platlib")
                      if (p := sysconfig.get_paths().get(k))}))
_FILES: set[str] = set()  # the code file names of every Python Worker module loaded in this process


class WallClockLimit(BaseException):
    """Raised by the watchdog in a worker's code that ran past the wall-clock limit (``gate`` reports it)."""


class MemoryLimit(WallClockLimit):
    """Raised by the watchdog in a worker's code that grew the process's memory past ``memory_limit_mb``
    in one step (``STATE.grew_mb``: by how much, when it was raised)."""


def _statm() -> int:
    try:
        return os.open("/proc/self/statm", os.O_RDONLY)
    except OSError:
        return -1


_STATM = _statm()
RSS_AVAILABLE = _STATM >= 0  # Linux: memory_limit_mb is checked; elsewhere it is not (docs/workers.md)
PAGE_MB = (os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096) / 2**20
MEMORY_POLL_S = (0.01, 0.05)  # the watchdog's look at memory: every limit/40,000 s within these (2,048 MB: 50 ms)


def rss_pages() -> int:
    """The process's resident memory in pages (0 where it cannot be read)."""
    if not RSS_AVAILABLE:
        return 0  # not Linux (Windows has no os.pread either)
    try:
        return int(os.pread(_STATM, 128, 0).split()[1])
    except (OSError, ValueError, IndexError):
        return 0


class _State:
    depth = 0  # gated calls running (a worker's import inside a step nests)
    serial = 0  # gated calls started so far: with the running kernel's clock and steps, the progress the watchdog sees
    kernel: Any = None  # the kernel of the simulation running (its now and _steps change at every step)
    thread = 0  # the thread running the gated step
    limit: float | None = 60.0  # wall_limit_s of the simulation whose step runs
    memory: int | None = None  # memory_limit_mb of the simulation whose step runs
    base = 0  # resident pages as the running gated call began (with a memory limit)
    dozing = False  # the watchdog waits longer than MEMORY_POLL_S: a gated call with a memory limit wakes it
    armed = False  # a gated call with a memory limit ran lately: the watchdog looks often, even between calls
    grew_mb = 0.0  # by how much the step that got MemoryLimit had grown the memory
    sim: Any = None  # the simulation whose gated call runs (a refusal made in it is journaled there: _guard)


STATE = _State()
_installed = False
_watchdog: threading.Thread | None = None
_lock = threading.Lock()
WAKE = threading.Event()  # set when a gated call with a memory limit starts: a dozing watchdog looks at once

NETWORK = {"socket.__new__", "socket.connect", "socket.connect_ex", "socket.bind", "socket.sendto", "socket.sendmsg",
           "socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyname_ex", "socket.gethostbyaddr",
           "socket.getnameinfo"}
FILES = {"open", "os.remove", "os.rename", "os.mkdir", "os.rmdir", "os.truncate", "os.chmod", "os.chown", "os.link",
         "os.symlink", "os.utime", "shutil.rmtree", "shutil.move", "shutil.copyfile", "sqlite3.connect"}
PROCESSES = {"subprocess.Popen", "os.system", "os.exec", "os.spawn", "os.posix_spawn", "os.fork", "os.forkpty",
             "os.startfile", "os.kill", "os.killpg", "_posixsubprocess.fork_exec"}
THREADS = {"_thread.start_new_thread"}
# the process every object and alarmkit share: its folder (a relative --report would land elsewhere), its
# environment, a file's extended attributes, its audit hooks (they cannot be removed)
SHARED = {"os.chdir", "os.fchdir", "os.putenv", "os.unsetenv", "os.setxattr", "os.removexattr",
          "sys.addaudithook",  # a hook of the worker's would see (and could refuse) every later event of alarmkit's
          "resource.setrlimit", "resource.prlimit"}  # RLIMIT_CPU (1, 1) had the kernel kill the command (-9)
EVENTS = frozenset(NETWORK | FILES | PROCESSES | THREADS | SHARED)
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def register_file(path: str) -> None:
    """``path`` is a module of a Python Worker: calls made from its code are contained."""
    _FILES.add(path)


_SKIP: set = set()  # code objects passed over as a library's (the thread-start wrapper below)


def _kind(path: str) -> str:
    """Who a frame's code belongs to: ``worker``, ``alarmkit``, ``lib`` (passed over) or ``user``."""
    if path in _FILES:
        return "worker"
    if path.startswith(_ALARMKIT):
        return "alarmkit"
    if path.startswith(_LIBS) or path.startswith("<"):
        return "lib"
    return "user"


def owner_frame(frame: Any) -> tuple[str, Any]:
    """The first frame, from ``frame`` outwards, that is not the standard library's or a package's, and
    whose it is (``_kind``); ``("lib", None)`` when there is none."""
    while frame is not None:
        kind = "lib" if frame.f_code in _SKIP else _kind(frame.f_code.co_filename)
        if kind != "lib":
            return kind, frame
        frame = frame.f_back
    return "lib", None


def _writes(event: str, args: tuple) -> bool:
    if event == "open":
        path, mode, flags = (tuple(args) + (None, None, 0))[:3]
        if mode is not None:
            return isinstance(mode, str) and any(c in mode for c in "wax+")
        return bool((flags or 0) & _WRITE_FLAGS)
    if event == "sqlite3.connect":
        return not (args and sqlite_in_memory(args[0], _SQLITE_URI))
    if event == "resource.prlimit":  # (pid, resource, limits): limits None reads them
        return len(args) > 2 and args[2] is not None
    return True


def _sqlite_uri_on() -> bool:
    import sqlite3
    con = sqlite3.connect(":memory:")
    try:
        return any(row[0] == "USE_URI" or row[0] == "USE_URI=1" for row in con.execute("PRAGMA compile_options"))
    finally:
        con.close()


_SQLITE_URI = _sqlite_uri_on()  # this SQLite reads a 'file:' name as a URI in every connection


def sqlite_in_memory(name: Any, uri: bool) -> bool:
    """Whether SQLite opens ``name`` (a ``connect`` or an ``ATTACH``; ``uri``: 'file:' names are URIs)
    in memory, no file made: ``:memory:``, ``""`` or a 'file:' URI whose every ``mode`` is ``memory`` (SQLite
    takes the last one) or whose path is ``:memory:``. Anything else, a name not known (an ``ATTACH ?``,
    bytes) included, is taken for a file."""
    from urllib.parse import unquote
    if type(name) is not str:
        return False
    if name in (":memory:", ""):
        return True
    if not (uri and name.startswith("file:")):
        return False  # 'data.db?mode=memory' is a file of that name
    path, _, query = name[5:].split("#", 1)[0].partition("?")
    modes = [unquote(v) for k, _, v in (p.partition("=") for p in query.split("&")) if unquote(k) == "mode"]
    return all(m == "memory" for m in modes) and (bool(modes) or unquote(path) == ":memory:")


def _shown(args: tuple) -> str:
    """The call's first arguments as reprs; a long one keeps its start and its end (a path's file name)."""
    parts = []
    for a in args[:3]:
        text = repr(a)
        parts.append(text if len(text) <= 160 else text[:40] + "..." + text[-117:])
    return ", ".join(parts)


def refusal(event: str, args: tuple, where: str) -> WorkerUnsupported:
    """The error of a refused call (docs/errors.md lists the four texts)."""
    call = f"{event}({_shown(args)})"
    if event in NETWORK:
        why = ("a network connection leaves the simulation, which alarmkit does not do; bind the service instead "
               "(load_worker(..., bindings={'API': my_fake})) and call env.API from the worker")
    elif event in THREADS:
        why = ("a thread would run outside the simulation's virtual clock; start the work as a task "
               "(asyncio.create_task(...) or ctx.waitUntil(...)), which the simulation runs")
    elif event in SHARED:
        why = ("it changes the process every object and alarmkit share (its folder, its environment, its resource "
               "limits) or a file, "
               "outside the simulation; keep the value in ctx.storage, or read configuration from env")
    elif event in PROCESSES:
        why = ("a process leaves the simulation, which alarmkit does not do; bind a fake of what it does instead "
               "(load_worker(..., bindings={'TOOL': my_fake}))")
    else:
        why = ("a file written outside the simulation, which alarmkit does not do; keep the data in "
               "ctx.storage (kv, sql), or bind a fake of the store (load_worker(..., bindings={'FILES': my_fake}))")
    return WorkerUnsupported(f"{call} in the worker's code at {where}: {why}")


def _hook(event: str, args: tuple) -> None:
    if event not in EVENTS or not _writes(event, args):  # a worker's code outside a gated step too: its
        return  # __del__ or weakref callback run by the collector after the simulation wrote files
    kind, frame = owner_frame(sys._getframe(1))
    if kind != "worker":
        return
    if event in FILES and args and "__pycache__" in str(args[0]):
        inner = sys._getframe(1)  # the import system writing its bytecode cache
        while inner is not None and inner is not frame:
            if "importlib" in inner.f_code.co_filename:
                return
            inner = inner.f_back
    raise refusal(event, tuple(args), f"{frame.f_code.co_filename}:{frame.f_lineno}")


def _audited(start: Callable) -> Callable:
    def start_new_thread(function: Any, args: Any, kwargs: Any = None) -> Any:
        sys.audit("_thread.start_new_thread", function, args, kwargs)
        return start(function, args) if kwargs is None else start(function, args, kwargs)

    start_new_thread.__wrapped__ = start  # type: ignore[attr-defined]
    _SKIP.add(start_new_thread.__code__)
    return start_new_thread


def _fork_exec_audited() -> None:
    """``_posixsubprocess.fork_exec`` (how ``subprocess`` and ``multiprocessing``'s spawn start a process)
    raises no audit event of its own: wrapped to raise one, then call it; nothing else changes."""
    try:
        import _posixsubprocess
    except ImportError:  # not POSIX
        return
    real = _posixsubprocess.fork_exec
    if hasattr(real, "__wrapped__"):
        return

    def fork_exec(*args: Any, **kwargs: Any) -> Any:
        sys.audit("_posixsubprocess.fork_exec", *args[:3])
        return real(*args, **kwargs)

    fork_exec.__wrapped__ = real  # type: ignore[attr-defined]
    _SKIP.add(fork_exec.__code__)
    _posixsubprocess.fork_exec = fork_exec


_PREVIOUS: list = [sys.unraisablehook]


def _unraisable(unraisable: Any) -> None:
    """A refusal raised where Python cannot pass it on (a worker's ``__del__`` or ``weakref`` callback run by
    the collector, after the simulation): one line on stderr, not Python's traceback; anything else goes to
    the hook that was there before."""
    err = unraisable.exc_value
    if not isinstance(err, WorkerUnsupported):
        return _PREVIOUS[0](unraisable)
    owner = unraisable.object
    name = getattr(owner, "__qualname__", None) or type(owner).__name__
    sys.stderr.write(f"alarmkit: refused in {name}, which Python's collector ran outside the simulation: {err}\n")
    return None


def install() -> None:
    """Install the audit hook (once per process), the ``fork_exec`` event and, before Python 3.13, the
    thread-start event."""
    global _installed
    with _lock:
        if _installed:
            return
        _fork_exec_audited()
        _PREVIOUS[0] = sys.unraisablehook
        sys.unraisablehook = _unraisable
        if sys.version_info < (3, 13) and not hasattr(_thread.start_new_thread, "__wrapped__"):
            audited = _audited(_thread.start_new_thread)
            _thread.start_new_thread = _thread.start_new = audited  # type: ignore[attr-defined]
            threading._start_new_thread = audited  # type: ignore[attr-defined]
        sys.addaudithook(_hook)
        _installed = True


def _watch() -> None:
    """The watchdog thread's loop: see the module docstring."""
    seen: Any = None
    since = time.monotonic()
    base = 0  # resident pages at the watchdog's first look at the step that runs
    idle = 0  # looks in a row with no gated call running, while armed
    while True:
        st = STATE
        st.dozing = True  # then cleared, then the limits read: a gated call setting them after wakes the wait
        WAKE.clear()
        limit, memory = st.limit, st.memory if RSS_AVAILABLE else None
        if memory is None and not (st.armed and RSS_AVAILABLE):
            woken = WAKE.wait(0.5 if not st.depth or limit is None else max(0.01, min(0.5, limit / 8)))
            st.dozing = False
            if woken or not st.depth:  # woken: a call with a memory limit began, its limits to be read
                seen = None if not st.depth else seen
                continue
        else:  # armed: short looks even between calls, so a call need not wake it (a wake a call cost ~10 us)
            st.dozing = False
            time.sleep(min(MEMORY_POLL_S[1], max(MEMORY_POLL_S[0], (memory or 2_048) / 40_000)))
            idle = 0 if st.depth else idle + 1
            if idle > 200:  # 200 looks (2-10 s) without a gated call: disarmed, dozing until the next one wakes it
                st.armed, idle = False, 0
        limit, memory = st.limit, st.memory if RSS_AVAILABLE else None  # the run's now (a run may have ended
        # and another begun while it slept), read before st.base, which a gated call sets before them
        if not st.depth or (limit is None and memory is None):
            seen = None
            continue
        now = time.monotonic()
        k = st.kernel
        progress = (st.serial, None if k is None else k.now, None if k is None else k._steps)
        over: Any = None
        if progress != seen:  # a step not seen before: its base is this reading, or, for the first step seen of
            # a gated call, the reading the call took as it began (a run's first step is counted from its start)
            fresh = seen is None or seen[0] != progress[0]
            seen, since = progress, now
            base = (st.base if fresh else rss_pages()) if memory is not None else 0
        elif limit is not None and now - since >= limit:
            over = WallClockLimit
        if memory is not None and (grew := (rss_pages() - base) * PAGE_MB) > memory:
            over = MemoryLimit
        if over is None:
            continue
        # no frame kept between looks: the worker's frame (and what its locals hold) would outlive the stop
        if owner_frame(sys._current_frames().get(st.thread))[0] != "worker":
            continue  # alarmkit's own work, or code outside the worker: it is left alone
        since = now  # raised again after another limit if the code catches it and goes on
        if over is MemoryLimit:
            st.grew_mb, base = grew, rss_pages()
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(st.thread), ctypes.py_object(over))


def ensure_watchdog() -> None:
    global _watchdog
    if _watchdog is None or not _watchdog.is_alive():
        with _lock:
            if _watchdog is None or not _watchdog.is_alive():
                _watchdog = threading.Thread(target=_watch, name="alarmkit-python-worker-watchdog", daemon=True)
                _watchdog.start()


def gate(fn: Callable, limit: float | None, memory: int | None, *args: Any) -> Any:
    """``fn(*args)`` as simulated code: the hook refuses in it, and the watchdog watches it."""
    st = STATE
    st.base = rss_pages() if memory is not None else 0  # before the limits: the watchdog reads them first
    st.limit, st.memory = limit, memory
    if _watchdog is None:
        ensure_watchdog()
    st.depth += 1
    if memory is not None:
        st.armed = True
        if st.dozing:
            WAKE.set()  # after the limits and the count are set: the watchdog clears, then reads them
    st.serial += 1
    st.thread = threading.get_ident()
    try:
        return fn(*args)
    finally:
        st.depth -= 1
