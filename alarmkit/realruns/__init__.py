"""Real alarms in the journal: Perfetto export, trace-event import, recording a Durable Object on workerd."""

from .perfetto import export_perfetto, trace_events

__all__ = ["export_perfetto", "trace_events"]
