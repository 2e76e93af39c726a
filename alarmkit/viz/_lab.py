"""The contents manager ``python3 dev.py lab`` serves the notebooks with: jupytext's, plus the kernel's
``language_info`` on a notebook that lacks it, so an untouched notebook does not open marked unsaved.

Why: a py:percent notebook keeps only ``kernelspec`` and ``jupytext`` in its header (jupytext's default
metadata filter drops ``language_info``). When the kernel connects, JupyterLab writes the kernel's
``language_info`` into the notebook's metadata (``@jupyterlab/notebook`` panel ``_updateLanguage``); the
shared model skips a write of an equal value, but a missing one is a change, so the document turns dirty
and closing it asks to save. Filled in here with what ipykernel reports (``IPythonKernel.language_info``,
for the Python that runs the server, which is the one ``dev.py`` installs the kernel into), the write is
equal and the notebook stays clean. Probed in JupyterLab 4.6 (tests/test_lab_clean_browser.py): without
this, every notebook of notebooks/ and a bare nbformat notebook open dirty; with it, none does. Saving
still writes no ``language_info`` into the .py (the same filter drops it).
"""

from __future__ import annotations

import sys
from typing import Any

from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager
from jupytext.async_contentsmanager import build_async_jupytext_contents_manager_class

__all__ = ["NotebookContents", "kernel_language_info"]


def kernel_language_info() -> dict[str, Any]:
    """What ipykernel's ``kernel_info_reply`` says for this Python (its class attribute when importable)."""
    try:
        from ipykernel.ipkernel import IPythonKernel

        info = IPythonKernel.language_info
        if isinstance(info, dict):
            return {k: (dict(v) if isinstance(v, dict) else v) for k, v in info.items()}
    except ImportError:  # pragma: no cover - ipykernel is in the notebooks extra
        pass
    major = sys.version_info[0]
    return {"name": "python", "version": sys.version.split()[0], "mimetype": "text/x-python",
            "codemirror_mode": {"name": "ipython", "version": major}, "pygments_lexer": f"ipython{major}",
            "nbconvert_exporter": "python", "file_extension": ".py"}


class NotebookContents(build_async_jupytext_contents_manager_class(AsyncLargeFileManager)):  # type: ignore[misc]
    """jupytext's contents manager; a Python notebook read without ``language_info`` gets the kernel's."""

    async def get(self, path: str, content: bool = True, type: str | None = None, format: str | None = None,
                  **kwargs: Any) -> dict:
        model = await super().get(path, content=content, type=type, format=format, **kwargs)
        nb = model.get("content") if content and model.get("type") == "notebook" else None
        meta = getattr(nb, "metadata", None)
        if meta is not None and "language_info" not in meta and \
                (meta.get("kernelspec") or {}).get("language", "python") == "python":
            meta["language_info"] = kernel_language_info()
        return model
