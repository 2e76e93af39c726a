"""``diff(a, b)``: two runs aligned in DuckDB, down to the first divergence."""

from __future__ import annotations

import json
from typing import Any

import duckdb
import pandas as pd

from ..errors import AlarmkitError, InvalidValue
from . import _sql
from ._checks import compare_checks
from ._inputs import Side, side_of
from ._result import Divergence, RunDiff, TABLE_COLUMNS

__all__ = ["diff", "LANE_LIMIT", "CHECK_LIMIT"]

ALIGNMENTS = _sql.ALIGNMENTS

# The figure draws every aligned event up to this many pairs; above, only the differences (it says so).
LANE_LIMIT = 100_000
# ak.check walks events in Python (~1 s per 100,000); above this a diff says it did not check.
CHECK_LIMIT = 200_000
_CHAIN_KINDS = ("arm", "disarm", "fire", "fire_skipped", "handler_ok", "handler_error", "retry_scheduled",
                "abandoned", "revive", "effect", "crash", "fault", "restart", "construct", "evict", "aborted")
_CHAIN_MAX = 30


def _align_arg(align: Any, tolerance_ms: Any) -> tuple[str, int]:
    if tolerance_ms is not None and (isinstance(tolerance_ms, bool) or not isinstance(tolerance_ms, int)
                                     or tolerance_ms < 0):
        raise InvalidValue(f"tolerance_ms must be an int >= 0 (milliseconds), got {tolerance_ms!r}")
    if isinstance(align, int) and not isinstance(align, bool):
        if align < 0 or align > 86_400_000:
            raise InvalidValue(f"align as a tolerance must be 0..86400000 ms, got {align}; or pass 'exact', "
                               "'clock_start' or 'first_request'")
        if tolerance_ms is not None and tolerance_ms != align:
            raise InvalidValue(f"align={align} is already a tolerance; drop tolerance_ms={tolerance_ms}")
        return "exact", align
    if isinstance(align, str) and align in ALIGNMENTS:
        return align, tolerance_ms or 0
    raise InvalidValue(f"align must be 'exact', 'clock_start', 'first_request' or a tolerance in ms (an int >= 0), "
                       f"got {align!r}")


def diff(a: Any, b: Any, align: str | int = "exact", *, journal: Any = None, tolerance_ms: int | None = None,
         names: tuple[str, str] = ("A", "B"), check: bool = True, kinds: Any = None) -> RunDiff:
    """Diff run ``a`` against run ``b``; a ``RunDiff``.

    A run is a ``RunResult``, a run id (read from ``journal``), a ``(Journal, run_id)`` pair (two
    journals), an ``ImportResult`` / ``RecordResult`` of a real run, or an events DataFrame.
    ``align``: ``"exact"`` (the default: times as journaled, so a run shifted as a whole differs), an
    int (the same, with that many ms of tolerance), ``"clock_start"`` (each run counted from its
    ``clock_start``, a ``Simulation(start_ms=...)``) or ``"first_request"`` (each run counted from its
    first call, as ``plots.compare`` aligns a real run); ``tolerance_ms`` sets the tolerance of the
    last two. Every paired event's time is compared, not only the alarm's.
    ``check=False`` skips the invariant checks (and the result says so); ``kinds`` compares only those
    kinds of ``ALIGNED_KINDS`` (say, the ones a trace can hold; the notes name the rest). Raises ``AlarmkitError``
    (``InvalidValue`` for a bad argument) naming what is accepted.
    """
    mode, tol = _align_arg(align, tolerance_ms)
    if (not isinstance(names, (tuple, list)) or len(names) != 2 or not all(isinstance(n, str) and n for n in names)
            or names[0] == names[1]):
        raise InvalidValue(f"names must be two different non-empty strings, got {names!r}")
    names = (str(names[0]), str(names[1]))
    if kinds is None:
        kinds = _sql.ALIGNED_KINDS
    else:
        if isinstance(kinds, str) or not all(isinstance(k, str) for k in kinds):
            raise InvalidValue(f"kinds must be a list of kinds, got {kinds!r}; known: {list(_sql.ALIGNED_KINDS)}")
        kinds = tuple(kinds)
        unknown = [k for k in kinds if k not in _sql.ALIGNED_KINDS]
        if unknown or not kinds:
            raise InvalidValue(f"kinds {unknown or kinds!r} are not compared by diff; "
                               f"pick from {list(_sql.ALIGNED_KINDS)}")
    sides = {"a": side_of(a, journal, names[0]), "b": side_of(b, journal, names[1])}
    con = duckdb.connect()
    try:
        return _diff(con, sides, mode, tol, names, check, kinds)
    finally:
        con.close()


