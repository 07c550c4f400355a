"""Singling out: predicate counts against a brute force, the attack's edge cases (a copy of the
training records, an independent draw, a small control set, all-categorical and all-numeric
data), seeding, and the same rows on 1/3 partitions and 1/2 workers with a holdout."""

from __future__ import annotations

import warnings

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from pipeline.errors import ParameterError
from pipeline.evaluation.execution import Executor
from pipeline.risk.attacks.api import singling_out
from pipeline.risk.attacks.predicates import EQ, GE, GT, LE, LT, NE, NOT_NULL, NULL, Predicates, count_matches
from pipeline.risk.attacks.singling import size_corrected
from tests.attacks.test_attacks import MEMORY, _cedata, _values

CASES = [("univariate", {}), ("multivariate", {"n_cols": 3})]


def _brute_force(records: np.ndarray, p: Predicates) -> np.ndarray:
    """Every predicate checked on every record, one condition at a time (polars' rules)."""
    ok = np.ones((len(p), len(records)), dtype=bool)
    for j in range(p.columns.shape[1]):
        used = p.columns[:, j] >= 0
        x = records[:, np.maximum(p.columns[:, j], 0)].T  # (q, n)
        v = p.values[:, j][:, None]
        op = p.ops[:, j][:, None]
        with np.errstate(invalid="ignore"):
            compared = (
                np.select(
                    [op == EQ, op == NE, op == GE, op == LE, op == GT, op == LT],
                    [x == v, x != v, x >= v, x <= v, x > v, x < v],
                    False,
                )
                & ~np.isnan(x)
                & ~np.isnan(v)
            )
        hit = np.where(op == NULL, np.isnan(x), np.where(op == NOT_NULL, ~np.isnan(x), compared))
        ok &= np.where(used[:, None], hit, True)
    return ok.sum(axis=1)


def test_counts_equal_a_brute_force():
    rng = np.random.default_rng(5)
    n, p, q = 600, 5, 3000
    records = rng.integers(0, 6, size=(n, p)).astype(float)
    records[:, 3] = rng.normal(size=n).round(1)
    records[rng.random((n, p)) < 0.05] = np.nan
    columns = np.argsort(rng.random((q, p)), axis=1)[:, :3]
    columns[rng.random((q, 3)) < 0.2] = -1  # fewer conditions
    columns[:, 0] = np.maximum(columns[:, 0], 0)
    values = records[rng.integers(0, n, size=(q, 1)), np.maximum(columns, 0)]
    values[rng.random((q, 3)) < 0.1] += 0.5  # values not in the data
    predicates = Predicates(columns, rng.integers(0, 8, size=(q, 3)).astype(np.int8), values)
    exact = _brute_force(records, predicates)
    assert (exact == 1).sum() > 50 and (exact == 0).sum() > 50 and (exact > 100).sum() > 50
    np.testing.assert_array_equal(count_matches(records, predicates, None), exact)
    np.testing.assert_array_equal(count_matches(records, predicates, 2), np.minimum(exact, 2))


def test_size_correction_is_one_at_equal_sizes_and_grows_towards_a_larger_training_set():
    counts = np.array([1, 1, 1, 0, 2, 5, 1])
    assert size_corrected(counts, 1000, 1000) == 4.0
    assert size_corrected(np.array([0, 3]), 500, 2000) == 0.0
    # a predicate matching one record in a set of 2000 matches about two in one of 4000: fewer single out
    bigger = size_corrected(np.r_[np.ones(300), np.full(300, 3)].astype(int), 2000, 4000)
    assert 0 < bigger < 300


@pytest.mark.parametrize(("mode", "extra"), CASES)
def test_a_copy_of_the_training_records_has_risk_near_one(mode, extra):
    train, hold, _, schema = _cedata()
    got = _values(singling_out(train, [train.copy()], holdout=hold, schema=schema, executor=MEMORY, mode=mode, **extra))
    # every predicate singles out its synthetic record, which is a training record
    assert got["predicates"] == 500 and got["main_successes"] == 500
    assert got["risk"] > 0.5 and got["risk_lower"] > 0.4 and got["baseline_beats_main"] == 0.0


