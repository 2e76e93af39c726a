"""Public names say where they live: a face calls :func:`publish` on what it exports.

A class or function defined in a private module (``alarmkit.runtime._runtime``) and exported by a
face gets that face as its ``__module__`` (trio's ``fixup_module_metadata`` is the model), so
``repr``, tracebacks, ``help()`` and pickles name ``alarmkit.Simulation``, not a private path. Names
defined in a public module (``alarmkit.viz.plots``) keep theirs: that path is public already.
"""

from __future__ import annotations

from typing import Any, Iterable

__all__ = ["publish", "is_private"]


def is_private(module: str) -> bool:
    """Whether a module path has a private part (``alarmkit.runtime._host``)."""
    return any(part.startswith("_") and not part.startswith("__") for part in module.split("."))


def publish(face: str, namespace: dict[str, Any], names: Iterable[str]) -> None:
    """Give every class and function in ``names`` whose module is private the module ``face``."""
    for name in names:
        obj = namespace.get(name)
        module = getattr(obj, "__module__", None)
        if not (isinstance(obj, type) or callable(obj)) or not isinstance(module, str):
            continue
        if module.startswith("alarmkit") and is_private(module):
            try:
                obj.__module__ = face
            except (AttributeError, TypeError):  # a builtin or a frozen object: leave it
                pass
