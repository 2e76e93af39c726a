"""Hypothesis strategies for hostile input: text, numbers, JSON values, fault plans, files and paths.

Each is what a hostile (or unlucky) user hands alarmkit: binary and huge, NaN and infinity, past
2**53 and 2**64, nested thousands deep, keys given twice, names nobody knows, escape sequences
and bidi overrides, paths that are folders, the journal being read, or a user's own file.
"""

from __future__ import annotations

import json
import os

from hypothesis import strategies as st

# examples per test: HOSTILE_SCALE=10 multiplies them for a longer hunt by hand
SCALE = max(1, int(os.environ.get("HOSTILE_SCALE", "1")))


def examples(n: int) -> int:
    """``n`` examples in the full suite (times HOSTILE_SCALE), a tenth of them in the quick tier (tests/tiers.py)."""
    from tiers import tier_examples

    return tier_examples(n) * SCALE

ESCAPES = ["\x1b[2J", "\x1b]0;pwned\x07", "\u202e", "\r", "\x00", "\x7f", "\u2028", "\ufeff"]
WEIRD_NUMBERS = ["nan", "NaN", "Infinity", "-Infinity", "1e309", "-1", "-0", "0", "1", "3", "9007199254740992",
                 "9007199254740993", "18446744073709551616", "1e15", "8.64e15", "0x10", "1_000", "2**53", "", " ",
                 "1.5", "٣", "10000001", "99999999999999999999999"]
PLAN_FIELDS = ["object", "handler_throws", "uncounted", "effect_throws", "crashes", "crash_after_effect", "evictions",
               "restarts", "latency", "duplicates", "forgotten_alarms", "bogus", "", "handler_throws "]


def text(max_size: int = 30, argv: bool = False) -> st.SearchStrategy[str]:
    """Names and words: ordinary, with escape sequences, huge, or (in-process only) with NUL and lone surrogates."""
    blacklist = ("Cs",) if argv else ()
    plain = st.text(st.characters(blacklist_categories=blacklist + (("Cc",) if argv else ())), max_size=max_size)
    parts = [plain, st.sampled_from(ESCAPES[:3] + ESCAPES[4:] if argv else ESCAPES).map(lambda e: f"x{e}y"),
             st.sampled_from(["lease-normal", "nope", "../../etc/passwd", "a" * 300, "-", "--", "--json"])]
    if argv:  # argv cannot carry NUL
        parts = [p.map(lambda s: s.replace("\x00", "")) for p in parts]
    return st.one_of(*parts)


def number_text() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(WEIRD_NUMBERS), st.integers(-2**70, 2**70).map(str),
                     st.floats(allow_nan=True, allow_infinity=True).map(repr))


def deep(depth: int, leaf: str = "1") -> str:
    return "[" * depth + leaf + "]" * depth


def json_value_text() -> st.SearchStrategy[str]:
    """What follows ``--set name=``: JSON and not quite JSON."""
    scalars = st.one_of(st.integers(-2**70, 2**70), st.floats(allow_nan=False, allow_infinity=False),
                        st.booleans(), st.none(), st.text(max_size=12))
    values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                           st.dictionaries(st.text(max_size=4), inner, max_size=3)),
                          max_leaves=12)
    return st.one_of(values.map(json.dumps), number_text(),
                     st.sampled_from(["NaN", "[NaN]", "Infinity", '{"a": 1, "a": 2}', "[1, 2", "\"unterminated",
                                      "[" + "1," * 5000 + "1]", "null", "true", "[[300, 1500]]", "[-5]"]),
                     st.integers(10, 3000).map(deep))


def plan_dict() -> st.SearchStrategy[dict]:
    """Fault plans as dicts: known and unknown fields, wrong types, NaN/inf, huge, deep, empty."""
    leaf = st.one_of(st.integers(-2**70, 2**70), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8),
                     st.none(), st.booleans())
    entry = st.one_of(leaf, st.dictionaries(st.sampled_from(["object", "task", "invocation", "at_await", "effect",
                                                             "at_ms", "ms", "attempt", "zzz"]), leaf, max_size=4))
    value = st.one_of(leaf, st.lists(entry, max_size=4), st.integers(5, 60).map(lambda d: json.loads(deep(d))))
    return st.dictionaries(st.sampled_from(PLAN_FIELDS), value, max_size=4)


def plan_file_bytes() -> st.SearchStrategy[tuple[str, bytes]]:
    """(suffix, bytes) of a fault plan file: JSON/TOML text of a hostile plan, or binary, UTF-16, deep, empty."""
    as_json = plan_dict().map(lambda d: (".json", json.dumps(d).encode()))
    raw = st.sampled_from([
        (".json", b"\x00\xff\xfe garbage"), (".json", '{"handler_throws": [1]}'.encode("utf-16")),
        (".json", deep(50_000).encode()), (".json", b""), (".toml", b"handler_throws = [" * 3000),
        (".toml", b"handler_throws = [nan]"), (".toml", b"[[crashes]]\ntask = 5\n"), (".json", b"[1, 2]"),
        (".json", b'{"handler_throws": [1], "handler_throws": [2]}'), (".txt", b"{}"),
        (".json", b'{"handler_throws": [1e999]}'), (".toml", "\u202e = 1".encode()),
    ])
    return st.one_of(as_json, raw, st.binary(max_size=200).map(lambda b: (".json", b)))
