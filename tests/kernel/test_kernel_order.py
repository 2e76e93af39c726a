"""The kernel's timer heap of integer keys fires in exact (time, sequence) order, and its one step
loop keeps the step budget for run(), call() and step() alike."""

import random

import pytest

from alarmkit.kernel._kernel import Kernel
from alarmkit.errors import InternalError, RunawayError


@pytest.mark.parametrize("seed", range(6))
def test_timers_fire_in_time_then_arming_order_with_cancels_and_reserved_places(seed):
    rnd = random.Random(seed)
    k = Kernel(time_limit_ms=None)
    fired, expected, handles = [], [], []
    order = 0  # the reference: a timer's place is (time, when it was armed or reserved)
    for i in range(3_000):
        order += 1
        # few distinct times, so that many timers share one; some far past 2**32 and near 2**62
        t = rnd.choice([rnd.randrange(0, 40), rnd.randrange(2**32, 2**32 + 5), 2**62 - rnd.randrange(3)])
        if rnd.random() < 0.1:  # a place reserved now, used after later timers are armed
            seq, place = k.reserve(), order
            order += 1
            handles.append((k.call_at(t, fired.append, ("later", i), seq=seq), (t, place, ("later", i))))
            expected.append((t, place, ("later", i)))
        entry = (t, order, i)
        handles.append((k.call_at(t, fired.append, i), entry))
        expected.append(entry)
        if rnd.random() < 0.3:
            handle, gone = handles.pop(rnd.randrange(len(handles)))
            k.cancel(handle)
            k.cancel(handle)  # twice changes nothing
            expected.remove(gone)
    k.run()
    assert fired == [label for _t, _o, label in sorted(expected)]
    assert k.now == max(t for t, _o, _l in expected)


def test_a_reserved_place_is_used_once_and_only_reserve_gives_one():
    k = Kernel()
    seq = k.reserve()
    k.call_at(5, print, seq=seq)
    with pytest.raises(InternalError, match=r"call_at\(seq=1\) needs a number reserve\(\) gave, used once"):
        k.call_at(5, print, seq=seq)
    with pytest.raises(InternalError, match=r"seq=99"):
        k.call_at(5, print, seq=99)


def test_the_step_budget_counts_microtasks_and_timers_at_one_instant_and_leaves_the_timer_pending():
    k = Kernel(step_limit=5)
    seen = []
    for i in range(4):
        k.call_at(10, seen.append, i)
    k.call_at(10, k.call_soon, seen.append, "micro")  # a timer that queues a microtask: 6 steps at 10
    k.call_at(11, seen.append, "next")
    with pytest.raises(RunawayError, match=r"stopped at virtual time 10 ms after 5 steps"):
        k.run()
    assert seen == [0, 1, 2, 3] and k.now == 10  # the 5th step at 10 was the timer that queues; then stopped
    k.step_limit = 10
    k.run()  # a new run counts afresh, and the micro task and the timer left run in their order
    assert seen == [0, 1, 2, 3, "micro", "next"] and k.now == 11


def test_step_counts_against_the_same_budget_and_moves_the_clock_only_to_live_timers():
    k = Kernel(step_limit=2)
    seen = []
    k.cancel(k.call_at(3, seen.append, "cancelled"))
    for i in range(3):
        k.call_at(7, seen.append, i)
    assert k.step() and k.step() and seen == [0, 1] and k.now == 7  # the cancelled timer moved nothing
    with pytest.raises(RunawayError, match="after 2 steps"):
        k.step()
    assert k.step(end=6) is False and seen == [0, 1]  # nothing due by 6; the third timer still pending
    k.step_limit = None
    assert k.step() and seen == [0, 1, 2] and not k.step()


def test_a_ranked_timer_runs_after_every_ordinary_timer_of_its_instant_in_rank_order():
    k = Kernel(time_limit_ms=None)
    fired = []
    ranks = random.Random(7)
    drawn = [random.Random(7).getrandbits(20) + 1 for _ in range(2)]  # the ranks call_ranked will draw
    k.call_ranked(5, ranks, fired.append, "ranked 1")
    k.call_ranked(5, ranks, fired.append, "ranked 2")
    k.call_at(5, fired.append, "ordinary, armed after")
    k.call_ranked(5, None, fired.append, "unranked: arming order")
    k.call_at(4, fired.append, "earlier")
    k.run()
    r1, r2 = ("ranked 1", "ranked 2") if drawn[0] <= drawn[1] else ("ranked 2", "ranked 1")
    assert fired == ["earlier", "ordinary, armed after", "unranked: arming order", r1, r2]
    with pytest.raises(InternalError, match=r"time can't go backwards: call_at\(3\) at now=5"):
        k.call_ranked(3, ranks, print)


def test_take_next_takes_a_timer_only_when_it_is_the_very_next_step():
    k = Kernel(time_limit_ms=None)
    fired = []
    first = k.call_at(0, fired.append, "first")
    turn = k.call_at(0, fired.append, "turn")
    assert not k.take_next(turn)  # "first" is due before it: left armed
    k.call_soon(fired.append, "micro")
    assert not k.take_next(first)  # a microtask runs before any timer
    k.step()
    assert k.take_next(first) and k._steps == 2  # taken out and counted as a step; the caller runs it
    k.run()
    assert fired == ["micro", "turn"]
