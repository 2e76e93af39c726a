"""Importing a worker's modules in isolation: each load gets fresh module objects for the entry module and
every module beside it (its folder is the worker's ``src/``), never entered in ``sys.modules``, whose
``__builtins__`` carries an ``__import__`` that hands them the worker's own ``time``, ``datetime``,
``asyncio``, ``js``, ``pyodide`` and ``workers`` (``_modules``), and its own ``os``, ``atexit``, ``sqlite3`` and
``duckdb`` (``_unaudited``).

So two workers, or one module loaded twice, share no module state. What they do share is what Python
itself shares: every other module (the standard library but those ten, installed packages) is the
process's one copy, imported the usual way, and reads real time.
"""

from __future__ import annotations

import builtins
import types
from pathlib import Path
from typing import Any

from ...errors import WorkerError
from ._contain import WallClockLimit, register_file
from ._guard import NOTE, name_of, noted, passable, text_of
from ._reach import OWN, make_importlib, refuse_alarmkit
from ._unaudited import PASSED, REAL_SUBMODULES

__all__ = ["Isolated"]


PASSED.add(__file__)  # a refusal of an import names the worker's line that imports
MAX_SOURCE = 1 << 24  # 16 MiB: a worker module past this is not a hand-written one


class Isolated:
    """The module namespace of one loaded worker: ``load_entry(path)``; ``modules`` by name."""

    def __init__(self, root: Path, shims: dict[str, types.ModuleType], print_: Any = None) -> None:
        self.root = root
        # its own builtins, the module its code imports under that name too: `builtins.print = None` in the
        # worker changes the worker's print, not the process's (alarmkit's own output crashed on it)
        own = types.ModuleType("builtins", builtins.__doc__)
        vars(own).update(vars(builtins))
        self.shims = {"builtins": own, **shims}
        self.modules: dict[str, types.ModuleType] = {}
        self.shims["importlib"] = make_importlib(self._import, self.shims, self.modules, self._run_again)
        self.builtins = vars(own)
        self.builtins["__import__"] = self._import
        if print_ is not None:
            self.builtins["print"] = print_
        own_sys = self.shims.get("sys")
        if own_sys is not None and hasattr(own_sys.modules, "maps"):  # its sys.modules names what its import
            own_sys.modules.maps[1:1] = [self.modules, self.shims]  # gives: sys.modules['sys'] was the process's

    def load_entry(self, path: Path) -> types.ModuleType:
        return self._exec(path.stem, path, is_package=False)

    def _exec(self, name: str, path: Path, is_package: bool) -> types.ModuleType:
        if name in self.modules:
            return self.modules[name]
        try:
            size = path.stat().st_size
            if size > MAX_SOURCE:
                raise WorkerError(f"{path} is {size:,} bytes, past the {MAX_SOURCE:,} a worker module may be")
            source = path.read_bytes()
        except OSError as err:
            raise WorkerError(f"cannot read worker module {path}: {err.strerror or err}") from None
        try:
            code = compile(source, str(path), "exec", dont_inherit=True)
        except SyntaxError as err:
            at = f"{path}:{err.lineno}" if err.lineno is not None else str(path)
            raise WorkerError(f"{at}: syntax error: {err.msg}; fix the module and load it again") from None
        except ValueError as err:  # null bytes in the source
            raise WorkerError(f"{path}: not Python source ({err})") from None
        register_file(str(path))  # its calls out of the simulation are refused (_contain)
        mod = types.ModuleType(name)
        mod.__file__ = str(path)
        mod.__builtins__ = self.builtins
        mod.__package__ = name if is_package else name.rpartition(".")[0]
        if is_package:
            mod.__path__ = [str(path.parent)]
        self.modules[name] = mod  # before running it: a cycle of imports finds it, as sys.modules does
        try:
            exec(code, mod.__dict__)
        except WorkerError:
            del self.modules[name]
            raise
        except RecursionError:
            del self.modules[name]
            raise WorkerError(f"importing {path} recursed too deeply (an import cycle or runaway recursion at top level)") from None
        except Exception as err:
            del self.modules[name]
            raise WorkerError(f"importing {path} raised {name_of(err)}: {text_of(err)}") from None
        except (KeyboardInterrupt, SystemExit) as err:  # the module's own (or a Ctrl-C): raised on, said where
            self.modules.pop(name, None)
            new = passable(err)  # a class of its own the command could not read: a plain one
            if not noted(new):
                new.add_note(f"{NOTE} the worker module {path} (at import, line {_line(err, path)})")
            if new is err:
                raise
            raise new from None
        except WallClockLimit:
            self.modules.pop(name, None)
            raise
        except BaseException as err:  # GeneratorExit, a BaseException of its own: a module that cannot load
            del self.modules[name]
            text = text_of(err)
            raise WorkerError(f"importing {path} raised {name_of(err)} (a BaseException, not an Exception) "
                              f"at line {_line(err, path)}{': ' + text if text else ''}; raise an Exception "
                              "(ValueError, RuntimeError...) or none") from None
        return mod

    def _run_again(self, mod: types.ModuleType) -> types.ModuleType:
        """``importlib.reload`` of the worker's own module: its code run again in its namespace, as
        Python's reload does (what it raises is raised in the worker's code that called it)."""
        path = Path(mod.__file__ or "")
        exec(compile(path.read_bytes(), str(path), "exec", dont_inherit=True), mod.__dict__)
        return mod

    def _local(self, name: str) -> types.ModuleType | None:
        """Load the worker's own module ``name`` (dotted) from its folder, or None if it is not there."""
        parts = name.split(".")
        base = self.root.joinpath(*parts)
        if (base / "__init__.py").is_file():
            found, pkg = base / "__init__.py", True
        elif base.with_suffix(".py").is_file():
            found, pkg = base.with_suffix(".py"), False
        else:
            return None
        if len(parts) > 1:
            parent = self._local(".".join(parts[:-1]))
            if parent is None:
                return None
        mod = self._exec(name, found, pkg)
        if len(parts) > 1:
            setattr(self.modules[".".join(parts[:-1])], parts[-1], mod)
        return mod

    def _resolve(self, name: str, globals: dict | None, level: int) -> str:
        package = (globals or {}).get("__package__") or ""
        bits = package.split(".") if package else []
        if level - 1 > len(bits) or (not bits and level):
            raise ImportError(f"attempted relative import beyond the worker's folder ({'.' * level}{name})")
        base = ".".join(bits[: len(bits) - (level - 1)])
        return f"{base}.{name}" if name and base else (name or base)

    def _import(self, name: str, globals: dict | None = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
        if level:
            name = self._resolve(name, globals, level)
        top = name.partition(".")[0]
        if name in self.shims or top in self.shims:
            if name not in self.shims and top in REAL_SUBMODULES:  # e.g. duckdb.typing: the real submodule
                real = builtins.__import__(name, globals, locals, fromlist, 0)
                return real if fromlist else self.shims[top]
            if name not in self.shims:
                raise ImportError(f"No module named {name!r} in alarmkit's Python Worker host")
            return self.shims[name] if fromlist else self.shims[top]
        mod = self.modules.get(name) or self._local(name)
        if mod is not None:
            for item in fromlist or ():
                if item != "*" and not hasattr(mod, item) and getattr(mod, "__path__", None):
                    self._local(f"{name}.{item}")
            return mod if fromlist else self.modules[top]
        if level:
            raise ImportError(f"No module named {name!r} in the worker's folder {self.root}")
        if top == OWN:
            raise refuse_alarmkit(name)
        return builtins.__import__(name, globals, locals, fromlist, 0)


def _line(err: BaseException, path: Path) -> str:
    """The line of ``path`` the traceback of ``err`` last passed (``?`` when it never did)."""
    line, tb = "?", err.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == str(path) and tb.tb_lineno is not None:
            line = str(tb.tb_lineno)
        tb = tb.tb_next
    return line
