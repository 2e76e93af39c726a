"""Helpers for the hostile tests of import, record and export --format perfetto.

``run_cli`` runs ``alarmkit.cli.main`` in this process (fast enough for hundreds of generated
inputs) in a folder, capturing what reaches the terminal; ``assert_clean`` states what every
answer must be: exit 0, or exit 2 with one line ``alarmkit: error: ...``; no traceback; no
control or bidi character on the terminal. ``checksums`` fingerprints a folder so a test can say
that no file alarmkit did not write has changed. ``trace_bytes`` is the Hypothesis strategy for
trace files: well-formed records of the three formats with hostile values, duplicates, binary,
other encodings, deep nesting, NaN and infinities, huge numbers, unknown outcomes.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import unicodedata
from pathlib import Path

from hypothesis import strategies as st

__all__ = ["run_cli", "assert_clean", "checksums", "trace_bytes", "children", "SETTINGS"]

SETTINGS = dict(deadline=None, derandomize=True, database=None)  # a fixed seed: the same inputs every run


def run_cli(argv: list[str], cwd: Path) -> tuple[int, str, str]:
    from alarmkit.cli import main

    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as e:  # argparse's usage errors
                code = e.code if isinstance(e.code, int) else 2
    finally:
        os.chdir(old)
    return code, out.getvalue(), err.getvalue()


def _bad_chars(text: str) -> list[str]:
    return [repr(c) for c in text if c != "\n" and (unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs", "Co"))]


def assert_clean(code: int, out: str, err: str) -> None:
    assert code in (0, 2), (code, out[-500:], err[-500:])
    assert "Traceback" not in err and "Traceback" not in out, err
    if code == 2:
        lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith(("usage:", " ", "alarmkit: note: "))]
        assert len(lines) == 1 and lines[0].startswith("alarmkit: error: "), err
    assert not _bad_chars(out) and not _bad_chars(err), (_bad_chars(out), _bad_chars(err))


def checksums(folder: Path, skip: tuple[str, ...] = ()) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())
            if p.is_file() and p.name not in skip}


def children() -> set[int]:
    import psutil

    return {c.pid for c in psutil.Process().children(recursive=True)}


# ---------------------------------------------------------------- strategies

T0 = 1_800_000_000_000
_nasty_text = st.text(alphabet=st.sampled_from(list("ab-_ \x00\x1b\x07\u202e\u2028é漢\n\t\"\\{}[]")), max_size=12)
_numbers = st.one_of(
    st.integers(min_value=T0 - 10**6, max_value=T0 + 10**7),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.just(8.64e15), st.just(-1), st.just(0), st.just(2**63), st.just(1e308),
)
_valid_time = st.integers(min_value=T0, max_value=T0 + 10**6)
_hostile_time = st.one_of(_numbers, st.none(), _nasty_text, st.just("2026-12-01T08:14:12.044Z"), st.just("not a date"),
                          st.booleans(), st.lists(st.integers(), max_size=2), st.just({"t": 1}))
_time = st.one_of(_valid_time, _valid_time, _valid_time, _valid_time, _valid_time, _hostile_time)  # mostly readable
_outcome = st.one_of(st.sampled_from(["ok", "exception", "exceededCpu", "canceled", "unknown", "weird", "ok", "exception"]),
                     st.sampled_from(["ok", "exception"]), _nasty_text, st.integers(), st.none())
_anything = st.recursive(st.one_of(st.none(), st.booleans(), _numbers, _nasty_text),
                         lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                 st.dictionaries(_nasty_text, inner, max_size=3)), max_leaves=8)


def _line(draw) -> dict:
    return {"alarmkit": 1, "ev": draw(st.sampled_from(["arm", "disarm", "get", "call", "effect", "alarm_start",
                                                       "alarm_end", "alarm_throw", "construct", "bogus"])),
            "obj": draw(st.one_of(_nasty_text, st.integers(), st.none())), "t": draw(_time), "at": draw(_time),
            "retryCount": draw(st.one_of(st.integers(-3, 10), _nasty_text, st.none())),
            "key": draw(_anything), "method": draw(_anything)}


@st.composite
def tail_record(draw) -> dict:
    log = draw(st.one_of(st.builds(lambda: None), st.just("plain text")))
    logs = [{"timestamp": draw(_time), "level": "log", "message": [json.dumps(_line(draw)) if draw(st.booleans())
                                                                  else _line(draw)]}
            for _ in range(draw(st.integers(0, 2)))]
    if log:
        logs.append({"timestamp": T0, "level": "log", "message": [log]})
    rec = {"eventTimestamp": draw(_time), "outcome": draw(_outcome),
           "event": draw(st.one_of(st.fixed_dictionaries({"scheduledTime": _time}), st.just({"rpcMethod": "go"}),
                                   _anything)),
           "durableObjectId": draw(st.one_of(st.none(), _nasty_text)), "entrypoint": draw(st.one_of(st.none(), _nasty_text)),
           "logs": draw(st.one_of(st.just(logs), st.just(logs), st.just(logs), _anything)),
           "exceptions": draw(st.one_of(st.just([]), st.just([]), st.just([]), st.just(5), _anything,
                                        st.just([{"timestamp": T0, "name": "Error", "message": "boom"}]))),
           "wallTime": draw(st.one_of(st.integers(0, 500), st.integers(0, 500), st.none(), _numbers, _nasty_text))}
    return rec


@st.composite
def logpush_record(draw) -> dict:
    return {"EventType": draw(st.one_of(st.just("alarm"), _nasty_text)), "EventTimestampMs": draw(_time),
            "Outcome": draw(_outcome), "Entrypoint": draw(st.one_of(st.just("Ledger"), _nasty_text)),
            "Event": draw(st.one_of(st.fixed_dictionaries({"scheduledTime": _time}), _anything)),
            "Exceptions": draw(st.one_of(st.just([]), _anything)), "Logs": draw(st.one_of(st.just([]), _anything)),
            "WallTimeMs": draw(st.one_of(_numbers, st.none(), _nasty_text))}


@st.composite
def stream_record(draw) -> dict:
    typ = draw(st.sampled_from(["onset", "outcome", "log", "exception", "spanOpen", "attributes", "other"]))
    ev: dict = {"type": typ}
    if typ == "onset":
        ev["info"] = draw(st.one_of(st.fixed_dictionaries({"type": st.just("alarm"), "scheduledTime": _time}), _anything))
    elif typ == "attributes":
        ev["info"] = draw(st.one_of(st.lists(st.fixed_dictionaries({"name": st.just(
            "cloudflare.durable_object.alarm.scheduled_time"), "value": _time}), max_size=2), _anything))
    elif typ == "spanOpen":
        ev["name"] = "durable_object_storage_setAlarm"
        ev["spanId"] = draw(st.one_of(_nasty_text, _anything))
    else:
        ev["outcome"] = draw(_outcome)
        ev["message"] = draw(_anything)
    return {"invocationId": draw(st.sampled_from(["i1", "i2"])), "sequence": draw(st.one_of(st.integers(0, 9), _anything)),
            "timestamp": draw(_time), "spanContext": draw(st.one_of(st.just({"spanId": "s"}), _anything)), "event": ev}


def _encode(draw, records: list) -> bytes:
    shape = draw(st.sampled_from(["lines", "array", "line-arrays"]))
    if shape == "lines":
        text = "".join(json.dumps(r, ensure_ascii=draw(st.booleans())) + "\n" for r in records)
    elif shape == "array":
        text = json.dumps(records)
    else:
        text = "".join(json.dumps(records[i:i + 2]) + "\n" for i in range(0, len(records), 2))
    data = text.encode("utf-8")
    damage = draw(st.sampled_from(["none"] * 12 + ["nan", "infinity", "latin1", "utf16", "truncate", "binary", "bom"]))
    if damage == "nan":
        data = data.replace(b"1800000", b"NaN", 1) if b"1800000" in data else b'{"eventTimestamp": NaN}\n'
    elif damage == "infinity":
        data = data + b'{"eventTimestamp": -Infinity}\n'
    elif damage == "latin1":
        data = data + '{"eventTimestamp": 1, "outcome": "caf\u00e9"}\n'.encode("latin-1")
    elif damage == "utf16":
        data = text.encode("utf-16")
    elif damage == "truncate":
        data = data[: max(1, len(data) // 2)]
    elif damage == "binary":
        data = bytes(draw(st.lists(st.integers(0, 255), min_size=1, max_size=64)))
    elif damage == "bom":
        data = b"\xef\xbb\xbf" + data
    return data


@st.composite
def clean_tail_record(draw) -> dict:
    """A readable TraceItem (hostile only in its names, outcomes and repeats): the import must succeed."""
    t = draw(_valid_time)
    obj = draw(_nasty_text)
    line = json.dumps({"alarmkit": 1, "ev": draw(st.sampled_from(["arm", "effect", "call", "alarm_start"])), "obj": obj,
                       "t": t, "at": t + draw(st.integers(0, 10**5)), "key": draw(_nasty_text)})
    return {"eventTimestamp": t, "outcome": draw(_outcome.filter(lambda o: isinstance(o, (str, type(None))))),
            "event": draw(st.one_of(st.just({"scheduledTime": t - draw(st.integers(0, 5000))}), st.just({"rpcMethod": "go"}))),
            "durableObjectId": draw(st.one_of(st.none(), _nasty_text)), "entrypoint": draw(st.one_of(st.none(), _nasty_text)),
            "logs": [{"timestamp": t, "level": "log", "message": [line]}], "exceptions": [], "wallTime": 0}


@st.composite
def trace_bytes(draw) -> bytes:
    """A trace file: 0-6 records of one format (sometimes duplicated), encoded and possibly damaged."""
    kind = draw(st.sampled_from(["clean", "clean", "tail", "logpush", "stream", "mixed", "deep", "scalar"]))
    if kind == "clean":
        records = draw(st.lists(clean_tail_record(), min_size=1, max_size=6))
        if draw(st.booleans()):
            records = records + records  # delivered twice
        text = "".join(json.dumps(r, ensure_ascii=draw(st.booleans())) + "\n" for r in records)
        return text.encode("utf-8")
    if kind == "deep":
        n = draw(st.integers(60, 5000))
        return (b"[" * n + b"]" * n) if draw(st.booleans()) else (b'{"a":' * n + b"1" + b"}" * n)
    if kind == "scalar":
        return draw(st.sampled_from([b"5\n", b'"text"\n', b"null\n", b"[1, 2]\n", b"\n\n", b"", b"[]", b"{}\n"]))
    strat = {"tail": tail_record(), "logpush": logpush_record(), "stream": stream_record(),
             "mixed": st.one_of(tail_record(), logpush_record())}[kind]
    records = draw(st.lists(strat, max_size=6))
    if records and draw(st.booleans()):
        records = records + records[: draw(st.integers(1, len(records)))]  # delivered twice (at least once)
    return _encode(draw, records)