def _diff(con: duckdb.DuckDBPyConnection, sides: dict[str, Side], mode: str, tol: int, names: tuple[str, str],
          check: bool, kinds: tuple[str, ...]) -> RunDiff:
    for s, side in sides.items():
        con.register(f"ev_{s}", side.events)
    bases = {s: _sql.base_ms(con, s, mode) for s in sides}
    t0 = {s: bases[s][0] for s in sides}
    if mode != "first_request":
        _sql.check_bases({s: bases[s][1] for s in sides}, t0, {"a": names[0], "b": names[1]})
    by_order = _sql.pair_objects(con)
    for s in sides:
        _sql.key_events(con, s, t0[s], kinds)
    _sql.join_pairs(con, tol)
    matched, total, largest, shifts, shift, paired = con.execute("""
        SELECT count(*) FILTER (WHERE status = 'same'), count(*), max(abs(delta)) FILTER (WHERE status = 'same'),
               count(DISTINCT delta), min(delta), count(delta) FROM pairs""").fetchone()
    # every event both runs hold happens one same time apart: the whole run is shifted
    shift = int(shift) if shifts == 1 and paired >= 2 and shift else None
    rows = con.execute(f"""
        SELECT {_sql.PAIR_COLUMNS} FROM pairs p JOIN objmap m USING (pid) WHERE p.status <> 'same'
        ORDER BY coalesce(least(p.t_a, p.t_b), p.t_a, p.t_b), coalesce(p.seq_b, p.seq_a), coalesce(p.seq_a, p.seq_b)
        """).df()
    lanes = None
    if total <= LANE_LIMIT:
        lanes = con.execute(f"SELECT {_sql.PAIR_COLUMNS} FROM pairs p JOIN objmap m USING (pid) "
                            "ORDER BY object, coalesce(p.t_a, p.t_b)").df()
    table = _table(rows)
    counts = _counts(_sql.per_object(con))
    notes = [n for n in [_setup_note(sides, names)] if n]
    notes += [f"objects paired by the order they first appear: {a} ({names[0]}) with {b} ({names[1]})"
              for a, b, _ in by_order]
    left = [k for k in _sql.ALIGNED_KINDS if k not in kinds]
    if left:
        notes.append(f"not compared (kinds= leaves them out): {', '.join(left)}")
    if lanes is None:
        notes.append(f"{total:,} aligned events: the figure draws the differences only (above {LANE_LIMIT:,})")
    n_events = (sides["a"].events.num_rows, sides["b"].events.num_rows)
    if not check:
        invariants, checked = _no_invariants(), False
        notes.append("invariants not checked (check=False): a difference there would not show")
    elif max(n_events) > CHECK_LIMIT:
        invariants, checked = _no_invariants(), False
        notes.append(f"invariants not checked: {max(n_events):,} events is above {CHECK_LIMIT:,}; run ak.check "
                     "on each run, or diff smaller runs")
    else:
        invariants, more = compare_checks(sides, con, names)
        checked = not any(n.startswith("invariants not checked") for n in more)
        notes += more
    first = _first(con, table, sides, t0, names)
    return RunDiff(names, mode, tol, int(matched), n_events, table, counts, invariants, first, by_order, notes,
                   checked, lanes, int(largest or 0), shift)


def _setup_note(sides: dict[str, Side], names: tuple[str, str]) -> str | None:
    """How the two runs were made differently (scenario, profile, seed, parameters), where both say:
    a difference the diff then shows may be the setup's, not the code's."""
    a, b = sides["a"].run, sides["b"].run
    parts = [f"{key} {a[key]} in {names[0]}, {b[key]} in {names[1]}" for key in ("scenario", "profile", "seed")
             if a.get(key) is not None and b.get(key) is not None and a[key] != b[key]]
    pa_, pb = a.get("params"), b.get("params")
    if (isinstance(pa_, dict) and isinstance(pb, dict) and not (sides["a"].real or sides["b"].real)
            and a.get("scenario") == b.get("scenario")):  # another scenario's parameters are other parameters
        changed = sorted(str(k) for k in set(pa_) | set(pb) if pa_.get(k) != pb.get(k))
        if changed:
            parts.append(f"parameters {', '.join(changed)} differ")
    return f"the runs were made differently: {'; '.join(parts)}" if parts else None


def _no_invariants() -> pd.DataFrame:
    from ._checks import INVARIANT_COLUMNS

    return pd.DataFrame(columns=INVARIANT_COLUMNS)


