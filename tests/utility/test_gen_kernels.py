"""The compiled pieces of utility_gen's logit: design rows expanded from codes, the aliasing check,
duplicate merging, and SPECKS/PO50/U ranked per bucket of scores instead of gathered."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pipeline.rmodels.design import Design, Predictor
from pipeline.rmodels.glm import IRLS, LABEL, CodedRecords, ModelSpec, logit_pass
from pipeline.utility.scores import (
    ScoreSummary,
    ScoreTable,
    ks_statistic,
    propensity_stats,
    rank_bucket,
    score_statistics,
    wilcoxon_w,
)


def _mixed_records(n: int, seed: int) -> tuple[ModelSpec, CodedRecords]:
    """An unordered factor with an NA level, an ordered one (polynomial contrasts), two numerics
    with zeros, every interaction up to three variables; level codes mapped by a permutation."""
    rng = np.random.default_rng(seed)
    preds = [Predictor("a", ("a1", "a2", None)), Predictor("x"), Predictor("o", ("lo", "mid", "hi", "top"), True),
             Predictor("z")]  # fmt: skip
    lookups = (np.array([2, 0, 1]), None, np.array([3, 1, 0, 2]), None)
    spec = ModelSpec(Design.build(preds, 2), ("a", "x", "o", "z"), lookups)
    codes = np.column_stack([rng.integers(0, 3, n), rng.integers(0, 4, n)]).astype(np.int32)
    x = np.where(rng.random(n) < 0.2, 0.0, rng.normal(size=n))
    z = rng.integers(0, 3, n).astype(float)
    y = (rng.random(n) < 0.4).astype(float)
    return spec, CodedRecords(codes, np.column_stack([x, z]), y, rng.integers(1, 4, n).astype(float))


def test_compiled_pass_equals_the_dense_design():
    spec, rec = _mixed_records(3000, 1)
    x = spec.matrix(rec, 0, len(rec))
    assert x.shape[1] == spec.design.n_columns > 30
    kept = np.array([j for j in range(x.shape[1]) if j % 7 != 3])
    beta = np.random.default_rng(2).normal(scale=0.1, size=len(kept))
    eta = x[:, kept] @ beta
    mu = 1 / (1 + np.exp(-eta))
    w = rec.freq * (mu * (1 - mu))
    got = logit_pass(rec, spec, "gram", beta, kept)
    np.testing.assert_allclose(got["g"], (x[:, kept] * w[:, None]).T @ x[:, kept], rtol=1e-11, atol=1e-9)
    np.testing.assert_allclose(got["s"], x[:, kept].T @ (rec.freq * (rec.y - mu)), rtol=1e-10, atol=1e-9)
    dev = -2 * np.sum(rec.freq * np.where(rec.y > 0, np.log(mu), np.log(1 - mu)))
    assert got["dev"] == pytest.approx(dev, rel=1e-12)
    assert got["n"] == rec.freq.sum()
    scores = logit_pass(rec, spec, "scores", beta, kept)
    np.testing.assert_allclose(scores["mu"], mu, rtol=1e-13)
    np.testing.assert_array_equal(scores["w"], rec.freq)


def test_frames_and_coded_records_give_the_same_pass():
    spec, rec = _mixed_records(500, 3)
    frame = pd.DataFrame({"a": rec.codes[:, 0], "x": rec.values[:, 0], "o": rec.codes[:, 1], "z": rec.values[:, 1],
                          LABEL: rec.y, "__f__": rec.freq})  # fmt: skip
    a = logit_pass(frame, spec, "gram", None, None)
    b = logit_pass(rec, spec, "gram", None, None)
    np.testing.assert_array_equal(a["g"], b["g"])
    assert a["dev"] == b["dev"]


def _numeric_fit(design: np.ndarray, y: np.ndarray) -> tuple[IRLS, list[str]]:
    names = [f"v{j}" for j in range(1, design.shape[1])]
    spec = ModelSpec(Design.build([Predictor(n) for n in names], 0), tuple(names), (None,) * len(names))
    rec = CodedRecords(np.empty((len(y), 0), dtype=np.int32), np.ascontiguousarray(design[:, 1:]), y)
    state, modes = IRLS(spec.design.n_columns), []
    while True:
        mode, beta, kept = state.request()
        modes.append(mode)
        res = logit_pass(rec, spec, mode, beta, kept)
        if mode == "scores":
            return state, modes
        state.feed(res)


def test_an_exact_dependence_is_verified_on_the_data_without_a_qr():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(400, 2))
    design = np.column_stack([np.ones(400), x, x[:, 0] - 2 * x[:, 1]])
    state, modes = _numeric_fit(design, (rng.random(400) < 0.5).astype(float))
    assert modes[:3] == ["gram", "alias", "gram"] and "qr" not in modes
    assert list(state.kept) == [0, 1, 2] and np.isnan(state.coefficients()[3]) and state.converged


def test_a_nearly_dependent_column_that_r_keeps_goes_to_the_qr():
    rng = np.random.default_rng(6)
    x = rng.normal(size=(400, 2))
    # residual norm ~1e-9 of the column's: below what X'WX resolves, above R's 1e-11
    design = np.column_stack([np.ones(400), x, x[:, 0] - 2 * x[:, 1] + 1e-9 * rng.normal(size=400)])
    state, modes = _numeric_fit(design, (rng.random(400) < 0.5).astype(float))
    assert modes[:4] == ["gram", "alias", "alias", "qr"]
    assert list(state.kept) == [0, 1, 2, 3]


def test_merging_identical_records_gives_the_same_fit():
    spec, rec = _mixed_records(4000, 7)
    rec = CodedRecords(rec.codes, np.round(rec.values), rec.y)  # few distinct records
    merged = rec.compressed()
    assert len(merged) < len(rec) / 2 and merged.freq.sum() == len(rec)
    fits = []
    for r in (rec, merged):
        state = IRLS(spec.design.n_columns)
        while (req := state.request())[0] != "scores":
            state.feed(logit_pass(r, spec, *req))
        fits.append(state.coefficients())
    np.testing.assert_allclose(fits[1], fits[0], rtol=1e-9, atol=1e-12, equal_nan=True)


def test_merging_gives_up_when_most_records_are_distinct():
    _, rec = _mixed_records(2000, 8)
    plain = CodedRecords(rec.codes, rec.values, rec.y)
    assert plain.compressed() is plain


@pytest.mark.parametrize("n_buckets", [1, 2, 5])
def test_scores_ranked_per_bucket_equal_one_table(n_buckets):
    rng = np.random.default_rng(9)
    n = 20_000
    # many exact ties (a few distinct values) and continuous scores, integer weights
    score = np.where(rng.random(n) < 0.5, rng.integers(0, 40, n) / 40, rng.random(n))
    t = (rng.random(n) < 0.45).astype(np.int8)
    w = rng.integers(1, 5, n).astype(float)
    c = float(np.sum(w[t == 1]) / np.sum(w))
    whole = propensity_stats(score, t, c, w)
    gx, gy = np.where(t == 1, w, 0.0), np.where(t == 1, 0.0, w)
    assert whole["U"] == wilcoxon_w(score, gx, gy)
    assert whole["SPECKS"] == ks_statistic(score, gx, gy)
    cuts = np.sort(rng.choice(np.arange(1, n), 6, replace=False))
    pieces = zip(np.split(score, cuts), np.split(t, cuts), np.split(w, cuts), strict=True)
    tables = [ScoreTable.from_scores(s, tt, c, ww) for s, tt, ww in pieces]
    summary = ScoreSummary.merge([ScoreSummary.of([tab]) for tab in tables])
    split = summary.splitters(n_buckets)
    assert len(split) <= n_buckets - 1
    buckets = [rank_bucket([tab.bucket(split, b) for tab in tables], summary.nx, summary.ny)
               for b in range(len(split) + 1)]  # fmt: skip
    got = score_statistics(summary, buckets)
    assert got["U"] == whole["U"] and got["SPECKS"] == whole["SPECKS"] and got["PO50"] == whole["PO50"]
    assert got["pMSE"] == pytest.approx(whole["pMSE"], rel=1e-13)
    assert (summary.lo, summary.hi) == (score.min(), score.max())


def test_cluster_path_with_several_score_buckets_equals_memory(dask_client, monkeypatch):
    import warnings

    import dask.dataframe as dd

    import pipeline.utility.gen as gen
    from pipeline.evaluation.execution import Executor
    from pipeline.utility import utility_gen

    from .helpers import case_data, load, ref_files

    orig, syns, schema = case_data(load(next(p for p in ref_files("utility_gen") if p.stem.endswith("G02"))))
    kw = dict(method="logit", vars=["sex", "age", "placesize", "income"], maxorder=1, cont_na={"income": -8},
              schema=schema)  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mem = utility_gen(orig, syns[:2], executor=Executor(policy="memory"), **kw)
        monkeypatch.setattr(gen, "BUCKET_RECORDS", 1500)  # 5,000 + 5,000 records: several buckets
        dist = utility_gen(dd.from_pandas(orig, npartitions=4), [dd.from_pandas(s, npartitions=4) for s in syns[:2]],
                           executor=Executor(dask_client, policy="blocks", block_rows=1000), **kw)  # fmt: skip
    for stat in ("U", "SPECKS", "PO50", "df"):
        np.testing.assert_array_equal(dist[stat], mem[stat])
    np.testing.assert_allclose(dist["pMSE"], mem["pMSE"], rtol=1e-10)
    for a, b in zip(dist.fits, mem.fits, strict=True):
        assert a.iter == b.iter and a.fitted_extreme == b.fitted_extreme
        assert a.null_deviance == pytest.approx(b.null_deviance, rel=1e-12)
        assert a.deviance == pytest.approx(b.deviance, rel=1e-10)


SCORE_CASES = ["ties", "continuous", "nan", "threshold", "one record", "empty", "one group"]


def _scores(case: str, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    n = {"one record": 1, "empty": 0}.get(case, 5000)
    score = rng.integers(0, 9, n) / 8 if case in ("ties", "threshold") else rng.random(n)
    if case == "threshold":
        score[: n // 3] = 0.5  # on the PO50 threshold: counted as original
    if case == "nan":
        score[rng.random(n) < 0.1] = np.nan
    t = np.ones(n, dtype=np.int8) if case == "one group" else (rng.random(n) < 0.4).astype(np.int8)
    return score, t


@pytest.mark.parametrize("case", SCORE_CASES)
def test_unweighted_score_table_equals_the_weighted_grouping(case):
    """Counts from the two groups' sorted scores equal the grouping by np.unique with unit weights."""
    score, t = _scores(case, np.random.default_rng(SCORE_CASES.index(case)))
    fast = ScoreTable.from_scores(score, t, 0.4)
    slow = ScoreTable.from_scores(score, t, 0.4, np.ones(len(score)))
    for name in ("values", "wx", "wy"):
        np.testing.assert_array_equal(getattr(fast, name), getattr(slow, name))
    assert (fast.total, fast.sq, fast.correct) == (slow.total, slow.sq, slow.correct)
    assert fast.wx.sum() == np.sum(t[~np.isnan(score)] == 1)


