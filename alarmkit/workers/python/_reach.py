"""The other doors from a Python Worker's code to the process, closed in the worker's own modules (as
``_unaudited`` closes ``os``, ``atexit``, ``sqlite3`` and ``duckdb``): what Python raises no audit event
for, reached under another name than the ones those shims cover.

- ``posix`` (what ``os`` is made of) is the worker's own too: its ``environ`` is the session's, and
  ``mkfifo``, ``mknod``, ``_exit`` and ``umask`` refuse by name as the worker's ``os`` does (``system``,
  ``open`` for writing... are the audit hook's: refused wherever they are reached, as is
  ``_posixsubprocess.fork_exec``, to which ``_contain`` adds an event).
- ``os.path`` (and ``posixpath``) is the worker's own: its ``os`` is the worker's ``os`` (``os.path.os``
  was the process's), so ``expanduser('~')`` gives the session's ``HOME`` (``/session``) and
  ``expandvars`` reads the session's environment; ``~name`` is left as it is, as Python leaves a user it
  does not know (the machine's users are not the worker's).
- ``importlib``: ``import_module`` and ``__import__`` import as the worker's ``import`` does (its own
  ``os``, ``time``...); ``reload`` of one of the worker's own modules runs it again, of a module the
  worker was given for its own returns it as it is, and of any other (the process's one copy, shared by
  every object and alarmkit) is refused by name.
- ``import alarmkit`` (any of its modules) from the worker's code is refused by name (``refuse_alarmkit``),
  and its ``sys.modules`` does not show them (``Modules``): a Worker on workerd has no alarmkit.
- ``weakref.finalize`` is refused by name: its callback runs when the object is collected or at the
  process's exit, after the simulation, outside its clock (as ``atexit.register`` would).
- ``gc`` and ``threading`` (and ``_thread``): what changes the process's collector (``disable``,
  ``set_threshold``, ``freeze``, ``set_debug``, a ``gc.callbacks`` entry) or reaches every object of the
  process (``get_objects``, ``get_referrers``), and what sets every thread's trace, profile, stack size or
  exit hooks (``threading.settrace``, ``setprofile``, ``stack_size(n)``, ``_thread.interrupt_main``) is
  refused by name; reading them works, and a name assigned (``threading.excepthook = f``) is the worker's
  copy's only.

Every refusal is one line, ``CALL in the worker's code at FILE:LINE: why; the way out`` (docs/errors.md).
This is a guard against code that leaves the simulation by habit, as the audit hook is: another module's
own reference to the real one (``shutil.os``) still reaches it.
"""

from __future__ import annotations

import gc as _gc
import importlib as _importlib
import os as _os
import posixpath as _posixpath
import sys
import threading as _threading
import types
import _thread
from collections import ChainMap
from typing import Any, Callable

from ...errors import WorkerUnsupported
from ._unaudited import SESSION_ENV, PASSED, _Environ, _refuse, _where

__all__ = ["make_reach", "make_importlib", "refuse_alarmkit", "Modules", "OWN"]

OWN = "alarmkit"  # the package whose modules the worker's code never imports
PASSED.add(__file__)  # a refusal made here names the worker's line that called it, not this module's

PROCESS_WHY = ("it changes the process every object and alarmkit share (its collector, its threads' trace, "
               "profile, stack and exit hooks), outside the simulation; a Worker does not own its isolate's "
               "settings: leave them as they are")
OBJECTS_WHY = ("it reaches every object of the process (alarmkit's and every other object's), outside the "
               "simulation; keep a reference to what the worker needs, or its id in ctx.storage")
LATER_WHY = ("its callback runs when the object is collected or at the process's exit, after the simulation, "
             "outside its clock and its journal; do the work in the handler (or a task it starts)")
RELOAD_WHY = ("that module is the process's one copy, shared by every object and alarmkit: reloading it "
              "changes theirs, outside the simulation; reload the worker's own modules only")
OWN_WHY = ("the simulation's own internals are not the worker's to reach (a Worker on workerd has no alarmkit); "
           "drive the simulation from the code outside the worker (load_worker, sim.call, a binding's fake)")


