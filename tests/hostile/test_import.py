"""Hostile inputs to ``alarmkit import``: generated trace files (binary, other encodings, NaN and
infinities, huge and text numbers, deep nesting, duplicates, unknown outcomes, control characters in
names), each answered with exit 0, or exit 2 and one line; nothing else in the folder changes; the
terminal gets no control characters; memory stays bounded on a huge file."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tiers import tier_examples  # a tenth of the examples in the quick tier
from hypothesis import given, settings

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _real_harness import SETTINGS, assert_clean, checksums, children, run_cli, trace_bytes  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
N_IMPORT = tier_examples(80)  # generated trace files per run (fixed seed)


def test_generated_trace_files_import_cleanly(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile-import")
    (folder / "thesis.txt").write_text("a user's file beside the journal\n")
    before_children = children()
    counts = {0: 0, 2: 0}

    @settings(max_examples=N_IMPORT, **SETTINGS)
    @given(data=trace_bytes())
    def one(data: bytes) -> None:
        (folder / "t.jsonl").write_bytes(data)
        keep = checksums(folder, skip=("t.jsonl", "j.duckdb", "j.duckdb.wal"))
        code, out, err = run_cli(["import", "t.jsonl", "--db", "j.duckdb", "--again"], folder)
        assert_clean(code, out, err)
        counts[code] += 1
        assert checksums(folder, skip=("t.jsonl", "j.duckdb", "j.duckdb.wal")) == keep
        assert not [p for p in folder.iterdir() if "alarmkit-tmp" in p.name]

    one()
    assert counts[0] >= 5 and counts[2] >= 20, counts  # the strategy reaches both answers
    assert children() <= before_children


def test_a_huge_trace_imports_in_bounded_memory(tmp_path):
    """A 60 MB JSON array of records with long log lines, imported by the CLI's path (import_file)
    in a child whose address space is capped at what it had after start-up plus 200 MB."""
    big = tmp_path / "big.json"
    with open(big, "w") as f:
        f.write("[")
        for i in range(15_000):
            f.write(("," if i else "") + '{"eventTimestamp": %d, "outcome": "ok", "event": {"rpcMethod": "go"}, '
                    '"logs": [{"timestamp": %d, "level": "log", "message": ["%s"]}], "exceptions": []}'
                    % (1_800_000_000_000 + i, 1_800_000_000_000 + i, "y" * 4000))
        f.write("]")
    assert big.stat().st_size > 60e6
    child = textwrap.dedent(f"""
        import resource
        from alarmkit.realruns.importer import import_file
        vm = [int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmSize:")][0]
        resource.setrlimit(resource.RLIMIT_AS, (vm + 200 * 2**20, vm + 200 * 2**20))
        r = import_file({str(big)!r})
        print(r.summary["invocations"], len(r.report().splitlines()))
    """)
    out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[0] == "15000"
