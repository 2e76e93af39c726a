"""The teaching notebooks and the bundle's own text name no document a student never saw (issue 39): no
"Seed 000", "Seed 003", "the seed's", "the author"."""

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
    assert INTERNAL.search("as Seed 003 says") and INTERNAL.search("the author reproduced it")  # the check can fail
