"""The teaching notebooks and the bundle's own text name no document a student never saw: no internal
design note by its number, no "the author" of one."""

import re
from pathlib import Path

from alarmkit.viz._handout import EXERCISES, MEANING

ROOT = Path(__file__).resolve().parents[2]
INTERNAL = re.compile(r"\bseed 0\d\d\b|\bseed's\b|\bthe author\b", re.I)


def test_no_notebook_names_an_internal_document():
    found = [f"{p.name}:{i}: {line.strip()}" for p in sorted((ROOT / "notebooks").glob("*.py"))
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if INTERNAL.search(line)]
    assert found == []


def test_the_bundle_text_names_none_either():
    texts = [q + " " + a for pairs in EXERCISES.values() for q, a in pairs] + list(MEANING.values())
    assert [t for t in texts if INTERNAL.search(t)] == []
    planted = ["as " + "Seed " + "003 says", "the " + "author reproduced it"]
    assert all(INTERNAL.search(t) for t in planted)  # the check can fail
