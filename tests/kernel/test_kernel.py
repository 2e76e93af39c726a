"""The kernel alone: virtual time, ordering, the trampoline, gather, errors."""

import asyncio

import pytest

from alarmkit import AlarmkitError, Kernel


def test_timers_fire_in_time_then_sequence_order():
    k = Kernel()
    seen = []
    k.call_at(20, seen.append, "b")
    k.call_at(10, seen.append, "a")
    k.call_at(20, seen.append, "c")  # same time as "b": scheduled later, runs later
    k.run()
    assert seen == ["a", "b", "c"]
    assert k.now == 20


def test_run_until_stops_at_that_time_and_advance_moves_on():
    k = Kernel()
    seen = []
    for t in (5, 15, 25):
        k.call_at(t, seen.append, t)
    k.run(until=15)
    assert (seen, k.now) == ([5, 15], 15)
    k.advance(5)
    assert (seen, k.now) == ([5, 15], 20)
    k.advance(5)
    assert seen == [5, 15, 25]


def test_time_cannot_go_backwards():
    k = Kernel()
    k.advance(100)
    with pytest.raises(AlarmkitError, match=r"^time can't go backwards: run\(until=50\) at now=100$"):
        k.run(until=50)


def test_cancelled_timer_never_runs():
    k = Kernel()
    seen = []
    h = k.call_at(10, seen.append, 1)
    k.cancel(h)
    k.run()
    assert seen == []


def test_coroutines_sleep_in_virtual_time_and_return_values():
    k = Kernel()
    log = []

    async def worker(name, delay):
        await k.sleep(delay)
        log.append((k.now, name))
        return name.upper()

    results = k.run_until_complete(k.gather(worker("slow", 300), worker("fast", 100)))
    assert results == ["SLOW", "FAST"]
    assert log == [(100, "fast"), (300, "slow")]


def test_microtasks_run_before_the_next_timer():
    k = Kernel()
    order = []

    async def chain():
        for i in range(3):
            await k.checkpoint()
            order.append(f"micro{i}")

    k.call_at(0, order.append, "timer")
    k.spawn(chain())
    k.run()
    assert order == ["micro0", "micro1", "micro2", "timer"]


def test_task_counts_its_suspensions_and_reports_them():
    k = Kernel()
    seen = []

    async def three_awaits():
        await k.checkpoint()
        await k.sleep(1)
        await k.checkpoint()

    k.spawn(three_awaits(), "t", on_suspend=lambda task: seen.append(task.awaits))
    k.run()
    assert seen == [1, 2, 3]


def test_an_exception_in_a_task_is_its_result():
    k = Kernel()

    async def boom():
        await k.sleep(5)
        raise ValueError("nope")

    with pytest.raises(ValueError, match="^nope$"):
        k.run_until_complete(boom())
    assert k.now == 5


def test_killed_task_never_resumes():
    k = Kernel()
    log = []

    async def long():
        await k.sleep(10)
        log.append("resumed")

    t = k.spawn(long())
    k.advance(1)
    t.kill(RuntimeError("process died"))
    k.run()
    assert log == [] and isinstance(t.exception(), RuntimeError)


def test_awaiting_asyncio_inside_the_kernel_is_a_clear_error():
    k = Kernel()

    async def wrong():
        await asyncio.sleep(0)

    with pytest.raises(AlarmkitError, match="not an alarmkit awaitable"):
        k.run_until_complete(wrong())


def test_deadlock_is_reported_not_hung():
    from alarmkit import Future

    k = Kernel()

    async def waits_forever():
        await Future()

    with pytest.raises(AlarmkitError, match="^deadlock"):
        k.run_until_complete(waits_forever())


def test_runs_inside_a_running_asyncio_loop():
    """Jupyter kernels run an asyncio loop; the trampoline must not need one of its own."""
    k = Kernel()

    async def inner():
        await k.sleep(42)
        return k.now

    async def outer():
        return k.run_until_complete(inner())

    assert asyncio.run(outer()) == 42


def test_one_seeded_random_source():
    assert [Kernel(7).rng.random() for _ in range(2)] == [Kernel(7).rng.random()] * 2
    with pytest.raises(AlarmkitError, match=r"^seed must be an int, got '7'$"):
        Kernel("7")


