"""Turn a ``--cpu-profile`` run (tests/cpu_profile.py) into tests/costs.json and the tables of tests/README.md.

    python3 tests/profile_table.py PROFILE.json [--coverage COVERAGE.json] [--section current] [--no-costs]

``python3 dev.py test --profile`` runs the whole suite on one core with the profile and coverage.py, then
this. The tables go between ``<!-- profile:SECTION:start -->`` and ``<!-- profile:SECTION:end -->`` of
tests/README.md; tests/costs.json (each test's CPU seconds) is what tests/tiers.py reads to leave the
costliest tests out of the quick tier. Under xdist, PROFILE.gw0.json, PROFILE.gw1.json... are read too.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parent
README = TESTS / "README.md"
COSTS = TESTS / "costs.json"


def load(profile: Path) -> list[dict]:
    records = []
    for path in [profile, *sorted(profile.parent.glob(f"{profile.stem}.gw*{profile.suffix}"))]:
        if path.exists():
            records += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not records:
        sys.exit(f"no test records in {profile} (run pytest with --cpu-profile={profile})")
    return records


def cost(r: dict) -> float:
    return r["cpu"] + r["children"]


def tables(records: list[dict], coverage: dict | None, title: str) -> str:
    ran = [r for r in records if r["outcome"] != "skipped"]
    quick = [r for r in records if quick_now(r)]
    total, quick_cpu = sum(map(cost, records)), sum(map(cost, quick))
    counts = defaultdict(int)
    for r in records:
        counts[r["outcome"]] += 1
    lines = [f"**{title}**: {len(records)} tests ({', '.join(f'{n} {k}' for k, n in sorted(counts.items()))}); "
             f"CPU {total:.0f} s (this process {sum(r['cpu'] for r in records):.0f} s + children "
             f"{sum(r['children'] for r in records):.0f} s), wall {sum(r['wall'] for r in records):.0f} s on one core; "
             f"quick tier ({'by marks' if BY_MARKS_ONLY else 'as these costs make it'}) {len(quick)} tests, {quick_cpu:.0f} CPU-s; the rest {len(records) - len(quick)} tests, "
             f"{total - quick_cpu:.0f} CPU-s."]
    if coverage:
        t = coverage["totals"]
        lines[0] += (f" Coverage (coverage.py, lines run in the pytest process): {t['covered_lines']} of "
                     f"{t['num_statements']} statements, {t['percent_covered']:.1f} %.")
    lines += ["", f"{len(ran)} ran; skipped tests cost their set-up only.", "",
              "| file | tests | quick | CPU s | wall s |", "|---|---:|---:|---:|---:|"]
    per = defaultdict(lambda: [0, 0, 0.0, 0.0])
    for r in records:
        row = per[r["file"]]
        row[0] += 1
        row[1] += quick_now(r)
        row[2] += cost(r)
        row[3] += r["wall"]
    for f, (n, q, c, w) in sorted(per.items(), key=lambda kv: -kv[1][2]):
        lines.append(f"| {f} | {n} | {q} | {c:.1f} | {w:.1f} |")
    lines += ["", "The 50 costliest tests:", "", "| test | CPU s | of which children | wall s | marks |",
              "|---|---:|---:|---:|---|"]
    for r in sorted(records, key=cost, reverse=True)[:50]:
        marks = ", ".join(["quick"] if quick_now(r) else [m for m in r["markers"] if m in ("slow", "browser", "notebook",
                                                                                        "workerd", "long", "costly")])
        lines.append(f"| {r['nodeid'].replace('|', '&#124;')} | {cost(r):.1f} | {r['children']:.1f} | {r['wall']:.1f} | {marks} |")
    return "\n".join(lines)


def write_section(text: str, section: str, readme: Path = README) -> None:
    start, end = f"<!-- profile:{section}:start -->", f"<!-- profile:{section}:end -->"
    doc = readme.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(start) + ".*?" + re.escape(end), re.S)
    if not pattern.search(doc):
        sys.exit(f"{readme} has no {start} ... {end} to fill")
    readme.write_text(pattern.sub(lambda _m: f"{start}\n{text}\n{end}", doc), encoding="utf-8")


BY_MARKS_ONLY = []  # --by-marks: the quick tier by marks alone, not by measured cost


def quick_now(r: dict) -> bool:
    """In the quick tier once these costs are written: no mark that keeps it out, cheap enough."""
    from tiers import NOT_QUICK, QUICK_MAX_CPU

    return not set(r["markers"]) & (set(NOT_QUICK) - {"costly"}) and (bool(BY_MARKS_ONLY) or cost(r) <= QUICK_MAX_CPU)


def write_costs(records: list[dict], path: Path = COSTS) -> None:
    data = {"note": "CPU seconds per test (this process + children) from `python3 dev.py test --profile`; "
                    "tests/tiers.py leaves those above QUICK_MAX_CPU out of the quick tier",
            "cpu": {r["nodeid"]: round(cost(r), 2) for r in sorted(records, key=lambda r: r["nodeid"])},
            "quick": sorted(r["nodeid"] for r in records if quick_now(r))}
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("profile", type=Path)
    ap.add_argument("--coverage", type=Path, help="coverage.py's JSON report (coverage json)")
    ap.add_argument("--section", default="current")
    ap.add_argument("--title", default="Measured by `python3 dev.py test --profile`")
    ap.add_argument("--no-costs", action="store_true", help="leave tests/costs.json as it is")
    ap.add_argument("--by-marks", action="store_true", help="the quick tier by marks alone, not measured cost")
    args = ap.parse_args(argv)
    if args.by_marks:
        BY_MARKS_ONLY.append(True)
    records = load(args.profile)
    coverage = json.loads(args.coverage.read_text(encoding="utf-8")) if args.coverage else None
    write_section(tables(records, coverage, args.title), args.section)
    if not args.no_costs:
        write_costs(records)
    print(f"{len(records)} tests: tables in {README}" + ("" if args.no_costs else f", costs in {COSTS}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