@pytest.mark.parametrize(("mode", "extra"), CASES)
def test_an_independent_draw_has_a_risk_interval_covering_zero(mode, extra):
    train, hold, other, schema = _cedata()
    got = _values(singling_out(train, [other], holdout=hold, schema=schema, executor=MEMORY, mode=mode, **extra))
    assert got["risk_lower"] == 0.0 and got["main_successes"] > 5
    assert abs(got["main_rate"] - got["control_rate"]) < 3 * (got["main_rate_upper"] - got["main_rate"])


def test_a_control_set_smaller_than_n_attacks_is_rescaled():
    # anonymeter's size correction, an option since issue 32 (equal footing is the default)
    train, hold, other, schema = _cedata()
    small = hold.iloc[:150]
    corrected = {"mode": "univariate", "footing": "size_corrected"}
    got = _values(singling_out(train, [other], holdout=small, schema=schema, executor=MEMORY, **corrected))
    raw = _values(singling_out(train, [other], holdout=train, schema=schema, executor=MEMORY, **corrected))
    assert got["control_attacks"] == 500 and got["main_attacks"] == 500
    assert got["main_successes"] == raw["main_successes"]
    # predicates matching one of 150 records mostly match several of 1,800: the count is scaled down
    assert 0 <= got["control_successes"] < raw["control_successes"]
    assert 0 <= got["risk_lower"] <= got["risk"] <= got["risk_upper"] <= 1


def test_equal_footing_counts_the_main_attack_in_a_training_subsample_of_the_holdouts_size():
    """Since issue 32: with a holdout a quarter of the training size, the size correction
    quarters the control count of an independent draw and reports risk; on equal footing the
    main attack meets as many training records as the control attack meets holdout records."""
    train, hold, other, schema = _cedata()
    small = hold.iloc[:450]
    params = {"mode": "multivariate", "n_attacks": 300, "max_attempts": 30_000}
    equal = _values(singling_out(train, [other], holdout=small, schema=schema, executor=MEMORY, **params))
    corrected = _values(
        singling_out(train, [other], holdout=small, schema=schema, executor=MEMORY, footing="size_corrected", **params)
    )
    assert corrected["control_successes"] < 0.5 * equal["control_successes"]
    assert corrected["risk_lower"] > 0  # a false "adds risk"
    assert equal["risk_lower"] == 0 and equal["main_successes"] < corrected["main_successes"]
    # the subsample is seeded: the same rows again, other ones with another seed
    again = _values(singling_out(train, [other], holdout=small, schema=schema, executor=MEMORY, **params))
    assert again == equal


@pytest.mark.parametrize("cols", [["Urban", "Tenure", "Educ", "Marital"], ["Age", "Expenditure", "Income"]])
@pytest.mark.parametrize(("mode", "extra"), CASES)
def test_all_categorical_and_all_numeric(cols, mode, extra):
    # few 3-factor predicates single out a record: max_attempts bounds the search (default 10M, anonymeter's)
    extra = {**extra, "max_attempts": 20_000}
    train, hold, other, schema = _cedata()
    got = _values(
        singling_out(train, [other], holdout=hold, schema=schema, executor=MEMORY, cols=cols, mode=mode, **extra)
    )
    assert 0 <= got["main_successes"] <= got["predicates"] <= 500
    assert 0 <= got["risk"] <= 1 and got["baseline_attacks"] == 500
    # no level of a factor is found once in the synthetic set: no univariate predicate, rates 0, an answer
    assert (got["predicates"] == 0) == (mode == "univariate" and cols[0] == "Urban")
    copy = _values(
        singling_out(train, [train.copy()], holdout=hold, schema=schema, executor=MEMORY, cols=cols, mode=mode, **extra)
    )
    assert copy["main_successes"] == copy["predicates"]


