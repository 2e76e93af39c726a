"""Real alarms in the journal: Perfetto export, trace-event import, recording a Durable Object on workerd."""

from .compare import differences, export_comparison
from .importer import ImportResult, import_file
from .perfetto import export_perfetto, trace_events
from .record import RecordResult, record
from ..viz import since_start

__all__ = ["export_perfetto", "trace_events", "import_file", "ImportResult", "record", "RecordResult", "differences",
           "export_comparison", "fixture", "since_start", "FIXTURES", "SCENARIOS"]

from pathlib import Path as _Path

FIXTURES = _Path(__file__).resolve().parents[2] / "data" / "real-runs"
SCENARIOS = ("lease-normal", "lease-crash-after-effect", "lease-exhaustion")


def fixture(name: str, fmt: str = "tail") -> _Path:
    """A trace recorded on real workerd and committed under ``data/real-runs`` (source tree only).

    ``name``: one of ``SCENARIOS``; ``fmt``: ``tail`` (TraceItems), ``stream`` (streaming tail
    events) or ``logpush`` (converted from the tail events, not recorded).
    """
    from ..errors import AlarmkitError

    if name not in SCENARIOS:
        raise AlarmkitError(f"no recorded run {name!r}; recorded: {list(SCENARIOS)}")
    if fmt not in ("tail", "stream", "logpush"):
        raise AlarmkitError(f"fmt must be 'tail', 'stream' or 'logpush', got {fmt!r}")
    path = FIXTURES / name / f"{fmt}.jsonl"
    if not path.is_file():
        raise AlarmkitError(f"{path} is not here: the recorded runs ship with the source tree, not the wheel; "
                            "use a checkout of alarmkit")
    return path
