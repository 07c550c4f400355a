"""The logit's two compiled passes: through the cells of factor codes and record by record.

Both must give the dense design's ``X'WX``, ``X'Wz`` and deviance (designs with an NA level,
an empty level, polynomial contrasts, three-way terms, numeric variables with zeros and an
aliased numeric), the same scores bit for bit (ties depend on it), the same fit, the R
references, and the same fit whatever passes the partitions take.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from pipeline.rmodels.design import Design, Predictor
from pipeline.rmodels.glm import IRLS, CodedRecords, ModelSpec, combine_passes, logit_pass

from . import test_gen_reference as reference

PASSES = ["cells", "records"]


def _aliased_records(n: int, seed: int) -> tuple[ModelSpec, CodedRecords]:
    """An unordered factor with an NA level and a level no record has (zero columns), a numeric with
    zeros, an ordered factor (polynomial contrasts), a numeric equal to one of the first factor's
    dummies (aliased) and every interaction up to three variables; prior weights."""
    rng = np.random.default_rng(seed)
    preds = [Predictor("a", ("a1", "a2", "a3", None)), Predictor("x"), Predictor("o", ("lo", "mid", "hi", "top"), True),
             Predictor("d")]  # fmt: skip
    lookups = (np.array([3, 0, 1, 2]), None, np.array([3, 1, 0, 2]), None)
    spec = ModelSpec(Design.build(preds, 2), ("a", "x", "o", "d"), lookups)
    a = rng.choice([0, 1, 2], n)  # global codes 0 (NA), 1 (a1), 2 (a2); 3 (a3) is never present
    codes = np.column_stack([a, rng.integers(0, 4, n)]).astype(np.int32)
    x = np.where(rng.random(n) < 0.2, 0.0, rng.normal(size=n).round(1))
    d = (a == 2).astype(float)  # column aa2 again
    y = (rng.random(n) < 0.4).astype(float)
    return spec, CodedRecords(codes, np.column_stack([x, d]), y, None, rng.integers(1, 4, n).astype(float))


def _numeric_records(n: int, seed: int) -> tuple[ModelSpec, CodedRecords]:
    """Numeric variables only (one cell), their two-way products; frequency weights."""
    rng = np.random.default_rng(seed)
    names = ("u", "v", "w")
    spec = ModelSpec(Design.build([Predictor(v) for v in names], 1), names, (None,) * 3)
    values = np.where(rng.random((n, 3)) < 0.1, 0.0, rng.normal(size=(n, 3)))
    y = (rng.random(n) < 0.5).astype(float)
    return spec, CodedRecords(np.empty((n, 0), dtype=np.int32), values, y, rng.integers(1, 4, n).astype(float))


DESIGNS = {"aliased": _aliased_records, "numeric": _numeric_records}


@pytest.fixture
def force_pass(monkeypatch):
    def force(which: str) -> None:
        monkeypatch.setattr(ModelSpec, "cells_pay", lambda self, n_records, n_cells: which == "cells")

    return force


def _fit(rec: CodedRecords | list[CodedRecords], spec: ModelSpec) -> tuple[IRLS, dict]:
    parts = rec if isinstance(rec, list) else [rec]
    state = IRLS(spec.design.n_columns)
    while True:
        mode, beta, kept = state.request()
        results = [logit_pass(p, spec, mode, beta, kept) for p in parts]
        if mode == "scores":
            return state, {k: np.concatenate([r[k] for r in results]) for k in ("mu", "y")}
        state.feed(combine_passes(results))


@pytest.mark.parametrize("design", sorted(DESIGNS))
@pytest.mark.parametrize("which", PASSES)
def test_either_pass_equals_the_dense_design(force_pass, which, design):
    spec, rec = DESIGNS[design](4000, 1)
    force_pass(which)
    x = spec.matrix(rec, 0, len(rec))
    zero = np.flatnonzero(~x.any(axis=0))
    if design == "aliased":
        assert len(zero) >= 4 and x.shape[1] > 50  # the a3 columns among them
        assert np.array_equal(x[:, spec.design.names.index("aa2")], x[:, spec.design.names.index("d")])
    kept = np.array([j for j in range(x.shape[1]) if j % 5 != 2])
    ones = np.ones(len(rec))
    prior, w0 = (ones if rec.prior is None else rec.prior), rec.weights
    start = logit_pass(rec, spec, "gram", None, None)
    mu0 = (prior * rec.y + 0.5) / (prior + 1)
    eta0 = np.log(mu0 / (1 - mu0))
    z0 = eta0 + (rec.y - mu0) / (mu0 * (1 - mu0))
    wt0 = w0 * mu0 * (1 - mu0)
    np.testing.assert_allclose(start["g"], (x * wt0[:, None]).T @ x, rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(start["s"], x.T @ (wt0 * z0), rtol=1e-12, atol=1e-9)
    beta = np.random.default_rng(2).normal(scale=0.1, size=len(kept))
    eta = x[:, kept] @ beta
    mu = 1 / (1 + np.exp(-eta))
    w = w0 * mu * (1 - mu)
    got = logit_pass(rec, spec, "gram", beta, kept)
    np.testing.assert_allclose(got["g"], (x[:, kept] * w[:, None]).T @ x[:, kept], rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(got["s"], x[:, kept].T @ (w0 * (rec.y - mu)), rtol=1e-11, atol=1e-10)
    dev = -2 * np.sum(w0 * np.where(rec.y > 0, np.log(mu), np.log(1 - mu)))
    assert got["dev"] == pytest.approx(dev, rel=1e-12)
    scores = logit_pass(rec, spec, "scores", beta, kept)
    np.testing.assert_allclose(scores["mu"], mu, rtol=1e-13)


@pytest.mark.parametrize("design", sorted(DESIGNS))
def test_both_passes_give_the_same_scores_bit_for_bit(force_pass, design):
    spec, rec = DESIGNS[design](3000, 3)
    kept = np.arange(0, spec.design.n_columns, 2)
    beta = np.random.default_rng(4).normal(scale=0.3, size=len(kept))
    out = {}
    for which in PASSES:
        force_pass(which)
        out[which] = logit_pass(rec, spec, "scores", beta, kept)
    np.testing.assert_array_equal(out["cells"]["mu"], out["records"]["mu"])
    assert out["cells"]["dev"] == out["records"]["dev"]


@pytest.mark.parametrize("design", sorted(DESIGNS))
def test_both_passes_give_the_same_fit_and_aliased_columns(force_pass, design):
    spec, rec = DESIGNS[design](5000, 5)
    fits = {}
    for which in PASSES:
        force_pass(which)
        fits[which] = _fit(rec, spec)
    (a, sa), (b, sb) = fits["cells"], fits["records"]
    ca, cb = a.coefficients(), b.coefficients()
    np.testing.assert_array_equal(np.isnan(ca), np.isnan(cb))
    if design == "aliased":
        names = spec.design.names
        assert np.isnan(ca[names.index("d")]) and np.isnan(ca[names.index("aa3")])  # aliased as R would
        assert not np.isnan(ca[names.index("aa2")])
    np.testing.assert_allclose(ca, cb, rtol=1e-10, atol=1e-12, equal_nan=True)
    assert a.iteration == b.iteration and a.converged and b.converged
    np.testing.assert_allclose(sa["mu"], sb["mu"], rtol=1e-12)


def test_a_fit_over_parts_taking_either_pass_equals_one_part(monkeypatch):
    """Partitions decide their pass on their own (here: by the parity of their length)."""
    spec, rec = _aliased_records(6000, 7)
    rec = CodedRecords(rec.codes, rec.values, rec.y, None, rec.prior)
    whole, whole_scores = _fit(rec, spec)
    monkeypatch.setattr(ModelSpec, "cells_pay", lambda self, n_records, n_cells: n_records % 2 == 0)
    cuts = [0, 1000, 2501, 4000, 6000]  # lengths 1000, 1501, 1499, 2000: both passes
    parts = [
        CodedRecords(rec.codes[a:b], rec.values[a:b], rec.y[a:b], None, rec.prior[a:b])
        for a, b in itertools.pairwise(cuts)
    ]
    split, split_scores = _fit(parts, spec)
    np.testing.assert_array_equal(np.isnan(split.coefficients()), np.isnan(whole.coefficients()))
    np.testing.assert_allclose(split.coefficients(), whole.coefficients(), rtol=1e-10, atol=1e-12, equal_nan=True)
    assert split.iteration == whole.iteration
    np.testing.assert_allclose(split_scores["mu"], whole_scores["mu"], rtol=1e-12)
    # identical records (codes and values) get identical scores across the parts and passes
    keys = np.column_stack([rec.codes, rec.values])
    _, group = np.unique(keys, axis=0, return_inverse=True)
    mu = split_scores["mu"]
    first = np.zeros(group.max() + 1)
    first[group[::-1]] = mu[::-1]
    np.testing.assert_array_equal(mu, first[group])
    assert len(np.unique(group)) < len(rec) / 2


@pytest.mark.parametrize("spread", ["radix", "hashed"])
def test_cells_group_the_records_by_their_factor_codes(spread):
    rng = np.random.default_rng(11)
    n = 5000
    high = 4 if spread == "radix" else 200  # 200^3 code combinations: beyond the radix table, hashed
    codes = rng.integers(0, high, size=(n, 3)).astype(np.int32)
    codes[n // 2 :] = codes[: n // 2]  # every combination at least twice
    rec = CodedRecords(codes, np.empty((n, 0)))
    cell, first = rec.cells
    np.testing.assert_array_equal(codes[first[cell]], codes)
    assert rec.n_cells == len(np.unique(codes, axis=0)) <= n // 2
    assert np.all(first[cell] <= np.arange(n))  # a cell's first record
    np.testing.assert_array_equal(np.sort(np.unique(cell)), np.arange(rec.n_cells))


@pytest.mark.parametrize("which", PASSES)
@pytest.mark.parametrize("path", reference.LOGIT, ids=lambda p: p.stem)
def test_logit_matches_synthpop_through_either_pass(force_pass, which, path):
    force_pass(which)
    reference.test_logit_matches_synthpop(path)


def test_the_cost_rule_takes_the_cells_for_few_cells_and_the_records_for_many():
    spec, _ = _aliased_records(10, 1)
    assert spec.cells_pay(1_000_000, 50)
    assert not spec.cells_pay(1_000_000, 1_000_000)  # every record its own cell


def _random_records(n: int, seed: int, weighted: bool = True) -> tuple[ModelSpec, CodedRecords]:
    """Random factors (one with a single level, an ordered one, an unordered one with a level no
    record has), two numerics with zeros and records whose numerics are all zero (their design row
    is the factor part only), every interaction up to three variables; prior weights or none."""
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 5))
    preds = [Predictor("one", ("only",)), Predictor("u"), Predictor("o", tuple(f"o{i}" for i in range(k)), True),
             Predictor("f", ("f1", "f2", "f3", None)), Predictor("v")]  # fmt: skip
    lookups = (np.array([0]), None, rng.permutation(k), np.array([3, 0, 1, 2]), None)
    spec = ModelSpec(Design.build(preds, 2), ("one", "u", "o", "f", "v"), lookups)
    codes = np.column_stack([np.zeros(n), rng.integers(0, k, n), rng.integers(0, 3, n)]).astype(np.int32)
    values = np.where(rng.random((n, 2)) < 0.3, 0.0, rng.normal(size=(n, 2)).round(2))
    values[rng.random(n) < 0.2] = 0.0
    y = (rng.random(n) < 0.5).astype(float)
    return spec, CodedRecords(codes, values, y, None, rng.integers(1, 4, n).astype(float) if weighted else None)


def _dense(spec: ModelSpec, rec: CodedRecords) -> np.ndarray:
    return spec.matrix(rec, 0, len(rec)) if len(rec) else np.zeros((0, spec.design.n_columns))


def _dense_pass(spec: ModelSpec, rec: CodedRecords, beta: np.ndarray | None, kept: np.ndarray) -> tuple:
    """``X'WX``, ``X'Wz`` (the start's) or ``X'W(y - mu)/mu.eta`` and the deviance from the dense design."""
    x = _dense(spec, rec)[:, kept]
    w0 = np.ones(len(rec)) if rec.prior is None else rec.prior
    if beta is None:
        mu = (w0 * rec.y + 0.5) / (w0 + 1)
        eta = np.log(mu / (1 - mu))
    else:
        eta = x @ beta
        mu = 1 / (1 + np.exp(-eta))
    w = w0 * mu * (1 - mu)
    z = (rec.y - mu) / (mu * (1 - mu)) + (eta if beta is None else 0.0)
    dev = -2 * np.sum(w0 * np.where(rec.y > 0, np.log(mu), np.log(1 - mu)))
    return (x * w[:, None]).T @ x, x.T @ (w * z), dev


@pytest.mark.parametrize("weighted", [True, False], ids=["prior", "unweighted"])
@pytest.mark.parametrize("n", [0, 1, 2, 2500])
@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("which", PASSES)
def test_sparse_sums_equal_the_dense_design_on_random_designs(force_pass, which, seed, n, weighted):
    """Either pass's sums (over several blocks of records at 2,500) equal the dense design's, with
    prior weights and without (R's start then depends on the label alone)."""
    spec, rec = _random_records(n, seed, weighted)
    force_pass(which)
    p = spec.design.n_columns
    assert p >= 40 and not any(name.startswith("one") for name in spec.design.names)  # a single level: no column
    kept = np.flatnonzero(np.random.default_rng(seed).random(p) < 0.8)
    beta = np.random.default_rng(seed + 10).normal(scale=0.2, size=len(kept))
    for b, cols in ((None, None), (beta, kept)):
        got = logit_pass(rec, spec, "gram", b, cols)
        g, s, dev = _dense_pass(spec, rec, b, np.arange(p) if cols is None else cols)
        np.testing.assert_allclose(got["g"], g, rtol=1e-12, atol=1e-10)
        np.testing.assert_allclose(got["s"], s, rtol=1e-11, atol=1e-9)
        assert got["dev"] == pytest.approx(dev, rel=1e-12, abs=1e-12)
    scores = logit_pass(rec, spec, "scores", beta, kept)
    np.testing.assert_allclose(scores["mu"], 1 / (1 + np.exp(-(_dense(spec, rec)[:, kept] @ beta))), rtol=1e-13)


@pytest.mark.parametrize("shape", ["single level", "one record", "range ends", "wide"])
def test_radix_cells_number_the_combinations_in_code_order(shape):
    """Cells by their mixed-radix code: numbered as the sorted distinct code combinations, each
    with its first record."""
    rng = np.random.default_rng(5)
    n = {"one record": 1}.get(shape, 3000)
    high = {"single level": [1, 1], "wide": [7, 300, 2]}.get(shape, [3, 5])
    codes = np.column_stack([rng.integers(0, h, n) for h in high]).astype(np.int32)
    if shape == "range ends":
        codes[:5] = [[0, 0], [2, 4], [2, 0], [0, 4], [2, 4]]  # the first and last codes of both columns
    rec = CodedRecords(codes, np.empty((n, 0)))
    cell, first = rec.cells
    distinct, expected = np.unique(codes, axis=0, return_inverse=True)
    np.testing.assert_array_equal(cell, expected.reshape(-1))
    np.testing.assert_array_equal(first, [np.flatnonzero(expected.reshape(-1) == c)[0] for c in range(len(distinct))])


@pytest.mark.parametrize("weighted", [True, False], ids=["prior", "unweighted"])
@pytest.mark.parametrize("which", PASSES)
def test_the_pass_that_ends_the_fit_scores_as_a_scores_pass(force_pass, which, weighted):
    """A gram pass given ``mu_out`` returns the scores a scores pass at its coefficients gives, bit for bit."""
    spec, rec = _random_records(3000, 4, weighted)
    force_pass(which)
    state, mu = IRLS(spec.design.n_columns), np.empty(len(rec))
    while not state.finished:
        mode, beta, kept = state.request()
        res = logit_pass(rec, spec, mode, beta, kept, mu_out=mu)
        state.feed(res)
    assert mode == "gram" and state.converged and state.request()[0] == "scores"
    again = logit_pass(rec, spec, *state.request())
    np.testing.assert_array_equal(res["mu"], again["mu"])
    np.testing.assert_array_equal(res["y"], again["y"])
    assert (res["dev"], res["mu_min"], res["mu_max"]) == (again["dev"], again["mu_min"], again["mu_max"])
    assert (res["w"] is None) == (again["w"] is None) and len(np.unique(res["mu"])) > 100