def test_seeded_and_parameter_errors():
    train, hold, other, schema = _cedata()
    runs = [
        singling_out(train, [other], holdout=hold, schema=schema, executor=MEMORY, seed=s, n_attacks=200).tidy()
        for s in (1, 1, 2)
    ]
    pd.testing.assert_frame_equal(runs[0], runs[1])
    assert not runs[0]["value"].equals(runs[2]["value"])
    with pytest.raises(ParameterError, match="n_cols = 3 exceeds the 2 variable"):
        singling_out(train, [other], schema=schema, executor=MEMORY, cols=["Age", "Urban"])
    with pytest.raises(ParameterError, match="mode"):
        singling_out(train, [other], schema=schema, executor=MEMORY, mode="bivariate")


def test_max_attempts_caps_the_predicates():
    train, _hold, other, schema = _cedata()
    with pytest.warns(UserWarning, match=r"fewer than n_attacks = 500 predicates .* max_attempts = 300 \(set 1: \d+\)"):
        capped = _values(singling_out(train, [other], schema=schema, executor=MEMORY, max_attempts=300))
    assert capped["predicates"] <= 300 and capped["main_attacks"] == 500
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every predicate found: no warning
        free = _values(singling_out(train, [other], schema=schema, executor=MEMORY))
    assert free["predicates"] == 500 and free["main_successes"] >= capped["main_successes"]


@pytest.mark.parametrize("mode", ["univariate", "multivariate"])
def test_same_rows_on_partitions_and_workers_with_a_holdout(mode, clients):
    train, hold, other, schema = _cedata()
    # duplicated records across partitions: deduplicated wherever they are
    train = pd.concat([train, train.iloc[:300]], ignore_index=True)
    params = {"mode": mode, "n_attacks": 300, "cols": ["Age", "Urban", "Tenure", "Educ", "Income"], "seed": 4}
    reference = singling_out(train, [other, train], holdout=hold, schema=schema, executor=MEMORY, **params).tidy()
    for client, parts in ((clients[0], 1), (clients[0], 3), (clients[1], 3), (clients[1], 1)):
        frames = [dd.from_pandas(f, npartitions=parts, sort=False) for f in (train, other, hold)]
        executor = Executor(client, policy="blocks", block_rows=300)
        got = singling_out(
            frames[0], [frames[1], frames[0]], holdout=frames[2], schema=schema, executor=executor, **params
        ).tidy()
        pd.testing.assert_frame_equal(got, reference)


def test_report_section_shows_rates_risk_and_the_not_informative_warning():
    from pipeline.report.markup import blocks_html
    from pipeline.risk.attacks.compute import AttackCounts
    from pipeline.risk.attacks.result import AttackResult, attack_rows
    from pipeline.risk.attacks.section import NOT_INFORMATIVE, attack_section

    params = {"mode": "univariate", "cols": ["Age"]}
    informative = attack_rows("1", AttackCounts(500, 200, 500, 20.0, 500, 10), 0.95, params)
    useless = attack_rows("2", AttackCounts(500, 10, 500, 9.0, 500, 30), 0.95, params)
    tidy = AttackResult("singling_out", tuple(informative + useless)).tidy()
    results = tidy.assign(dataset="cedata", source="", repetition=0, measure_name="so", family="attacks")
    parts = [blocks_html([b]) for b in attack_section(results)]
    text = "\n".join(parts)
    assert text.count(NOT_INFORMATIVE) == 1 and "synthetic set 2: the baseline" in text
    assert "<figure>" in parts[0] and "attention" in text and "pass" in text
    # the risk with its interval, as the rows give it
    risk = {r.synthetic: r.value for r in informative + useless if r.measure == "risk"}
    assert f"{risk['1']:.4g} [" in text


def test_size_correction_of_a_near_linear_curve_converges() -> None:
    """One predicate of 200 singles out a record of a 1,114-record holdout against 4,457 training
    records (the demo's CEdata split): the expected counts grow linearly over the fitted sizes,
    fitted by w -> 0, which the default 200 evaluations did not reach (an error before)."""
    counts = np.zeros(200)
    counts[0] = 1
    corrected = size_corrected(counts, 1114, 4457)
    assert corrected == pytest.approx(4457 / 1114, rel=0.03)