def _refuser(call: str, why: str | None = None) -> Callable[..., Any]:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise _refuse(call, args, why)

    refuse.__name__ = refuse.__qualname__ = call.rpartition(".")[2]
    return refuse


def _copy(real: types.ModuleType, name: str | None = None) -> types.ModuleType:
    mod = types.ModuleType(name or real.__name__, real.__doc__)
    mod.__dict__.update({k: v for k, v in vars(real).items() if not k.startswith("__")})
    return mod


def refuse_alarmkit(name: str) -> WorkerUnsupported:
    """``import NAME`` (``alarmkit`` or one of its modules) in the worker's code, refused by name."""
    return WorkerUnsupported(f"import {name} in the worker's code at {_where()}: {OWN_WHY}")


def _is_own(name: Any) -> bool:
    return isinstance(name, str) and (name == OWN or name.startswith(OWN + "."))


class Modules(ChainMap):
    """The worker's ``sys.modules``: its own modules and shims first, then the process's, without
    alarmkit's (``'alarmkit' in sys.modules`` is False; ``sys.modules['alarmkit']`` a ``KeyError``)."""

    def __getitem__(self, key: Any) -> Any:
        if _is_own(key) and not any(key in m for m in self.maps[:-1]):
            raise KeyError(key)
        return super().__getitem__(key)

    def __contains__(self, key: Any) -> bool:
        try:
            self[key]
        except KeyError:
            return False
        return True

    def get(self, key: Any, default: Any = None) -> Any:
        return self[key] if key in self else default

    def __iter__(self) -> Any:
        return (k for k in super().__iter__() if k in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)


# -- posix, _posixsubprocess, os.path ---------------------------------------------------------------------
def _posix(os_mod: types.ModuleType) -> types.ModuleType:
    import posix as _posix_real

    mod = _copy(_posix_real)
    environ = _Environ({k.encode(): v.encode() for k, v in SESSION_ENV.items()})
    mod.__dict__.update(environ=environ, mkfifo=_refuser("posix.mkfifo"), mknod=_refuser("posix.mknod"))
    for name in ("_exit", "umask"):  # the worker's os' texts, named as posix's
        mod.__dict__[name] = _renamed(getattr(os_mod, name), f"posix.{name}")
    return mod


def _renamed(fn: Callable, call: str) -> Callable:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        try:
            fn(*args, **kwargs)
        except WorkerUnsupported as err:
            text = err.args[0]
            raise WorkerUnsupported(call + text[text.index("("):]) from None
        raise AssertionError(call)  # the os shim's refuses always

    return refuse


def _ospath(os_mod: types.ModuleType) -> types.ModuleType:
    """``posixpath`` whose functions read the worker's ``os`` (its ``environ``: ``HOME=/session``)."""
    mod = types.ModuleType("posixpath", _posixpath.__doc__)
    own = mod.__dict__
    own.update({k: v for k, v in vars(_posixpath).items() if not k.startswith("__")})
    own["__builtins__"] = __builtins__  # before the functions are made: they take their builtins from it
    for key, value in list(own.items()):
        if isinstance(value, types.FunctionType) and value.__module__ == "posixpath":
            own[key] = types.FunctionType(value.__code__, own, value.__name__, value.__defaults__, value.__closure__)
            own[key].__doc__, own[key].__kwdefaults__ = value.__doc__, value.__kwdefaults__
    expand = own["expanduser"]

    def expanduser(path: Any) -> Any:
        text = _os.fspath(path)
        tilde, sep = ("~", "/") if isinstance(text, str) else (b"~", b"/")
        if text.startswith(tilde) and text[1:].partition(sep)[0]:
            return text  # ~name: a user the worker does not know
        return expand(path)

    own.update(os=os_mod, expanduser=expanduser)
    return mod


