"""The runtime's event buffer: one flat list, seven values per event, no object per event.

An event is ``t_ms, host code, kind, scheduled_ms, prev_scheduled_ms, retry_count, detail``;
its ``seq`` is its position. A host code indexes ``labels`` and ``namespaces``, so a million
buffered events hold ints and shared strings until they leave as Arrow dictionary columns.
``detail`` is None or JSON text, serialised as the event is logged, so no event holds an object
for the garbage collector to walk and the column goes to Arrow as it is.

Two hot kinds are logged *packed*, their detail's one number in a column they leave empty:
every delivery logs a ``fire`` and most end with a ``handler_ok``, and formatting their text
cost more than the rest of logging them. A packed event's host code is stored as
``~code`` (negative; an unpacked one is a code >= 0 or None), ``prev_scheduled_ms`` holds the
number and ``detail`` is None. They are rendered on the way out, the same text the journal always
held (``render``): by the journal's ``events`` view as it is read (``ROWS_SCHEMA``, the file keeps
them packed), in SQL at the insert into a journal of the older layout (``PACKED_SQL``), in Arrow for
``sim.events()`` (``render_packed``) and in Python for ``sim.rows`` (``EventBatch``):

- ``fire``: the attempt number ``n``; detail ``{"attempt":n,"late_ms":t_ms - scheduled_ms}``
- ``handler_ok``: the next alarm ``next`` (or None); detail ``{"next_ms":next}`` (``null``)

Both have ``prev_scheduled_ms`` NULL once rendered. Nothing outside this module, the journal's
``event_rows`` table and the two places that log them (``Simulation.deliver`` and ``_alarm_done``)
sees a packed event.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["EventRow", "EventBuffer", "EventBatch", "WIDTH", "PACKED_SQL", "ROWS_TABLE", "ROWS_SCHEMA", "dump",
           "direction", "arm_detail", "render", "render_packed"]

WIDTH = 7  # values per event in the flat list


class EventRow(NamedTuple):
    """One journaled event, as the checkers read it: the journal's columns (less ``run_id``), with
    ``detail`` parsed (a dict, or None). Every reader and writer of event rows uses this one shape."""

    seq: int
    t_ms: int
    namespace: str | None
    object_id: str | None
    kind: str
    scheduled_ms: int | None
    prev_scheduled_ms: int | None
    retry_count: int | None
    detail: dict | None


_row = tuple.__new__  # EventRow(...) without NamedTuple's Python-level __new__: rows() makes one per event

try:  # orjson is ~10x faster than json for the many small detail dicts of a big run
    import orjson

    def dump(detail: Any) -> str | None:
        if detail is None:
            return None
        try:
            return orjson.dumps(detail, default=str, option=orjson.OPT_NON_STR_KEYS).decode()
        except TypeError:  # a lone surrogate ("\ud800", from an error message?) or an int past 64 bits:
            # the event is kept, the value shown as text ("\\ud800"), rather than the flush failing
            return orjson.dumps(_plain(detail), default=lambda o: _plain(_text(o)), option=orjson.OPT_NON_STR_KEYS).decode()

    _loads = orjson.loads

except ImportError:  # pragma: no cover - orjson is a declared dependency
    _encode = json.JSONEncoder(separators=(",", ":"), default=str).encode

    def dump(detail: Any) -> str | None:
        return None if detail is None else _encode(detail)

    _loads = json.loads


def _text(value: Any) -> str:
    """``str(value)``, or what stands for it when its ``__str__`` raises (an object of the user's in a detail)."""
    try:
        return str(value)
    except Exception:  # noqa: BLE001 - the user's own __str__: the event is kept, its value shown as a stand-in
        return f"<an object of class {type(value).__name__} whose text cannot be read>"


def _plain(value: Any) -> Any:
    """``value`` with text JSON cannot carry made visible: lone surrogates backslash-escaped, huge ints as text."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, int) and not isinstance(value, bool):
        return value if -(2**63) <= value < 2**64 else str(value)
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def direction(prev: int | None, at: int | None) -> str:
    """An arm against the alarm it replaces: ``new`` (there was none), ``earlier``, ``later`` or ``same``."""
    if prev is None or at is None:
        return "new"
    return "earlier" if at < prev else "later" if at > prev else "same"


_ARM_DETAILS: dict[tuple[str, str, bool], str] = {}


def arm_detail(prev: int | None, at: int, cause: str, in_alarm: bool = False) -> str:
    """An arm's detail as JSON text, ``{"direction": ..., "cause": ...}``, made once per key. A user's
    arm while the object's ``alarm()`` runs (a re-arm, queued after the running alarm) adds
    ``"in_alarm": true``: the timeline draws it as a re-arm, not as an ordinary arm or move."""
    # direction(prev, at), inlined: every committed set_alarm comes through here
    key = ("new" if prev is None else "earlier" if at < prev else "later" if at > prev else "same", cause, in_alarm)
    text = _ARM_DETAILS.get(key)
    if text is None:
        fields: dict[str, Any] = {"direction": key[0], "cause": cause}
        if in_alarm:
            fields["in_alarm"] = True
        text = _ARM_DETAILS[key] = dump(fields)
    return text


def render(kind: str, t: int, scheduled: int, number: int | None) -> str:
    """A packed event's detail as the journal holds it (see the module docstring)."""
    if kind == "fire":
        return f'{{"attempt":{number},"late_ms":{t - scheduled}}}'
    return '{"next_ms":null}' if number is None else f'{{"next_ms":{number}}}'


# render() in SQL, for a table from EventBatch.to_arrow(packed=True): the journal's columns, in order
PACKED_SQL = """run_id, seq, t_ms, namespace, object_id, kind, scheduled_ms,
    CASE WHEN packed THEN NULL ELSE prev_scheduled_ms END AS prev_scheduled_ms, retry_count,
    CASE WHEN NOT packed THEN detail
         WHEN kind = 'fire' THEN '{"attempt":' || prev_scheduled_ms || ',"late_ms":' || (t_ms - scheduled_ms) || '}'
         ELSE coalesce('{"next_ms":' || prev_scheduled_ms || '}', '{"next_ms":null}') END AS detail"""


# The journal's packed layout (``Journal``): the rows as buffered, a packed event keeping its number
# and no text, in ``event_rows``; ``events`` is a view rendering them with PACKED_SQL as they are
# read. The insert then writes no text for the hot kinds at all (bench_core.py benchmark 2).
ROWS_TABLE = "event_rows"
ROWS_SCHEMA = f"""CREATE TABLE {ROWS_TABLE} (
    run_id INTEGER, seq BIGINT, t_ms BIGINT, namespace TEXT, object_id TEXT, kind TEXT,
    scheduled_ms BIGINT, prev_scheduled_ms BIGINT, retry_count INTEGER, detail TEXT, packed BOOLEAN NOT NULL
);
CREATE VIEW events AS SELECT {PACKED_SQL} FROM {ROWS_TABLE};"""


def render_packed(table: pa.Table) -> pa.Table:
    """``render()`` in Arrow, column by column on the packed rows only, for a table from
    ``EventBatch.to_arrow(packed=True)``: the same table with the ``packed`` column dropped."""
    flags = table.column("packed").combine_chunks()
    kinds, t, sched, prev, detail = (table.column(c).combine_chunks()
                                     for c in ("kind", "t_ms", "scheduled_ms", "prev_scheduled_ms", "detail"))
    if pa.types.is_dictionary(kinds.type):
        kinds = kinds.dictionary_decode()
    fires = pc.and_(flags, pc.equal(kinds, "fire"))
    oks = pc.and_not(flags, fires)
    at = pc.indices_nonzero(fires)
    text = pc.binary_join_element_wise('{"attempt":', pc.cast(pc.take(prev, at), pa.string()), ',"late_ms":',
                                       pc.cast(pc.subtract(pc.take(t, at), pc.take(sched, at)), pa.string()), "}", "")
    detail = pc.replace_with_mask(detail, fires, text)
    text = pc.binary_join_element_wise('{"next_ms":', pc.cast(pc.filter(prev, oks), pa.string()), "}", "")
    detail = pc.replace_with_mask(detail, oks, pc.coalesce(text, '{"next_ms":null}'))
    prev = pc.if_else(flags, pa.nulls(len(prev), pa.int64()), prev)
    names = table.column_names
    table = table.set_column(names.index("prev_scheduled_ms"), "prev_scheduled_ms", prev)
    table = table.set_column(names.index("detail"), "detail", detail)
    return table.drop_columns(["packed"])


class EventBuffer:
    """Where ``Simulation.log`` appends; ``take()`` hands the buffered events over as a batch."""

    def __init__(self) -> None:
        self.data: list = []  # the runtime appends WIDTH values per event straight onto this list
        self.seq0 = 1  # seq of the first buffered event
        self.namespaces: list[str] = []  # by host code
        self.labels: list[str] = []
        self._dicts: tuple[int, pa.Array, pa.Array] | None = None

    def register(self, namespace: str, label: str) -> int:
        """A code for one object, to log in place of its names."""
        self.namespaces.append(namespace)
        self.labels.append(label)
        return len(self.labels) - 1

    def __len__(self) -> int:
        return len(self.data) // WIDTH

    def batch(self) -> EventBatch:
        """The buffered events (a copy; the buffer keeps them)."""
        return EventBatch(self, self.data[:], self.seq0)

    def take(self) -> EventBatch:
        """The buffered events; the buffer is empty afterwards and numbering continues."""
        out = self.batch()
        self.data.clear()  # in place: the runtime holds this list
        self.seq0 += len(out)
        return out

    def dictionaries(self) -> tuple[pa.Array, pa.Array]:
        """Namespaces and labels by host code, as Arrow arrays (rebuilt only when objects were added)."""
        n = len(self.labels)
        if self._dicts is None or self._dicts[0] != n:
            self._dicts = (n, pa.array(self.namespaces, pa.string()), pa.array(self.labels, pa.string()))
        return self._dicts[1], self._dicts[2]


class EventBatch:
    """Events taken from a buffer: to Arrow for the journal, or to row tuples for the checkers."""

    def __init__(self, buffer: EventBuffer, data: list, seq0: int) -> None:
        self.buffer = buffer
        self.data = data
        self.seq0 = seq0

    def __len__(self) -> int:
        return len(self.data) // WIDTH

    def to_arrow(self, run_id: int | None, schema: pa.Schema, packed: bool = False) -> pa.Table:
        """Columns in ``schema``'s order; namespace, object_id and kind stay dictionary-encoded.

        Packed events are rendered (``render_packed``); with ``packed=True`` they stay packed, flagged
        in one more column, ``packed``, for the journal's insert to render in SQL (``PACKED_SQL``) on
        its own thread: the simulation thread then builds no text for them at all."""
        d, n = self.data, len(self)
        namespaces, labels = self.buffer.dictionaries()
        hosts = pa.array(d[1::WIDTH], pa.int32())
        flags = pc.fill_null(pc.less(hosts, 0), False)
        flagged = pc.any(flags).as_py()
        if flagged:
            hosts = pc.if_else(flags, pc.bit_wise_not(hosts), hosts)
        run = np.full(n, -1 if run_id is None else run_id, np.int32)
        arrays = [
            pa.array(run, mask=np.full(n, run_id is None)),
            pa.array(np.arange(self.seq0, self.seq0 + n, dtype=np.int64)),
            pa.array(d[0::WIDTH], pa.int64()),
            pa.DictionaryArray.from_arrays(hosts, namespaces),
            pa.DictionaryArray.from_arrays(hosts, labels),
            pa.array(d[2::WIDTH], pa.string()).dictionary_encode(),
            pa.array(d[3::WIDTH], pa.int64()),
            pa.array(d[4::WIDTH], pa.int64()),
            pa.array(d[5::WIDTH], pa.int32()),
            pa.array(d[6::WIDTH], pa.string()),
        ]
        table = pa.Table.from_arrays(arrays, names=schema.names)
        if not flagged:
            return table
        table = table.append_column("packed", flags)
        return table if packed else render_packed(table)

    def plain(self, run_id: int | None) -> list[tuple]:
        """The events as plain tuples in the journal's column order (``run_id`` first), detail as text:
        what a journal keeps of a batch that could not become Arrow."""
        namespaces, labels, d, out = self.buffer.namespaces, self.buffer.labels, self.data, []
        seq = self.seq0
        for i in range(0, len(d), WIDTH):
            t, h, kind, sched, prev, retry, detail = d[i:i + WIDTH]
            if h is not None and h < 0:  # packed
                h, detail, prev = ~h, render(kind, t, sched, prev), None
            out.append((run_id, seq, t, None if h is None else namespaces[h], None if h is None else labels[h],
                        kind, sched, prev, retry, detail))
            seq += 1
        return out

    def rows(self) -> list[EventRow]:
        """The events as ``EventRow`` values, detail parsed."""
        namespaces, labels = self.buffer.namespaces, self.buffer.labels
        d, loads, out = self.data, _loads, []
        seq = self.seq0
        for i in range(0, len(d), WIDTH):
            t, h, kind, sched, prev, retry, detail = d[i:i + WIDTH]
            if detail.__class__ is str:
                detail = loads(detail)
            elif h is not None and h < 0:  # packed: render()'s text, parsed
                h = ~h
                detail = {"attempt": prev, "late_ms": t - sched} if kind == "fire" else {"next_ms": prev}
                prev = None
            if h is None:
                out.append(_row(EventRow, (seq, t, None, None, kind, sched, prev, retry, detail)))
            else:
                out.append(_row(EventRow, (seq, t, namespaces[h], labels[h], kind, sched, prev, retry, detail)))
            seq += 1
        return out
