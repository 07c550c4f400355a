"""Engines: thread-count independence on multi-slab tables, sparse == dense, sampling."""

from __future__ import annotations

import itertools

import numba
import numpy as np

from pipeline.synth import MarginTable, control_margins, fit_ipf
from pipeline.synth.engines import SLAB_CELLS, DenseEngine, Factor, SparseEngine, enumerate_support, slab_size
from pipeline.synth.sample import sample_cells

SHAPE = (3, 4, 5, 6, 7, 8, 9)  # 181,440 cells


def random_margins(shape, seed: int, n: int = 20_000, zeros: bool = False) -> tuple[list[MarginTable], int]:
    """Two-way margins of a random ground truth with dependence (and some empty cells)."""
    rng = np.random.default_rng(seed)
    latent = rng.normal(size=(n, 1))
    codes = [np.clip(((latent[:, 0] * 0.8 + rng.normal(size=n)) * k / 4 + k / 2).astype(int), 0, k - 1) for k in shape]
    if zeros:  # make the last two levels of variables 0 and 1 never co-occur
        codes[1] = np.where(codes[0] == shape[0] - 1, np.minimum(codes[1], shape[1] - 2), codes[1])
    names = [f"v{i}" for i in range(len(shape))]
    levels = [tuple(f"l{j}" for j in range(k)) for k in shape]
    tables = []
    for i, j in itertools.combinations(range(len(shape)), 2):
        c = np.zeros((shape[i], shape[j]))
        np.add.at(c, (codes[i], codes[j]), 1)
        tables.append(MarginTable((names[i], names[j]), (levels[i], levels[j]), c))
    return tables, n


def test_slab_sizes() -> None:
    assert slab_size(1) == SLAB_CELLS and slab_size(1 << 16) == SLAB_CELLS
    assert slab_size((1 << 16) + 1) == 2 * SLAB_CELLS and slab_size(3 << 16) == 4 * SLAB_CELLS


def test_dense_pass_matches_numpy() -> None:
    rng = np.random.default_rng(1)
    eng = DenseEngine(SHAPE)
    eng.x[:] = rng.random(eng.n_cells)
    ref = eng.x.reshape(SHAPE).copy()
    g = rng.random((SHAPE[1], SHAPE[5]))
    res = eng.run(apply=Factor((1, 5), g), acc=(0, 6), crit=False)
    ref *= g[None, :, None, None, None, :, None]
    np.testing.assert_allclose(eng.x.reshape(SHAPE), ref, rtol=1e-15)
    np.testing.assert_allclose(res.margin, ref.sum(axis=(1, 2, 3, 4, 5)), rtol=1e-12)


def test_fit_and_sample_do_not_depend_on_thread_count() -> None:
    shape = (5, 6, 6, 7, 8, 9, 24)  # 2,177,280 cells: three slabs
    assert np.prod(shape) > 2 * SLAB_CELLS
    tables, n = random_margins(shape, 3)
    released = control_margins(tables, n, "V3", 10).tables
    runs = []
    for threads in (1, 2):
        numba.set_num_threads(threads)
        fit = fit_ipf(released, n, tol=1e-6, max_iter=50)
        codes = sample_cells(fit, 30_000, np.random.SeedSequence(11))
        runs.append((fit.engine.x.copy(), codes, fit.report.iterations))
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    assert runs[0][2] == runs[1][2]
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])


def test_sampling_is_a_multinomial_of_the_fit() -> None:
    tables, n = random_margins((3, 4, 5, 6), 5, n=5000)
    fit = fit_ipf(tables, n, priorn=0, tol=1e-10)
    k = 200_000
    codes = sample_cells(fit, k, np.random.SeedSequence(3))
    counts = np.bincount(np.ravel_multi_index(codes.T.astype(np.int64), fit.layout.shape), minlength=fit.layout.n_cells)
    p = fit.engine.x
    z = (counts - k * p) / np.sqrt(k * p * (1 - p) + 1e-300)
    assert np.all(counts[p == 0] == 0)
    assert np.abs(z[p > 0]).max() < 6
    assert abs(z[p > 0].mean()) < 0.1 and 0.8 < z[p > 0].std() < 1.2


