"""Where ``record --out DIR`` keeps the raw tail and stream events, without ever harming a user's file.

The collector writes into the recording's own work folder; only at the end are the files copied
into ``DIR`` through ``alarmkit._files`` (checked, a temporary name, renamed). ``DIR`` gets a
manifest (``.alarmkit-record.json``) with the SHA-256 of each file alarmkit put there, so a later
recording into the same folder may replace exactly those files and refuses every other one.
``check_out`` runs before workerd starts, so a refused folder costs nothing.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ..errors import AlarmkitError
from .._text import clean

__all__ = ["check_out", "keep_raw", "MANIFEST"]


def _ours_raw(folder: Path):
    """A raw file in ``folder`` is alarmkit's when its SHA-256 is in the folder's manifest, written
    by an earlier ``record --out`` into the same folder."""
    def ours(path: Path) -> bool:
        try:
            manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
            return manifest.get("alarmkit_record") == 1 and manifest["files"].get(path.name) == _sha(path)
        except (OSError, ValueError, KeyError, AttributeError, TypeError):
            return False
    return ours


MANIFEST = ".alarmkit-record.json"


def _sha(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def check_out(out_dir: str | Path | None) -> Path | None:
    """Check ``--out`` before workerd starts: the folder may be made; files there must be alarmkit's."""
    from .._files import check_output, starts_with

    if out_dir is None:
        return None
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise AlarmkitError(f"--out {clean(str(out))!r} is a file, not a folder; pass a folder for tail.jsonl and "
                            "stream.jsonl")
    if not out.exists():
        if not out.parent.is_dir():
            raise AlarmkitError(f"folder {clean(str(out.parent))!r} does not exist; create it or pass another --out")
        return out  # made at the end, when there is something to put in it
    for fname in ("tail.jsonl", "stream.jsonl"):
        check_output(out / fname, ours=_ours_raw(out), flag="--out", what="recording")
    check_output(out / MANIFEST, ours=starts_with('{"alarmkit_record": 1'), flag="--out", what="recording manifest")
    return out


def keep_raw(out: Path, tail: Path, stream: Path) -> tuple[Path, Path]:
    """Copy the work folder's raw files into ``out`` through ``_files`` (checked, temp name, rename)."""
    from .._files import starts_with, write_text

    out.mkdir(exist_ok=True)
    kept = {}
    for src in (tail, stream):
        write_bytes_from(src, out / src.name, _ours_raw(out))
        kept[src.name] = _sha(out / src.name)
    write_text(out / MANIFEST, json.dumps({"alarmkit_record": 1, "files": kept}) + "\n",
               ours=starts_with('{"alarmkit_record": 1'), flag="--out", what="recording manifest")
    return out / tail.name, out / stream.name


def write_bytes_from(src: Path, dest: Path, ours) -> None:
    from .._files import atomic_output

    with atomic_output(dest, ours=ours, mode="wb", flag="--out", what="recording") as f, open(src, "rb") as r:
        for chunk in iter(lambda: r.read(1 << 20), b""):
            f.write(chunk)