def _rank_bucket_numpy(wx: np.ndarray, wy: np.ndarray, nx: float, ny: float) -> tuple[float, np.ndarray]:
    """U and the KS extreme points by whole-array numpy operations (the definition)."""
    cx, cy = np.cumsum(wx), np.cumsum(wy)
    u = float(np.sum(wx * (cy - wy)) + np.sum(wx * wy) / 2)
    integral = bool(np.all(cx == np.rint(cx)) and np.all(cy == np.rint(cy)) and nx == round(nx) and ny == round(ny))
    key = cx.astype(np.int64) * int(ny) - cy.astype(np.int64) * int(nx) if integral else cx * ny - cy * nx
    pick = (key == key.max()) | (key == key.min())
    return u, np.column_stack([cx[pick], cy[pick]])


@pytest.mark.parametrize("weights", ["whole", "zeros in one group", "fractional", "one value", "equal keys"])
def test_rank_bucket_equals_the_numpy_definition(weights):
    rng = np.random.default_rng(21)
    k = 1 if weights == "one value" else 4000
    wx, wy = rng.integers(0, 4, k).astype(float), rng.integers(0, 4, k).astype(float)
    if weights == "zeros in one group":
        wx[: k // 2] = 0.0
    if weights == "fractional":
        wx *= 0.37
    if weights == "equal keys":  # cx ny - cy nx takes its largest and smallest value many times
        wx, wy = np.tile([1.0, 0.0, 0.0, 1.0], k // 4), np.tile([0.0, 1.0, 1.0, 0.0], k // 4)
    nx, ny = float(wx.sum()), float(wy.sum())
    table = ScoreTable(np.arange(k) / k, wx, wy, 0.0, 0.0, 0.0)
    got = rank_bucket([table], nx, ny)
    u, points = _rank_bucket_numpy(wx, wy, nx, ny)
    assert got.u == u and (got.wx, got.wy) == (np.cumsum(wx)[-1], np.cumsum(wy)[-1])
    np.testing.assert_array_equal(got.ks_points, points)
    if weights == "equal keys":
        assert len(points) == k // 2  # +1 and -1 at every other value


def test_merging_gives_up_on_a_prefix_of_distinct_records(monkeypatch):
    """Past the probe, a prefix of distinct records ends the attempt; a prefix with duplicates, or
    synthpop's aggregate (max_ratio 1), goes on and merges every identical record."""
    import pipeline.rmodels.glm as glm

    monkeypatch.setattr(glm, "PROBE_ROWS", 100)
    _, rec = _mixed_records(1000, 9)
    values = np.round(rec.values) + 0.0  # few distinct records (no -0.0: merging compares bits)
    values[:100, 0] = np.arange(100) + 0.5  # a distinct prefix
    plain = CodedRecords(rec.codes, values, rec.y)
    assert plain.compressed() is plain
    merged = plain.compressed(max_ratio=1.0)
    assert len(merged) < 500 and merged.freq.sum() == 1000
    again = CodedRecords(rec.codes[::-1].copy(), values[::-1].copy(), rec.y[::-1].copy())  # the prefix at the end
    merged = again.compressed()
    assert len(merged) < 500 and merged.freq.sum() == 1000
    _, group = np.unique(np.column_stack([again.codes, again.values, again.y]), axis=0, return_inverse=True)
    assert len(merged) == group.max() + 1
