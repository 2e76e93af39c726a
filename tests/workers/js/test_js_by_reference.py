"""RpcTargets and functions passed by reference over RPC, as workerd passes them (src/workerd/api/worker-rpc.c++):
the receiver gets a stub whose calls run back in the owner's instance; disposal; the owner evicted."""

import pytest

import alarmkit as ak


@pytest.fixture
def pair(js_host):
    sim = ak.Simulation(seed=1)
    w = sim.load_worker(js_host / "by_reference.js", bindings={"KEEPER": "Keeper", "CLIENT": "Client"})
    return sim, w, w.env.CLIENT.getByName("c")


def test_a_counter_target_is_bumped_through_its_stub_at_exact_times(pair):
    sim, _, c = pair
    assert sim.call(c.bumpTwice()) == [{"n": 12, "at": 0}, {"n": 13, "at": 500}, 13]  # the getter read as workerd's
    assert sim.now == 500


def test_a_function_argument_is_called_back_in_its_owner(pair):
    sim, _, c = pair
    assert sim.call(c.callMeBack()) == {"out": {"answer": 42, "at": 0}, "seen": [[7, 0]]}


def test_a_disposed_stub_fails_and_its_dup_still_works(pair):
    sim, _, c = pair
    assert sim.call(c.disposed()) == ["Error: RPC stub used after being disposed.", 1]


def test_a_class_instance_that_is_not_a_target_is_refused_with_workerds_text(pair):
    sim, _, c = pair
    assert sim.call(c.loose()) == ('DataCloneError: Could not serialize object of type "Loose". '
                                   "This type does not support serialization.")


def test_the_owner_evicted_breaks_its_stubs(pair):
    sim, w, c = pair
    sim.call(c.bumpTwice())
    assert sim.call(c.again()) == {"n": 14, "at": 500}
    sim.evict(w.env.KEEPER.getByName("k"))
    assert sim.call(c.again()) == "Error: Network connection lost."
