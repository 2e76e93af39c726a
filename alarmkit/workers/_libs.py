"""Where a worker's library schedules are read: the library's own tables, after each turn that touched them.

A JavaScript object's ``sql.exec`` that names a library's table (``_library.TABLES``: the Agents SDK's
``cf_agents_jobs`` / ``cf_agents_schedules``, Actors' ``_actor_alarms``), or a console line saying a
library's callback failed, marks its object; when the turn's report has been applied, each marked
object's tables are read from its database and the difference from the last read becomes journal
rows (``_library.schedule_rows``, the one builder). The read is the turn's own view, before its
commit, as the library's next read would be.
"""

from __future__ import annotations

from typing import Any

from ..journal import Schedule, library_failure, mentions_library_table, read_schedules, schedule_rows

__all__ = ["LibraryWatch"]


class LibraryWatch:
    """The schedules each object's libraries kept at the last read, and the failures said since."""

    def __init__(self, sim: Any) -> None:
        self.sim = sim
        self.known: dict[Any, dict[str, Schedule]] = {}  # host -> schedules by id (id prefixed by table)
        self.failures: dict[Any, list[tuple[str, int | None, str]]] = {}
        self.dirty: dict[Any, None] = {}

    def sql(self, host: Any, query: str) -> None:
        if mentions_library_table(query):
            self.dirty[host] = None

    def console(self, host: Any, text: str) -> None:
        f = library_failure(text) if "callback" in text else None
        if f is not None:
            self.failures.setdefault(host, []).append(f)
            self.dirty[host] = None

    def flush(self) -> None:
        """Read every marked object's tables and journal what changed."""
        if not self.dirty:
            return
        hosts, self.dirty = list(self.dirty), {}
        for host in hosts:
            if host._db is None:
                continue
            now = read_schedules(host.db.conn)
            before = self.known.get(host, {})
            failures = self.failures.get(host, [])
            for kind, sched, prev, retry, detail in schedule_rows(before, now, failures, self.sim.now):
                self.sim.log(kind, host, sched, prev, retry, detail)
            self.known[host] = now
            del failures[:-20]  # a failure line no schedule left after is kept a while, not for ever
