"""Explicit transactions: ``transaction_sync(fn)`` and ``await transaction(fn)``, one rule for both hosts.

An explicit transaction is a SQLite SAVEPOINT inside the turn's implicit transaction, plus the alarm the
object had staged when it began: rolling back undoes the rows, the KV pairs *and* the alarm set or deleted
inside it (workerd: the alarm is part of the SQLite-backed object's storage, ``_cf_ALARM``-like metadata in
the same database; probe ``tx_throw`` on workerd 1.20261117.1: a key put and an alarm set in a transaction
whose body throws are both gone, and the alarm never fires). Committing releases the savepoint: its writes
join the turn and commit with it. Source: cloudflare/workerd ``src/workerd/api/actor-state.c++``
(``transactionSync``: ``SAVEPOINT _cf_sync_savepoint_N`` / ``ROLLBACK TO`` + ``RELEASE``;
``asyncTransactionImpl``: the async body runs inside ``blockConcurrencyWhile``, a throw rolls back and
rethrows the body's error, ``DurableObjectTransaction::rollback()`` returns normally and is idempotent, and
the transaction then resolves with the body's value, nothing committed).

The JavaScript host opens and closes the same ``Savepoint`` (``workers/js/_storage_ops.py``, op ``tx``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import AlarmkitError
from ._sqlrules import INTERNAL

if TYPE_CHECKING:  # pragma: no cover
    from ._types import HostView as Host

__all__ = ["Savepoint", "Transaction"]


class Savepoint:
    """One open explicit transaction of ``host``: ``commit()`` or ``rollback()`` ends it (once)."""

    __slots__ = ("host", "staged", "kv_ready", "open")

    def __init__(self, host: Host) -> None:
        host.check_alive()
        db = host.db
        db._begin()
        host.wrote()  # the savepoint joins the turn (workerd: SAVEPOINT triggers the outer transaction)
        db.conn.execute("SAVEPOINT alarmkit_tx" + INTERNAL)  # nested ones take the same name: SQLite uses the newest
        db.savepoints += 1  # an async body may await across turns: their commits wait for the release
        self.host = host
        self.staged = host.staged  # the alarm staged so far (or none): what a rollback puts back
        self.kv_ready = db._kv_ready  # _cf_KV may be created inside and dropped by the rollback
        self.open = True

    def _end(self) -> bool:
        """Close this savepoint; False when a reset of the instance already ended it (nothing to undo)."""
        if not self.open:
            return False
        self.open = False
        db = self.host.db
        if db.savepoints == 0 or not db.conn.in_transaction:
            return False
        db.savepoints -= 1
        self.host.wrote()  # the turn commits what the savepoint kept (end_turn waited while it was open)
        return True

    def commit(self) -> None:
        if self._end():
            self.host.db.conn.execute("RELEASE alarmkit_tx" + INTERNAL)

    def rollback(self) -> None:
        if self._end():
            host = self.host
            db = host.db
            db.conn.execute("ROLLBACK TO alarmkit_tx" + INTERNAL)
            db.conn.execute("RELEASE alarmkit_tx" + INTERNAL)
            db._kv_ready = self.kv_ready
            host.staged = self.staged


class Transaction:
    """``txn`` in ``await ctx.storage.transaction(fn)``: the storage calls of ``ctx.storage`` inside the
    transaction, and ``rollback()``. After ``rollback()`` every call but ``rollback()`` raises, as
    workerd's ``DurableObjectTransaction::getCache`` does (``Cannot put on rolled back transaction``)."""

    __slots__ = ("_storage", "_savepoint")

    def __init__(self, storage: Any, savepoint: Savepoint) -> None:
        self._storage = storage
        self._savepoint = savepoint

    def rollback(self) -> None:
        """Undo the transaction's writes and alarm now; the transaction still resolves with the body's value."""
        self._savepoint.rollback()

    def _op(self, name: str) -> Any:
        if not self._savepoint.open:
            raise AlarmkitError(f"Cannot {name} on rolled back transaction")
        return getattr(self._storage, name)

    def get(self, key: Any) -> Any:
        return self._op("get")(key)

    def put(self, key: Any, value: Any = None) -> Any:
        return self._op("put")(key, value)

    def delete(self, key: Any) -> Any:
        return self._op("delete")(key)

    def list(self, prefix: str = "") -> Any:
        return self._op("list")(prefix)

    def get_alarm(self) -> Any:
        return self._op("get_alarm")()

    def set_alarm(self, scheduled_time: int | float) -> Any:
        return self._op("set_alarm")(scheduled_time)

    def delete_alarm(self) -> Any:
        return self._op("delete_alarm")()
