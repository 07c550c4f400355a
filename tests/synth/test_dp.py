"""Differentially private margins: noise scale, makepos, budget split, R's refusals, seeding."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from pipeline.data.dataset import Dataset
from pipeline.errors import ParameterError
from pipeline.synth import MarginTable, SynthesiseParams, synthesise, synthesise_frame
from pipeline.synth.dp import (
    DpParams,
    check_dp,
    gaussian_sd,
    makepos,
    margin_noise,
    noise_stream,
    noise_values,
    split_budget,
)

VARS = ["sex", "agegr", "edu", "smoke"]


def params(**kw) -> SynthesiseParams:
    base = {"variables": VARS, "variant": "none", "seed": 11, "m": 2, "tol": 1e-6, "dp": {"epsilon": 2.0}}
    return SynthesiseParams(**{**base, **kw})


@pytest.mark.parametrize(("noise", "eps", "expected_var"), [
    ("laplace", 0.25, 2 * (1 / 0.25) ** 2),  # Laplace(b): variance 2 b^2
    ("gaussian", 0.25, (math.sqrt(2 * math.log(2 / 0.05)) / 0.25) ** 2),
])  # fmt: skip
def test_noise_variance_within_its_confidence_interval(noise: str, eps: float, expected_var: float) -> None:
    """Sample variance of 200 000 draws against the mechanism's variance, 4 standard errors."""
    n = 200_000
    draws = noise_values(noise_stream(5, 0), n, noise, eps, 0.05)
    s2 = draws.var(ddof=1)
    # var(s^2) ~ (mu4 - sigma^4) / n: Laplace mu4 = 6 sigma^4 (kurtosis 6), normal mu4 = 3 sigma^4
    excess = 5.0 if noise == "laplace" else 2.0
    se = expected_var * math.sqrt(excess / n)
    assert abs(s2 - expected_var) < 4 * se
    assert abs(draws.mean()) < 4 * math.sqrt(expected_var / n)
    # a wrong scale (e.g. sd instead of variance, or ε not split) lies far outside
    assert abs(s2 - 2 * expected_var) > 20 * se


def test_makepos_matches_r_by_hand() -> None:
    # R: makepos(c(5, -2, 3, 1), 7) -> order 5, 3, 1, -2; cumsum |.| = 5, 8, 9, 11 >= 7 from the 2nd
    np.testing.assert_array_equal(makepos(np.array([5.0, -2.0, 3.0, 1.0]), 7), [5, 0, 0, 0])
    # R: makepos(c(4, -3, 2), 10) -> cumsum 4, 6, 9 never reaches 10: absolute values
    np.testing.assert_array_equal(makepos(np.array([4.0, -3.0, 2.0]), 10), [4, 3, 2])


def test_makepos_keeps_totals_and_non_negativity() -> None:
    rng = np.random.default_rng(1)
    for _ in range(200):
        x = rng.integers(0, 30, size=rng.integers(2, 40)).astype(float) + 0.1
        tot = float(x.sum())
        noisy = x + rng.laplace(0, 5, x.size)
        out = makepos(noisy, tot)
        assert np.all(out >= 0)
        assert out.sum() <= tot + 1e-12
        order = np.argsort(-noisy, kind="stable")
        kept = int((np.cumsum(np.abs(noisy[order])) < tot).sum())
        assert np.count_nonzero(out[order[kept:]]) == 0
        if kept < x.size:  # short of the total by less than the first cell it set to 0
            assert out.sum() + abs(noisy[order[kept]]) >= tot


def test_budget_split_equal_and_weighted() -> None:
    np.testing.assert_allclose(split_budget(1.2, 6), [0.2] * 6)
    np.testing.assert_allclose(split_budget(1.0, 3, [1, 1, 2]), [0.25, 0.25, 0.5])
    with pytest.raises(ParameterError, match="one weight per margin"):
        split_budget(1.0, 3, [1, 1])
    with pytest.raises(ParameterError, match="weight must be a finite number > 0"):
        split_budget(1.0, 2, [1, 0])


@pytest.mark.parametrize(("dp", "q", "match"), [
    ({"epsilon": 0}, 3, "dp.epsilon: must be a finite number > 0"),
    ({"epsilon": -1}, 3, "dp.epsilon"),
    ({"epsilon": 0.5, "noise": "gaussian", "delta": 0}, 3, r"0 < delta <= 1"),
    ({"epsilon": 0.5, "noise": "gaussian", "delta": 1.5}, 3, r"0 < delta <= 1"),
    ({"epsilon": 3.0, "noise": "gaussian"}, 3, "per-margin epsilon < 1; epsilon=3 over 3 margin"),
    ({"epsilon": 1.5, "noise": "gaussian", "weights": [1, 9]}, 2, "up to 1.35"),
])  # fmt: skip
def test_r_refusals(dp: dict, q: int, match: str) -> None:
    with pytest.raises(ParameterError, match=match):
        check_dp(DpParams(**dp), q)


def test_r_accepts_what_r_accepts() -> None:
    # delta = 1 is allowed by R (delta > 1 is refused); per-margin epsilon just under 1
    np.testing.assert_allclose(check_dp(DpParams(epsilon=2.97, noise="gaussian", delta=1.0), 3), [0.99] * 3)
    # Laplace has no upper limit on epsilon
    np.testing.assert_allclose(check_dp(DpParams(epsilon=30.0), 3), [10.0] * 3)


