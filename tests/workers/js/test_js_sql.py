"""The SQL layer in the JavaScript host: the calibration twin's own SqlProbe class (what real workerd ran for
alarmkit/calibrate/data/sql-workerd-1.20261117.1.json) answers every statement, every error text and the
transactionSync rollback as workerd did, and its setAlarm promises settle at workerd's microtask; SQL's clock
and randomness follow the seed."""

import pytest

import alarmkit as ak
from alarmkit.calibrate import sql_probes as sp
from alarmkit.calibrate.recorded import sql_reference
from alarmkit.workers.js import load

REAL = sql_reference()


@pytest.fixture(scope="module")
def twin(js_host):
    from alarmkit.workers.js.fidelity import JsHostWorkerd

    wd = JsHostWorkerd()
    yield wd
    wd.close()


@pytest.mark.parametrize("name", ["sql_auth", "sql_errors", "sql_time", "sql_txsync"])
def test_the_twins_sql_probe_under_the_host_gives_workerds_facts(twin, name):
    got = sp.SQL_FACTS[name](getattr(sp, f"probe_{name}")(twin))
    want = sp.SQL_FACTS[name](REAL[name])
    assert {k: v for k, v in got.items() if v != want.get(k)} == {}
    assert len(got) == len(want)


def test_set_alarm_promises_settle_after_the_callers_second_await(twin):
    # workerd 1.20261117.1: a .then() on setAlarm's promise runs between the caller's 2nd and 3rd `await null`,
    # inside a transactionSync that throws (and is rolled back), one that commits, and outside any
    real = REAL["sql_txsync"]
    assert real["order"][:5] == ["throw", "caught", "after await 1", "after await 2", "setAlarm resolved"]
    got = sp.probe_sql_txsync(twin)
    assert got["order"] == real["order"]
    assert got["ok_order"] == real["ok_order"] == [
        "committed", "after await 1", "after await 2", "setAlarm in the transaction resolved",
        "setAlarm outside resolved", "after await 3", "after await 4"]


def test_sql_clock_and_randomness_follow_the_seed_and_errors_are_plain_errors(js_host):
    def draw(seed):
        sim = ak.Simulation(seed=seed, fire_latency="exact")
        c = load(sim, js_host / "sqlclock.js", {"CLOCK": "Clock"}).env.CLOCK.getByName("c")
        sim.advance(1_800_000_000_000)
        first = sim.call(c.fill())
        sim.advance(61_000)
        return first, sim.call(c.fill()), sim.call(c.errors())

    a, again, other = draw(3), draw(3), draw(4)
    assert a == again
    assert (a[0]["at"], a[0]["stamp"], a[0]["d"]) == (1_800_000_000, "2027-01-15 08:00:00", "2027-01-15")
    assert (a[1]["at"], a[1]["stamp"]) == (1_800_000_061, "2027-01-15 08:01:01")
    assert a[0]["r"] != other[0]["r"] and a[0]["b"] != other[0]["b"] and len(a[0]["b"]) == 8
    assert a[2] == [[True, "Error", "Error", "not authorized: SQLITE_AUTH"],
                    [True, "Error", "Error", 'near "SELEC": syntax error at offset 0: SQLITE_ERROR'],
                    [True, "Error", "Error", "To execute a transaction, please use the state.storage.trans"]]