def _table(rows: pd.DataFrame) -> pd.DataFrame:
    out = pd.DataFrame({
        "object": rows["object"],
        "kind": [ka if kb is None or ka == kb else (kb if ka is None else f"{ka} → {kb}")
                 for ka, kb in zip(rows["kind_a"].astype(object).where(rows["kind_a"].notna(), None),
                                   rows["kind_b"].astype(object).where(rows["kind_b"].notna(), None))],
        "status": rows["status"],
        "what": [wa if isinstance(wa, str) else (wb if isinstance(wb, str) else "")
                 for wa, wb in zip(rows["what_a"], rows["what_b"])],
        "t_a": rows["t_a"].astype("Int64"), "t_b": rows["t_b"].astype("Int64"),
        "delta_ms": rows["delta"].astype("Int64"),
        "scheduled_a": rows["sched_a"].astype("Int64"), "scheduled_b": rows["sched_b"].astype("Int64"),
        "retry_count": rows["rc_a"].astype("Int64").fillna(rows["rc_b"].astype("Int64")),
        "late_a": rows["late_a"].astype("Int64"), "late_b": rows["late_b"].astype("Int64"),
        "seq_a": rows["seq_a"].astype("Int64"), "seq_b": rows["seq_b"].astype("Int64"),
        "obj_a": rows["obj_a"], "obj_b": rows["obj_b"], "cls": rows["cls"], "n": rows["n"].astype("Int64"),
    })
    return out.reset_index(drop=True)[TABLE_COLUMNS + ["obj_a", "obj_b", "cls", "n"]]


def _counts(df: pd.DataFrame) -> pd.DataFrame:
    for c in ("fires", "retries", "abandonments", "effects", "duplicates"):
        df[f"{c}_diff"] = df[f"{c}_b"] - df[f"{c}_a"]
    return df


_DIVERGES = ("only_a", "only_b", "changed")


def _first(con: duckdb.DuckDBPyConnection, table: pd.DataFrame, sides: dict[str, Side], t0: dict[str, int],
           names: tuple[str, str]) -> Divergence | None:
    hits = table.index[table["status"].isin(_DIVERGES)]
    if not len(hits):
        return None
    i = int(hits[0])
    r = table.loc[i]
    run = {"only_a": "a", "only_b": "b"}.get(r["status"], "both")
    t = int(r["t_a"] if run == "a" else r["t_b"] if run == "b" else min(r["t_a"], r["t_b"]))
    chain = {}
    objs = con.execute("SELECT a_obj, b_obj FROM objmap WHERE pair = ?", [str(r["object"])]).fetchone() or (None, None)
    for s, name, obj in zip(("a", "b"), names, objs):
        if obj is None:
            continue
        seq = r[f"seq_{s}"]
        chain[name] = _chain(con, s, str(obj), t0[s], t, None if pd.isna(seq) else int(seq))
    from ._summary import divergence_text

    kind = r["kind"]
    return Divergence(str(r["object"]), t, run, str(r["status"]), kind, divergence_text(r, names, chain), i, chain)


def _json(text: Any) -> Any:
    try:
        return json.loads(text) if isinstance(text, str) else {}
    except ValueError:
        return {}


def _chain(con: duckdb.DuckDBPyConnection, side: str, obj: str, t0: int, t: int, seq: int | None) -> pd.DataFrame:
    """The object's events up to the divergence, from the arm that set the alarm (the last new arm)."""
    kinds = ", ".join(f"'{k}'" for k in _CHAIN_KINDS)
    cut = f"seq <= {seq}" if seq is not None else f"t_ms - {int(t0)} <= {int(t)}"
    df = con.execute(f"""
        SELECT seq, t_ms - {int(t0)} AS t_ms, kind, scheduled_ms - {int(t0)} AS scheduled_ms, retry_count, detail
        FROM ev_{side} WHERE coalesce(object_id, '') = ? AND kind IN ({kinds}) AND {cut}
        ORDER BY seq DESC LIMIT 400""", [obj]).df().iloc[::-1].reset_index(drop=True)
    details = [_json(d) for d in df["detail"]]
    start = 0
    for i, (k, d) in enumerate(zip(df["kind"], details)):
        if k == "arm" and isinstance(d, dict) and d.get("direction") == "new":
            start = i
    out = df.iloc[start:].tail(_CHAIN_MAX).reset_index(drop=True)
    for c in ("scheduled_ms", "retry_count"):
        out[c] = out[c].astype("Int64")
    arms = out.loc[out["kind"].isin(["arm", "disarm"]), "seq"]
    if len(arms):  # whether user code set the alarm again later in the whole run, not just in the chain
        platform = ", ".join(f"'{c}'" for c in _sql.PLATFORM_CAUSES)
        out.attrs["later_arms"] = con.execute(f"""
            SELECT count(*) FROM ev_{side} WHERE coalesce(object_id, '') = ? AND kind = 'arm' AND seq > ?
              AND coalesce(json_extract_string(detail, '$.cause'), '') NOT IN ({platform})""",
                                              [obj, int(arms.iloc[-1])]).fetchone()[0]
    return out