# -- importlib ------------------------------------------------------------------------------------------
def make_importlib(import_: Callable, shims: dict, modules: dict, run_again: Callable) -> types.ModuleType:
    """The worker's ``importlib`` (see the module docstring); ``import_``: the worker's ``__import__``,
    ``run_again(mod)``: run one of its own modules again in its namespace."""
    mod = _copy(_importlib, "importlib")
    real = _importlib

    def import_module(name: str, package: str | None = None) -> Any:
        level = 0
        if name.startswith("."):
            if not package:
                raise TypeError(f"the 'package' argument is required to perform a relative import for {name!r}")
            level = len(name) - len(name.lstrip("."))
            name = name[level:]
            return import_(name, {"__package__": package}, None, ("__name__",), level)
        return import_(name, None, None, ("__name__",), 0)

    def reload(module: Any) -> Any:
        if any(module is m for m in shims.values()):
            return module  # made for this worker: nothing of the process's to load again
        if any(module is m for m in modules.values()):
            return run_again(module)
        raise _refuse("importlib.reload", (module,), RELOAD_WHY)

    def __getattr__(name: str) -> Any:
        return getattr(real, name)  # importlib.util, importlib.machinery... as the process has them

    mod.__dict__.update(import_module=import_module, reload=reload, __import__=import_, __getattr__=__getattr__,
                        __path__=real.__path__)
    return mod


# -- weakref, gc, threading, _thread ----------------------------------------------------------------------
def _weakref() -> types.ModuleType:
    import weakref as real

    mod = _copy(real)
    mod.finalize = _refuser("weakref.finalize", LATER_WHY)
    return mod


class _Callbacks(list):
    """The worker's ``gc.callbacks``: what the process's holds, read-only (a callback of the worker's would
    run at every collection of the process, outside the simulation)."""

    def _no(self, *args: Any, **kwargs: Any) -> Any:
        raise _refuse("gc.callbacks.append", args[-1:], PROCESS_WHY)

    append = extend = insert = __setitem__ = __iadd__ = _no


def _gc_module() -> types.ModuleType:
    mod = _copy(_gc)
    for name in ("disable", "set_threshold", "set_debug", "freeze", "unfreeze"):
        mod.__dict__[name] = _refuser(f"gc.{name}", PROCESS_WHY)
    for name in ("get_objects", "get_referrers"):
        mod.__dict__[name] = _refuser(f"gc.{name}", OBJECTS_WHY)

    def enable() -> None:
        if not _gc.isenabled():  # as it is, a no-op; else a change to the process's collector
            raise _refuse("gc.enable", (), PROCESS_WHY)

    mod.enable, mod.callbacks = enable, _Callbacks(_gc.callbacks)
    return mod


def _sized(call: str, real: Callable) -> Callable:
    def stack_size(*args: Any) -> Any:
        if args and args[0] != 0:
            raise _refuse(call, args, PROCESS_WHY)
        return real()  # the size as it is (0: the default): a read

    return stack_size


def _threading_module() -> types.ModuleType:
    mod = _copy(_threading)
    for name in ("settrace", "setprofile", "settrace_all_threads", "setprofile_all_threads", "_register_atexit"):
        if hasattr(_threading, name):
            mod.__dict__[name] = _refuser(f"threading.{name}", PROCESS_WHY)
    mod.stack_size = _sized("threading.stack_size", _threading.stack_size)
    return mod


def _thread_module() -> types.ModuleType:
    mod = _copy(_thread)
    mod.stack_size = _sized("_thread.stack_size", _thread.stack_size)
    mod.interrupt_main = _refuser("_thread.interrupt_main", PROCESS_WHY)
    return mod


def make_reach(os_mod: types.ModuleType) -> dict[str, types.ModuleType]:
    """The worker's ``posix``, ``os.path``/``posixpath``, ``weakref``, ``gc``,
    ``threading`` and ``_thread`` (``importlib`` is made by ``_importer``, which holds its import)."""
    path = _ospath(os_mod)
    os_mod.path = path
    shims = {"os.path": path, "posixpath": path, "weakref": _weakref(), "gc": _gc_module(),
             "threading": _threading_module(), "_thread": _thread_module()}
    if sys.platform != "win32":
        shims["posix"] = _posix(os_mod)
    return shims
