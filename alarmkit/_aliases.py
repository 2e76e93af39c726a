"""Old flag spellings kept working: one name per meaning across commands, the old ones still accepted.

``add(p, "--report", "--out", dest="out", help=...)`` makes ``--report`` the flag and ``--out`` an alias;
using the alias leaves a note in ``args._renamed`` that ``alarmkit.cli.main`` prints on stderr (one line,
``alarmkit: note: ...``): an old script keeps working and learns the new spelling.

The names, one per meaning (docs/runtime.md#command-line):

* ``--report FILE``: the HTML report a command writes (worker, export, diff, calibrate; ``--out`` before);
* ``--out DIR``: a folder a command writes into (demo's reports, explore's Parquet, record's raw files);
* ``--drive FILE``: the drive (worker, explore --worker, record; ``--script`` before, for record);
* ``--worker ENTRY``: your worker module (worker, explore, record; ``alarmkit worker ENTRY`` before).
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add", "flag", "note", "notes"]


class _Alias(argparse.Action):
    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any, option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)
        setattr(namespace, f"_{self.dest}_flag", option_string)  # errors name the flag as the user typed it
        if option_string in getattr(self, "old", ()):
            note(namespace, f"{option_string} is the old name of {self.option_strings[0]} (one spelling across "
                            f"commands); it still works")


def add(p: argparse.ArgumentParser, flag: str, *old: str, **kwargs: Any) -> argparse.Action:
    """``flag`` with ``old`` spellings accepted as aliases (hidden from nothing: ``--help`` lists both)."""
    action = p.add_argument(flag, *old, action=_Alias, **kwargs)
    action.old = old  # type: ignore[attr-defined]
    return action


def note(namespace: argparse.Namespace, text: str) -> None:
    """Leave a deprecation note for ``alarmkit.cli.main`` to print."""
    have = list(getattr(namespace, "_renamed", []) or [])
    if text not in have:
        have.append(text)
    namespace._renamed = have


def flag(namespace: argparse.Namespace, dest: str, default: str) -> str:
    """The spelling the user typed for ``dest`` (``--out`` or ``--report``), else ``default``."""
    return getattr(namespace, f"_{dest}_flag", None) or default


def notes(namespace: argparse.Namespace) -> list[str]:
    return list(getattr(namespace, "_renamed", []) or [])