def test_margin_noise_adds_prior_then_the_seeded_noise_of_each_margin() -> None:
    t = MarginTable(("a", "b"), (("x", "y"), ("u", "v", "w")), np.array([[400.0, 300, 200], [100, 500, 600]]))
    dp = DpParams(epsilon=0.6, noise="gaussian", delta=0.1)
    noisy, rec = margin_noise([t, t, t], dp, priorn=1.0, seed=42)
    for j, (m, out) in enumerate(zip(rec.margins, noisy, strict=True)):
        assert m.epsilon == pytest.approx(0.2)
        assert m.scale == pytest.approx(gaussian_sd(0.2, 0.1))
        raw = t.counts + 1 / 6 + noise_values(noise_stream(42, j), 6, "gaussian", 0.2, 0.1).reshape(2, 3)
        np.testing.assert_allclose(out.counts, makepos(raw, 2101.0), rtol=0, atol=1e-12)
        assert m.total_before == pytest.approx(2101.0)
    assert rec.delta_spent == pytest.approx(0.3)
    assert not np.array_equal(noisy[0].counts, noisy[1].counts)  # independent streams per margin


def test_same_seed_same_margins_on_one_and_two_workers_and_any_chunking(sd2011_subset, dask_client) -> None:
    from distributed import Client, LocalCluster

    df, schema = sd2011_subset
    p = params(dp={"epsilon": 1.0, "noise": "laplace"})
    two = synthesise(Dataset.from_pandas(df, schema, npartitions=7), p)
    with (
        LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster,
        Client(cluster),
    ):
        one = synthesise(Dataset.from_pandas(df, schema, npartitions=2), p)
    local = synthesise_frame(df, schema, p)
    for a, b, c in zip(one.margins.tables, two.margins.tables, local.margins.tables, strict=True):
        np.testing.assert_array_equal(a.counts, b.counts)
        np.testing.assert_array_equal(a.counts, c.counts)
    for x, y in zip(one.synthetic, two.synthetic, strict=True):
        pd.testing.assert_frame_equal(x, y)
    other = synthesise_frame(df, schema, params(dp={"epsilon": 1.0}, seed=12))
    assert not np.array_equal(other.margins.tables[0].counts, local.margins.tables[0].counts)


def test_release_rows_and_record(sd2011_subset) -> None:
    df, schema = sd2011_subset
    res = synthesise_frame(df, schema, params(dp={"epsilon": 1.2, "weights": [1, 1, 1, 1, 1, 7]}))
    rows = {(r.measure, r.params.get("margin")): r.value for r in res.rows()}
    assert rows[("dp_epsilon_spent", None)] == 1.2
    assert rows[("dp_delta_spent", None)] == 0.0
    assert rows[("dp_margin_epsilon", "edu:smoke")] == pytest.approx(0.7)
    assert rows[("dp_noise_scale", "sex:agegr")] == pytest.approx(10.0)
    eps = [m.epsilon for m in res.dp.margins]
    np.testing.assert_allclose(eps, [0.1] * 5 + [0.7])
    assert res.to_dict()["dp"]["composition"] == "basic"
    assert all(m.total_after <= m.total_before for m in res.dp.margins)


def test_noise_then_coarsen_releases_multiples_of_the_limit(sd2011_subset) -> None:
    df, schema = sd2011_subset
    res = synthesise_frame(df, schema, params(variant="V2", dp={"epsilon": 1.0, "order": "noise_then_coarsen"}))
    for t in res.margins.tables:
        assert np.all(t.counts % 10 == 0)
    assert res.margins.variant == "V2"


@pytest.mark.parametrize(("kw", "match"), [
    ({"variant": "V3"}, "dp.order 'noise_only' releases the noisy margins as they are: set variant: none"),
    ({"dp": {"epsilon": 1, "order": "noise_then_coarsen"}}, "needs a variant V1, V2 or V3"),
    ({"dp": {"epsilon": 6.0, "noise": "gaussian"}}, "epsilon=6 over 6 margin"),
])  # fmt: skip
def test_settings_are_checked_before_any_data(sd2011_subset, kw: dict, match: str) -> None:
    df, schema = sd2011_subset
    with pytest.raises(ParameterError, match=match):
        synthesise_frame(df, schema, params(**kw))


def test_structzero_mode_in_the_settings(sd2011_subset) -> None:
    """structzero_mode through SynthesiseParams: 'seed' refuses ground-truth counts in zero
    cells (16-24 year-olds who are married), 'syn.ipf' fits, zeroes them and draws none there."""
    df, schema = sd2011_subset
    zeros = [{"agegr": ["16-24"], "marital": ["MARRIED"]}]
    kw = {"variables": ["agegr", "marital", "sex"], "variant": "none", "seed": 3, "m": 1, "structural_zeros": zeros}
    with pytest.raises(ParameterError, match="structural_zeros contradict margin 'agegr:marital'"):
        synthesise_frame(df, schema, SynthesiseParams(**kw))
    res = synthesise_frame(df, schema, SynthesiseParams(**kw, structzero_mode="syn.ipf"))
    syn = res.synthetic[0]
    assert len(syn) == len(df)
    assert not ((syn["agegr"] == "16-24") & (syn["marital"] == "MARRIED")).any()
    assert any("syn.ipf mode" in w for w in res.fit.warnings)
