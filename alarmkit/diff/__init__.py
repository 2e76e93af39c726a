"""Diff two runs, down to the first divergence: ``diff(a, b)`` aligns two alarm histories per object
and per alarm in DuckDB and returns a ``RunDiff`` (docs/diff.md)."""

from ._result import Divergence, RunDiff
from ._run import diff
from ._sql import ALIGNED_KINDS
from ..viz.pinning import Pin as _Pin

_Pin.differ = staticmethod(diff)  # the explorer's "Pin this run" diffs with this (alarmkit.viz.pinning)

__all__ = ["diff", "RunDiff", "Divergence", "ALIGNED_KINDS"]