def test_cancelled_timers_are_compacted_and_order_is_kept():
    # a runtime that arms and cancels a far timer per event (the handler watchdog did) must not
    # grow the heap without bound; dropping them all must not change the order timers fire in
    k = Kernel()
    seen, keep, sizes = [], [], []
    for i in range(20_000):
        if i % 20 == 0:
            k.call_at(1_000 + i % 7, seen.append, i)
            keep.append(i)
        k.cancel(k.call_at(900_000, seen.append, -i))
        sizes.append(len(k._heap))
    assert max(sizes) <= 1_000 + 1_025  # live timers + at most the compaction threshold
    k.cancel(None)  # no handle: nothing happens
    k.run()
    assert seen == sorted(keep, key=lambda i: (1_000 + i % 7, i))
    assert k.now == 1_006  # the cancelled far timers do not move the clock


def test_cancelling_twice_or_after_the_timer_ran_changes_nothing_else():
    k = Kernel()
    seen = []
    first = k.call_at(5, seen.append, "first")
    cancelled = k.call_at(10, seen.append, "cancelled")
    k.call_at(20, seen.append, "kept")
    k.cancel(cancelled)
    k.cancel(cancelled)
    assert k.step() and seen == ["first"] and k.now == 5
    k.cancel(first)  # it already ran
    k.run()
    assert seen == ["first", "kept"] and k.now == 20  # the cancelled timer neither ran nor moved the clock



def test_at_instant_end_runs_once_when_the_instants_work_is_done_and_reserve_keeps_a_timers_place():
    k = Kernel()
    seen = []

    def hook():
        seen.append(("hook", k.now))
        k.call_at(15, seen.append, ("reserved at 15",), seq=seq)

    def first():  # work at 10 sets the hook, as the runtime's watchdog does
        k.call_soon(seen.append, ("microtask", k.now))
        k.at_instant_end(hook)

    k.call_at(10, first)
    k.call_at(10, seen.append, ("second timer at 10",))
    seq = k.reserve()  # taken before the timer below is armed, used after it
    k.call_at(15, seen.append, ("armed first at 15",))
    k.run()
    # at 10: the microtask, the second timer, then the hook (once); at 15 the reserved place comes first
    assert seen == [("microtask", 10), ("second timer at 10",), ("hook", 10), ("reserved at 15",), ("armed first at 15",)]
    assert k._instant_end == [] and k.now == 15


def test_at_instant_end_is_honoured_by_step_peek_and_run_until_complete():
    from alarmkit import Future

    k = Kernel()
    calls = []
    k.call_at(3, calls.append, "timer")
    k.at_instant_end(lambda: calls.append(("hook", k.now)))
    assert k.step() and calls == [("hook", 0), "timer"]  # the hook ran before the clock moved to 3
    fut = Future()
    k.call_at(9, fut.set_result, 1)
    k.at_instant_end(lambda: calls.append(("hook", k.now)))
    assert k.run_until_complete(fut) == 1 and calls[-1] == ("hook", 3)


def test_several_instant_end_hooks_all_run_in_order_and_a_user_hook_cannot_displace_the_watchdog():
    """The watchdog's hook and a user's, set in the same instant: both run (a single slot let either
    overwrite the other: a hung alarm() never killed, or the user's hook never run)."""
    from alarmkit import DurableObject, Simulation

    ran = []

    class Hangs(DurableObject):
        async def arm(self, t):
            await self.ctx.storage.set_alarm(t)

        async def alarm(self, info):
            self.ctx._host.sim.kernel.at_instant_end(lambda: ran.append(("user hook", self.ctx.now())))
            if info.retry_count == 0:
                await self.ctx.sleep(20 * 60 * 1000)

    sim = Simulation(seed=1)
    h = sim.namespace("H", Hangs).get("h")
    sim.call(h.arm(1000))
    sim.run(until=1002 + 900_000)
    ev = sim.events()
    killed = ev[(ev.kind == "handler_error")]
    assert killed.t_ms.tolist() == [1002 + 900_000] and "HandlerTimeout" in killed.detail.iloc[0]
    assert ran[0] == ("user hook", 1002)
    with pytest.raises(AlarmkitError, match=r"at_instant_end needs a function to call, got 5"):
        Kernel().at_instant_end(5)
