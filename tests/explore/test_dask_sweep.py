"""A sweep on a Dask LocalCluster gives the same result table as a local process pool."""

import pandas as pd
import pytest

from alarmkit import explore
from alarmkit.explore import results_table

distributed = pytest.importorskip("distributed")
pytestmark = pytest.mark.leaves_threads  # conftest runs these last: no process pool forks after them

KW = dict(seeds=40, depth=2, crash_points="alarm", progress=False, quiet=True)


@pytest.fixture(scope="module")
def pool_dir(tmp_path_factory):
    """The sweep on the local process pool (spawned workers), for comparison."""
    out = tmp_path_factory.mktemp("pool")
    return explore("lease-no-revival", workers=2, out=out, **KW), out


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None)
    with cluster, distributed.Client(cluster) as c:
        yield c


def test_dask_and_a_process_pool_give_the_same_table(pool_dir, client, tmp_path):
    pooled, _ = pool_dir
    dasked = explore("lease-no-revival", executor=client, out=tmp_path / "dask", **KW)
    pd.testing.assert_frame_equal(pooled.table, dasked.table)
    assert [c.to_dict() for c in pooled.counterexamples] == [c.to_dict() for c in dasked.counterexamples]
    assert dasked.counterexamples[0].invariant == "lost"
    # each worker wrote Parquet; DuckDB reads the folder back as one table
    assert len(list(dasked.out.glob("runs-*.parquet"))) > 2 and dasked.out.parent == tmp_path / "dask"
    pd.testing.assert_frame_equal(results_table(dasked.out), results_table(pooled.out))


def test_client_get_executor_is_accepted_too(client):
    a = explore("lease-ledger", executor=client.get_executor(), seeds=8, depth=1, progress=False, quiet=True)
    b = explore("lease-ledger", executor="serial", seeds=8, depth=1, progress=False, quiet=True)
    pd.testing.assert_frame_equal(a.table, b.table)
    assert a.ok
