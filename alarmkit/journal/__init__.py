"""The journal: every event of every run, in DuckDB. The only bridge to the plots.

Events are buffered by the simulation and written here in batches through Arrow, never row
by row. ``events(run_id)`` and ``runs()`` return pandas DataFrames.

Readers read ``events``. A journal written since the packed layout stores its rows in
``event_rows`` as the simulation buffered them (the hot kinds' detail as one number, no text) and
``events`` is a view that renders them on read (``_events.ROWS_SCHEMA``); a journal that already
held events in an ``events`` table keeps that layout, and new events go into it rendered. A new
journal takes the packed layout at its first ``write_events`` or ``add_runs``; until then
``events`` is a plain table, so SQL that inserts into it directly still works.
"""

from ._events import PACKED_SQL, WIDTH, EventBatch, EventBuffer, EventRow, arm_detail, direction, dump, render_packed
from ._frames import BATCH_SIZE, EVENT_COLUMNS, EVENT_KINDS, check_frame, effect_idents, frame_rows, rows_to_frame
from ._journal import Journal, check_duckdb_file
from ._verdict import Finding, Verdict, verdict_of, verdict_of_events
from ._library import Schedule, library_schedules, mentions_library_table, read_schedules, schedule_rows
from ._library import library_failure
from ._kinds import CLASS_OF, DEATH, DUPLICATE, LIBRARY_KINDS, RUNTIME_KINDS, class_counts, custom_event, kind_class, kinds_of, run_counts

__all__ = [
    "Journal", "check_duckdb_file", "EVENT_COLUMNS", "EVENT_KINDS", "BATCH_SIZE", "EventRow", "rows_to_frame", "frame_rows", "check_frame",
    "effect_idents",  # what makes two effects one: duplicates in the timeline, the report and the verdict
    # the journal's rows and kinds, for the wings above (the runtime writes them, the figures read them)
    "EventBuffer", "EventBatch", "WIDTH", "dump", "direction", "arm_detail", "PACKED_SQL", "render_packed",
    "CLASS_OF", "DEATH", "DUPLICATE", "RUNTIME_KINDS", "class_counts", "custom_event", "kind_class", "kinds_of",
    "run_counts", "LIBRARY_KINDS", "library_schedules",
    # a library's own schedules, read from its tables (alarmkit.workers reads them after each turn)
    "Schedule", "library_failure", "mentions_library_table", "read_schedules", "schedule_rows", "Verdict", "Finding", "verdict_of", "verdict_of_events",
]

from .._public import publish as _publish  # noqa: E402

_publish("alarmkit.journal", globals(), __all__)
