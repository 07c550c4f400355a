"""Cluster paths: the IRLS by rounds over partitions equals the in-memory fit (1 and several
partitions), the table counts do not depend on the partitioning, and the per-set fits run as
tasks.  The path is chosen by the executor's policy (``memory`` or ``blocks``)."""

from __future__ import annotations

import warnings

import dask.dataframe as dd
import numpy as np
import pytest

from pipeline.evaluation.execution import Executor
from pipeline.utility import utility_gen, utility_tab

from .helpers import case_data, load, ref_files

G02 = [p for p in ref_files("utility_gen") if p.stem.endswith("G02")]
T03 = [p for p in ref_files("utility_tab") if p.stem.endswith("T03")]


@pytest.fixture(scope="module")
def sd2011():
    orig, syns, schema = case_data(load(G02[0]))
    return orig, syns[:2], schema


def _gen(orig, syns, schema, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return utility_gen(orig, syns, method="logit", vars=["sex", "age", "placesize", "income"], maxorder=1,
                           cont_na={"income": -8}, schema=schema, **kw)  # fmt: skip


@pytest.mark.parametrize("nparts", [1, 3])
def test_dask_irls_equals_in_memory_fit(dask_client, sd2011, nparts):
    orig, syns, schema = sd2011
    mem = _gen(orig, syns, schema, executor=Executor(policy="memory"))
    dist = _gen(dd.from_pandas(orig, npartitions=nparts), [dd.from_pandas(s, npartitions=nparts) for s in syns],
                schema, executor=Executor(dask_client, policy="blocks", block_rows=1000))  # fmt: skip
    np.testing.assert_allclose(dist["pMSE"], mem["pMSE"], rtol=1e-10)
    np.testing.assert_allclose(dist["S_pMSE"], mem["S_pMSE"], rtol=1e-10)
    np.testing.assert_array_equal(dist["U"], mem["U"])
    np.testing.assert_array_equal(dist["SPECKS"], mem["SPECKS"])
    np.testing.assert_array_equal(dist["df"], mem["df"])
    for a, b in zip(dist.fits, mem.fits, strict=True):
        assert a.names == b.names and a.iter == b.iter
        np.testing.assert_allclose(a.coefficients, b.coefficients, rtol=1e-8, atol=1e-12, equal_nan=True)


def test_dask_permutation_null_runs_in_rounds(dask_client, sd2011):
    orig, syns, schema = sd2011
    res = _gen(dd.from_pandas(orig, npartitions=2), [dd.from_pandas(s, npartitions=2) for s in syns], schema,
               executor=Executor(dask_client, policy="blocks", block_rows=1000), resamp_method="perm", nperms=3,
               seed=7)  # fmt: skip
    assert res.resamp_method == "perm"
    assert all(len(v) == 3 for v in res.null_pMSE.values())
    assert np.all(np.isfinite(res["S_pMSE"]))


def test_pandas_fits_as_tasks_with_client(dask_client, sd2011):
    orig, syns, schema = sd2011
    with_client = _gen(orig, syns, schema, executor=Executor(dask_client, policy="memory"))
    alone = _gen(orig, syns, schema, executor=Executor(policy="memory"))
    np.testing.assert_allclose(with_client["pMSE"], alone["pMSE"], rtol=1e-12)


def test_utility_tab_counts_do_not_depend_on_partitions(dask_client):
    ref = load(T03[0])
    orig, syns, schema = case_data(ref)
    args = ref["args"]
    mem = utility_tab(orig, syns[:2], args["vars"], ngroups=5, cont_na=args["cont.na"], schema=schema)
    dist = utility_tab(dd.from_pandas(orig, npartitions=3), [dd.from_pandas(s, npartitions=2) for s in syns[:2]],
                       args["vars"], ngroups=5, cont_na=args["cont.na"], schema=schema,
                       executor=Executor(dask_client, policy="blocks", block_rows=1000))  # fmt: skip
    np.testing.assert_array_equal(dist.tab_obs, mem.tab_obs)
    for a, b in zip(dist.tab_syn, mem.tab_syn, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(dist.stats.to_numpy(), mem.stats.to_numpy(), rtol=1e-12)


def _scaled(part, factor, offset):
    return part.assign(y=part["x"] * factor + offset)


@pytest.mark.parametrize("policy", ["memory", "blocks"])
def test_executor_map_partitions_keeps_handles_for_rounds(policy):
    """Executor.map_partitions (used for the stacked records of the IRLS rounds): per-partition
    arguments, results kept as handles that later map_combine rounds read, on a client that is
    not the default one."""
    import pandas as pd
    from distributed import Client, LocalCluster

    frame = pd.DataFrame({"x": np.arange(10.0)})
    with (
        LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster,
        Client(cluster, set_as_default=False) as client,
    ):
        executor = Executor(client, policy=policy)
        data = frame if policy == "memory" else dd.from_pandas(frame, npartitions=3, sort=False)
        parts = executor.partitions(data)
        done = executor.map_partitions(parts, _scaled, [(i + 1,) for i in range(len(parts))], 100.0)
        lengths, total = executor.compute(
            executor.map_combine(done, len, list), executor.map_combine(done, lambda p: float(p["y"].sum()), sum)
        )
    if policy == "blocks":  # x = 0..3, 4..6, 7..9 scaled by 1, 2, 3
        assert lengths == [4, 3, 3] and total == 1 * 6 + 2 * 15 + 3 * 24 + 100.0 * 10
    else:
        assert lengths == [10] and total == 45 + 100.0 * 10