def test_sparse_support_and_equivalence_with_dense() -> None:
    tables, n = random_margins((3, 4, 5, 6), 7, n=3000, zeros=True)
    released = control_margins(tables, n, "V2", 10).tables
    dense = fit_ipf(released, n, priorn=0, tol=1e-12, engine="dense")
    sparse = fit_ipf(released, n, priorn=0, tol=1e-12, engine="sparse")
    assert sparse.report.fitted_cells < dense.report.fitted_cells == 360
    assert isinstance(sparse.engine, SparseEngine)
    # every cell outside the support is 0 in the dense fit too
    p_dense = dense.probabilities()
    support = np.zeros(dense.layout.shape, dtype=bool)
    support[tuple(sparse.engine.codes_.T.astype(np.int64))] = True
    assert np.all(p_dense[~support] == 0)
    # consistent (ground-truth) margins: both converge to the same MLE
    a = fit_ipf(tables, n, priorn=0, tol=1e-13, engine="dense").probabilities()
    b = fit_ipf(tables, n, priorn=0, tol=1e-13, engine="sparse").probabilities()
    np.testing.assert_allclose(a, b, atol=1e-10)


def test_enumerate_support_by_joins() -> None:
    shape = (2, 3, 2)
    pos_ab = np.array([[True, False, True], [True, True, True]])
    pos_bc = np.array([[True, True], [True, True], [False, True]])
    codes = enumerate_support(shape, [(0, 1), (1, 2)], [pos_ab, pos_bc], [], 100)
    full = np.array(list(itertools.product(range(2), range(3), range(2))))
    keep = pos_ab[full[:, 0], full[:, 1]] & pos_bc[full[:, 1], full[:, 2]]
    np.testing.assert_array_equal(codes, full[keep])
    assert enumerate_support(shape, [(0, 1), (1, 2)], [pos_ab, pos_bc], [], 5) is None


def test_auto_uses_sparse_over_the_dense_guard() -> None:
    tables, n = random_margins((3, 4, 5, 6), 7, n=3000, zeros=True)
    released = control_margins(tables, n, "V2", 10).tables
    fit = fit_ipf(released, n, priorn=0, max_cells=340)
    assert fit.report.engine == "sparse" and fit.report.fitted_cells == 330
    assert fit.report.full_cells == 360


def test_dask_engine_is_the_dense_fit_for_any_blocks_and_workers(dask_client) -> None:
    from distributed import Client, LocalCluster

    shape = (30, 40, 50, 40)  # 2.4 million cells: three slabs
    tables, n = random_margins(shape, 4)
    released = control_margins(tables, n, "V2", 10).tables
    dense = fit_ipf(released, n, tol=1e-300, max_iter=4)
    dense_codes = sample_cells(dense, 20_000, np.random.SeedSequence(5))

    def check(fit) -> np.ndarray:
        assert fit.report.engine == "dask" and fit.report.iterations == dense.report.iterations
        np.testing.assert_array_equal(fit.engine.x.compute(), dense.engine.x)
        assert [m.max_abs_dev for m in fit.report.margins] == [m.max_abs_dev for m in dense.report.margins]
        return sample_cells(fit, 20_000, np.random.SeedSequence(5))

    two_workers = check(fit_ipf(released, n, tol=1e-300, max_iter=4, engine="dask", chunk_cells=SLAB_CELLS))
    with (
        LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster,
        Client(cluster),
    ):
        one_worker = check(fit_ipf(released, n, tol=1e-300, max_iter=4, engine="dask", chunk_cells=2 * SLAB_CELLS))
    np.testing.assert_array_equal(two_workers, dense_codes)
    np.testing.assert_array_equal(one_worker, dense_codes)
