"""A pinned run, for the explorer's "Pin this run": every later run is diffed against it.

``Pin`` holds the pinned ``RunResult`` and the diff of the latest run against it, and says what the
diff found in a few plain lines (``lines()``, ``html()``). The diff is ``alarmkit.diff``
(``ak.diff(pinned, current)``), a wing above this one: ``Pin.differ`` is set when ``alarmkit.diff``
is imported (``import alarmkit`` does, as it gives ``Simulation.load_worker`` its loader). This
module imports no widget library; the explorer (``alarmkit.widgets``) draws the controls.
"""

from __future__ import annotations

from typing import Any, Callable, ClassVar

from .._text import esc
from ..errors import AlarmkitError

__all__ = ["Pin", "STATUS_WORDS"]

# the statuses of RunDiff.table(), in the words of a pinned diff ({b}: the current run's name)
STATUS_WORDS = {"only_a": "only in the pinned run", "only_b": "only in {b}", "changed": "with another outcome",
                "moved": "moved", "late": "with another lateness"}


def _run_name(run: Any, pinned: bool) -> str:
    rid = getattr(run, "run_id", None)
    if pinned:
        return "the pinned run" if rid is None else f"pinned run {rid}"
    return "this run" if rid is None else f"run {rid}"


class Pin:
    """One widget's pinned run. ``pin(run)`` pins a ``RunResult``; ``compare(current)`` diffs
    ``current`` against it (``ak.diff(pinned, current)``, names ``"pinned run N"`` and ``"run M"``)
    and keeps the ``RunDiff`` as ``diff`` (None when nothing is pinned, when ``current`` is the
    pinned run itself, or when the diff was refused: ``error`` then says why); ``unpin()`` forgets
    both. Each explorer has its own ``Pin``."""

    # alarmkit.diff.diff, set when that package is imported: viz does not import the wing above it
    differ: ClassVar[Callable[..., Any] | None] = None

    def __init__(self) -> None:
        self.run: Any = None
        self.current: Any = None
        self.diff: Any = None
        self.error: str | None = None

    @property
    def pinned(self) -> bool:
        return self.run is not None

    @property
    def names(self) -> tuple[str, str]:
        """The two runs' names in the diff's sentences."""
        return _run_name(self.run, True), _run_name(self.current, False)

    def pin(self, run: Any) -> None:
        """Pin ``run`` (a ``RunResult``); the next ``compare`` diffs against it."""
        if run is None:
            raise AlarmkitError("there is no run to pin yet: run the scenario first")
        self.run, self.current, self.diff, self.error = run, run, None, None

    def unpin(self) -> None:
        self.run = self.current = self.diff = self.error = None

    def compare(self, current: Any) -> Any:
        """Diff ``current`` against the pinned run; the ``RunDiff`` (None: see the class)."""
        self.current, self.diff, self.error = current, None, None
        if self.run is None or current is None or current is self.run:
            return None
        if Pin.differ is None:
            self.error = "alarmkit.diff is not loaded: import alarmkit first"
            return None
        try:
            self.diff = Pin.differ(self.run, current, names=self.names)
        except AlarmkitError as err:
            self.error = str(err)
        return self.diff

    def headline(self) -> str:
        """The first line: what is pinned, or the count of differing events by status."""
        if self.run is None:
            if self.error:
                return f"Nothing pinned: {self.error}."
            return "No run pinned: pin this run to diff every later run against it."
        pinned = _run_name(self.run, True)
        if self.current is None or self.current is self.run:
            rid = getattr(self.run, "run_id", None)
            return f"{'This run' if rid is None else f'Run {rid}'} is pinned: every later run is diffed against it."
        if self.diff is None:
            return f"{self.names[1].capitalize()} could not be diffed against {pinned}: {self.error}"
        d, b = self.diff, self.names[1]
        if d.same:
            return f"Same as the pinned run: {b} and {pinned} agree ({d.matched:,} alarm events matched)."
        table = d.table()
        by = table["status"].value_counts()
        parts = [f"{int(by[s]):,} {w.format(b=b)}" for s, w in STATUS_WORDS.items() if s in by.index]
        head = f"{b[0].upper()}{b[1:]} against {pinned}: {len(table):,} differing alarm event{'s' if len(table) != 1 else ''}"
        if parts:
            head += f" ({', '.join(parts)})"
        elif not d.invariants.empty:
            head += f"; {len(d.invariants)} invariant or obligation difference(s)"
        return head + f"; {d.matched:,} matched."

    def lines(self) -> list[str]:
        """The headline, then the diff's summary less its own first line (the agree/differ count the
        headline says by status): the first divergence, lateness, moves, counts, invariants, notes."""
        out = [self.headline()]
        if self.diff is not None and not self.diff.same:
            out += [s for s in self.diff.summary().split("\n")[1:] if s]
        return out

    def html(self) -> str:
        """``lines()`` as HTML, every string escaped: the headline bold, the rest a list."""
        head, *rest = self.lines()
        items = "".join(f"<li>{esc(s)}</li>" for s in rest)
        return f"<b>{esc(head)}</b>" + (f"<ul>{items}</ul>" if items else "")

    def __repr__(self) -> str:
        return f"<Pin {_run_name(self.run, True) if self.run is not None else 'nothing'}>"
