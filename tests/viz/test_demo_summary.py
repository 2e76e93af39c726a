"""``alarmkit demo``'s console ends with the summary its ``index.html`` shows: the counts, one line per page
in the index's order (broken first) with its verdict word, and the index's path."""

import html
import re

import pytest

from alarmkit.viz.pages import ORDER

WORD = {"broken": "BROKEN", "warning": "WARNING", "unchecked": "NOT CHECKED", "held": "held"}
ROW = re.compile(r'<tr data-status="(\w+)"><td[^>]*>[^<]*</td><td><a href="[^"]*">([^<]*)</a>')


@pytest.mark.slow
def test_the_demo_console_ends_with_the_index_summary(demo_run):
    folder, results, printed = demo_run  # run once per test process (tests/conftest.py)
    index = (folder / "reports" / "index.html").read_text(encoding="utf-8")
    rows = [(status, html.unescape(name)) for status, name in ROW.findall(index)]
    assert len(rows) > len(results) and [s for s, _ in rows] == sorted((s for s, _ in rows), key=ORDER.index)
    lines = printed.rstrip("\n").split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("verdicts ("))
    head, body, last = lines[start], lines[start + 1:-1], lines[-1]
    n = {k: sum(s == k for s, _ in rows) for k in ORDER}
    assert head.startswith(f"verdicts ({n['broken']} broken, {n['warning']} with warnings, {n['held']} held")
    assert f"{head[len('verdicts ('):].split(';')[0]}" in index  # the index states the same counts
    assert len(body) == len(rows)
    for line, (status, name) in zip(body, rows):
        word, rest = line[2:13].rstrip(), line[14:]
        assert (word, rest.split(" [")[0].split("  ")[0]) == (WORD[status], name), line
        assert len(rest.split("  ", 1)[-1].strip()) > 0  # the first reason, or the headline
    assert last == f"index of the reports: {folder / 'reports' / 'index.html'}"
    assert any(line[2:13].rstrip() == "WARNING" and line[14:].startswith("lease-exhaustion ") for line in body)
