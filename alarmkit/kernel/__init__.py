"""The kernel: a virtual clock, a heap of timers, microtasks, the coroutine trampoline, run budgets.

It knows nothing of Durable Objects (SimPy's ``core.py`` is the model): time is an integer number
of milliseconds, timers fire by ``(time, sequence)``, and a seeded random source makes a run
repeatable. The runtime wing builds Durable Objects on top of it.
"""

from ._budget import (next_look, EVENT_LIMIT, MAX_WALL_S, NO_LIMIT, STEP_LIMIT, TIME_LIMIT_MS, WALL_LIMIT_S, KernelLimit, SimLimit, check_limit,
                      check_seconds, over_event_limit, over_wall_limit, task_of, MEMORY_LIMIT_MB, MAX_MEMORY_MB,
                      check_megabytes, over_memory_limit)
from ._kernel import SEED_MAX, Kernel
from ._tasks import PENDING, Future, Ready, Task, as_coro, wrap_awaitable

__all__ = ["Kernel", "Future", "Ready", "Task", "SEED_MAX", "PENDING", "as_coro", "wrap_awaitable",
           "STEP_LIMIT", "TIME_LIMIT_MS", "NO_LIMIT", "KernelLimit", "task_of",
           "EVENT_LIMIT", "WALL_LIMIT_S", "MAX_WALL_S", "SimLimit", "check_limit", "check_seconds", "over_event_limit", "over_wall_limit",
           "MEMORY_LIMIT_MB", "MAX_MEMORY_MB", "check_megabytes", "over_memory_limit"]

from .._public import publish as _publish  # noqa: E402

_publish("alarmkit.kernel", globals(), __all__)
