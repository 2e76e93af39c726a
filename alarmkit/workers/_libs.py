"""Where a worker's library schedules are read: the library's own tables, at each statement that changes them.

A JavaScript object's ``sql.exec`` that writes a library's table (``_library.TABLES``: the Agents SDK's
``cf_agents_jobs`` / ``cf_agents_schedules``, Actors' ``_actor_alarms``) makes the object's tables be
read from its database at once, and the difference from the last read becomes journal rows
(``alarmkit.journal.schedule_rows``, the one builder): a schedule made and cancelled in one turn shows
both. A console line saying a library's callback failed is kept for the next difference to explain
(the library writes it before it deletes the row). The read is the turn's own view, before its commit,
as the library's next read is.
"""

from __future__ import annotations

from typing import Any

from ..journal import Schedule, library_failure, mentions_library_table, read_schedules, schedule_rows

__all__ = ["LibraryWatch"]

_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLAC", "CREATE", "DROP T", "ALTER ", "UPSERT")


class LibraryWatch:
    """The schedules each object's libraries kept at the last read, and the failures said since."""

    def __init__(self, sim: Any) -> None:
        self.sim = sim
        self.known: dict[Any, dict[str, Schedule]] = {}  # host -> schedules by id (id prefixed by table)
        self.failures: dict[Any, list[tuple[str, int | None, str]]] = {}

    def sql(self, host: Any, query: str) -> None:
        """After a statement ran: one that changes a library's table is read into the journal now."""
        if mentions_library_table(query) and query.lstrip()[:6].upper() in _WRITES:
            self.scan(host)

    def console(self, host: Any, text: str) -> None:
        f = library_failure(text) if "callback" in text else None
        if f is not None:
            self.failures.setdefault(host, []).append(f)

    def scan(self, host: Any) -> None:
        """Read ``host``'s library tables and journal what changed since the last read."""
        now = read_schedules(host.db.conn)
        before = self.known.get(host, {})
        failures = self.failures.get(host, [])
        for kind, sched, prev, retry, detail in schedule_rows(before, now, failures, self.sim.now):
            self.sim.log(kind, host, sched, prev, retry, detail)
        self.known[host] = now
        del failures[:-20]  # a failure line no schedule left after is kept a while, not for ever
