"""The one way alarmkit writes a file.

Every file alarmkit writes goes through :func:`atomic_output` (or its two shorthands,
:func:`write_text` and :func:`write_bytes`):

- the path is checked before anything is written (:func:`check_output`): not a folder, in an
  existing writable folder, and, when a file is already there, one that the caller's ``ours``
  recogniser says alarmkit wrote; anything else (a user's file, the journal being read, a file
  alarmkit cannot recognise) is refused with an ``AlarmkitError`` naming the path and the way out;
- the content goes to a temporary name beside the target (``.NAME.alarmkit-tmp-PID``), which is
  renamed over the target only when the writer finished without an error (``os.replace``: atomic
  on one file system), so a reader never sees half a file and a failure leaves the old file whole;
- on any failure, ``KeyboardInterrupt`` included, the temporary file is removed.

``pip`` (``adjacent_tmp_file`` + ``replace``) and trio's ``open_file`` are the models. Nothing in the
package writes a file another way: ``tests/test_architecture.py`` fails on an ``open(..., "w")``,
``write_text``, ``write_bytes``, ``to_parquet`` or ``shutil`` copy outside this module.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import IO, Callable, Iterator

from .errors import AlarmkitError

__all__ = ["Recogniser", "check_output", "atomic_output", "write_text", "write_bytes", "same_file", "starts_with"]

Recogniser = Callable[[Path], bool]
"""Says whether an existing file is one alarmkit wrote (so alarmkit may replace it)."""


def starts_with(*heads: bytes | str) -> Recogniser:
    """A recogniser for files whose first bytes are one of ``heads`` (read at most 64 KiB)."""
    raw = [h.encode("utf-8") if isinstance(h, str) else h for h in heads]
    longest = max((len(h) for h in raw), default=0)

    def ours(path: Path) -> bool:
        try:
            with open(path, "rb") as f:
                head = f.read(min(longest, 65536))
        except OSError:
            return False
        return any(head.startswith(h) for h in raw)

    return ours


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether two paths name one file (after links and ``..``); false when either does not exist."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_output(path: str | os.PathLike, *, ours: Recogniser | None, flag: str = "--out", what: str = "output",
                 reading: tuple[str | os.PathLike, ...] = ()) -> Path:
    """Check that alarmkit may write a file at ``path`` and return it as a ``Path``.

    Refused: an empty path, a folder, a missing or read-only folder, a path that is one of the files
    being read (``reading``: a journal, a trace), and an existing file that ``ours`` does not
    recognise (``ours=None`` refuses every existing file). Nothing is written or deleted here.
    """
    if str(path) == "":
        raise AlarmkitError(f"{flag} is empty; pass a file path")
    if str(path).endswith(("/", os.sep)):  # Path("adir/") is Path("adir"): a file named adir would be written
        raise AlarmkitError(f"{flag} {str(path)!r} ends in '/', so it names a folder; pass a file path, "
                            f"e.g. {str(path).rstrip('/' + os.sep) + '/report.' + what.split()[-1]!r}")
    out = Path(path)
    if out.is_dir():
        raise AlarmkitError(f"{flag} {str(out)!r} is a folder; pass a file path, e.g. {str(out / ('report.' + what))!r}")
    folder = out.parent
    if not folder.exists():
        raise AlarmkitError(f"folder {str(folder)!r} does not exist; create it or pass another {flag} path")
    if not folder.is_dir():
        raise AlarmkitError(f"{str(folder)!r} is a file, not a folder; pass another {flag} path")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise AlarmkitError(f"cannot write into folder {str(folder)!r} (read-only or no permission); "
                            f"pass another {flag} path")
    for src in reading:
        if same_file(src, out):
            raise AlarmkitError(f"{flag} {str(out)!r} is the file being read; pass another {flag} path")
    if out.exists() or out.is_symlink():
        if not out.is_file():
            raise AlarmkitError(f"{flag} {str(out)!r} is not a regular file; pass another {flag} path")
        if ours is None or not ours(out):
            raise AlarmkitError(f"{str(out)!r} exists and was not written by alarmkit as {what}; alarmkit replaces "
                                f"only its own {what} files: move it away or pass another {flag} path")
        if not os.access(out, os.W_OK):
            raise AlarmkitError(f"cannot replace {str(out)!r} (read-only or no permission); pass another {flag} path")
    return out


def _tmp_name(out: Path) -> Path:
    return out.with_name(f".{out.name}.alarmkit-tmp-{os.getpid()}")


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike, *, ours: Recogniser | None, flag: str = "--out", what: str = "output",
                  mode: str = "w", encoding: str | None = "utf-8", reading: tuple[str | os.PathLike, ...] = (),
                  as_path: bool = False) -> Iterator[IO | Path]:
    """Write ``path`` through a temporary file renamed over it on success.

    Yields an open file (``mode`` "w" or "wb"), or with ``as_path=True`` the temporary ``Path`` for
    writers that open files themselves (DuckDB, Parquet, plotly). Checked first with
    :func:`check_output`; on any exception the temporary file is removed and the target is left as
    it was.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_output writes whole files: mode 'w' or 'wb', got {mode!r}")
    out = check_output(path, ours=ours, flag=flag, what=what, reading=reading)
    tmp = _tmp_name(out)
    try:
        if as_path:
            yield tmp
        else:
            try:
                f = open(tmp, mode, encoding=None if "b" in mode else encoding)
            except OSError as err:  # name the user's path, not the temporary one beside it
                raise OSError(err.errno, err.strerror, str(out)) from None
            with f:
                yield f
                f.flush()
                os.fsync(f.fileno())
        if not tmp.exists():
            raise AlarmkitError(f"nothing was written for {str(out)!r}")
        os.replace(tmp, out)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def write_text(path: str | os.PathLike, text: str, *, ours: Recogniser | None, **kw) -> Path:
    """Write ``text`` (UTF-8) to ``path`` through :func:`atomic_output`; returns the path."""
    with atomic_output(path, ours=ours, **kw) as f:
        f.write(text)
    return Path(path)


def write_bytes(path: str | os.PathLike, data: bytes, *, ours: Recogniser | None, **kw) -> Path:
    """Write ``data`` to ``path`` through :func:`atomic_output`; returns the path."""
    with atomic_output(path, ours=ours, mode="wb", **kw) as f:
        f.write(data)
    return Path(path)
