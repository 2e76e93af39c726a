"""Where alarmkit may write: checks for output folders and files, made before any work starts.

Both refuse with an ``AlarmkitError`` naming the path, what is wrong and the way out, so a command
line can print one line and exit 2. Neither deletes anything.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from .errors import AlarmkitError

__all__ = ["output_folder", "output_file", "refuse_empty_paths", "PATH_OPTIONS"]

# Every command's options that name a file or a folder (argparse dest -> how the user typed it, an
# example). An empty value ("" from an unset shell variable) is refused by every command the same way,
# before any work: `--report ""` used to write nothing and say nothing, `--db ""` to journal nowhere.
# (calibrate's --reference and --record-reference take "" from argparse to mean "the default file".)
PATH_OPTIONS = {
    "db": ("--db", "journal.duckdb"), "out": ("--out", "report.html"), "report": ("--report", "report.html"),
    "faults": ("--faults", "plan.json"), "drive": ("--drive", "drive.json"), "wrangler": ("--wrangler", "wrangler.toml"),
    "worker": ("--worker", "worker.js"), "spill": ("SPILL", "journal.duckdb.unwritten-....jsonl"),
    "file": ("FILE", "tail.jsonl"), "entry": ("ENTRY", "src/entry.py"), "html": ("--html", "notebooks-html"),
    "source": ("--from", "notebooks"),
}


def refuse_empty_paths(args: object) -> None:
    """``AlarmkitError`` for the first option of ``PATH_OPTIONS`` given an empty path (``args``: the
    parsed command line)."""
    for dest, (flag, example) in PATH_OPTIONS.items():
        value = getattr(args, dest, None)
        values = value if isinstance(value, list) else [value]
        if any(isinstance(v, str) and v == "" for v in values):
            raise AlarmkitError(f"{flag} is an empty path (\"\"); pass a path, e.g. {flag} {example}, or leave "
                                f"{flag} out where it is optional")


def _writable_folder(folder: Path, flag: str) -> None:
    """``folder`` exists: it must be a folder this process may create files in."""
    if not folder.is_dir():
        raise AlarmkitError(f"{flag} {str(folder)!r} is a file, not a folder; pass a folder path, e.g. {flag} reports")
    if not os.access(folder, os.W_OK | os.X_OK):  # also false on a read-only mount, even for root
        raise AlarmkitError(f"cannot write into folder {str(folder)!r} (read-only or no permission); "
                            f"pass another {flag} path")


def output_folder(path: str | os.PathLike, flag: str = "--out", create: bool = True) -> Path:
    """Check that ``path`` can hold output files (an existing writable folder, or one that can be
    made under a writable folder), and make it when ``create``; returns it as a ``Path``."""
    folder = Path(path)
    if str(path) == "":
        raise AlarmkitError(f"{flag} is empty; pass a folder path, e.g. {flag} reports")
    if folder.exists():
        _writable_folder(folder, flag)
        return folder
    parent = folder.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise AlarmkitError(f"cannot make folder {str(folder)!r}: {str(parent)!r} is a file; pass another {flag} path")
    _writable_folder(parent, flag)
    if create:
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise AlarmkitError(f"cannot make folder {str(folder)!r}: {err.strerror}; pass another {flag} path") from None
    return folder


def output_file(path: str | os.PathLike, flag: str = "--out",
                replaceable: Callable[[Path], bool] | None = None, what: str = "output") -> Path:
    """Check that a file can be written at ``path``: not a folder, in an existing writable folder,
    and, if a file is there already, one that ``replaceable(path)`` says alarmkit may replace."""
    out = Path(path)
    if str(path) == "":
        raise AlarmkitError(f"{flag} is empty; pass a file path")
    if str(path).endswith(("/", os.sep)):  # Path("adir/") is Path("adir"): a file named adir would be written
        raise AlarmkitError(f"{flag} {str(path)!r} ends in '/', so it names a folder; pass a file path, "
                            f"e.g. {str(path).rstrip('/' + os.sep) + '/' + what + '.html'!r}")
    if out.is_dir():
        raise AlarmkitError(f"{flag} {str(out)!r} is a folder; pass a file path, e.g. {out / 'report.html'}")
    folder = out.parent
    if not folder.exists():
        raise AlarmkitError(f"folder {str(folder)!r} does not exist; create it or pass another {flag} path")
    _writable_folder(folder, flag)
    if out.exists():
        if not out.is_file():
            raise AlarmkitError(f"{flag} {str(out)!r} is not a regular file; pass another path")
        if replaceable is not None and not replaceable(out):
            raise AlarmkitError(f"{str(out)!r} exists and was not written by alarmkit; alarmkit replaces only its "
                                f"own {what} files: move it away or pass another {flag} path")
        if not os.access(out, os.W_OK):
            raise AlarmkitError(f"cannot replace {str(out)!r} (read-only or no permission); pass another {flag} path")
    return out
