"""Percentile bootstrap over records for single-set measures (m = 1; pipeline.evaluation.baseline).

Identification risk redraws its (c, T) histograms (its statistics are sums over target records
given the synthetic set); the interval covers the population value in 92-98 % of simulated
samples; the rows are keyed ``summary``/``ci: bootstrap``, equal on any partitioning, and absent
for measures that cannot be redrawn (disclosure) and when m >= 2 (t over sets instead).
"""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.datasets import load_demo
from pipeline.evaluation.baseline import BaselineOptions, evaluate
from pipeline.evaluation.data import as_eval_data
from pipeline.evaluation.execution import Executor
from pipeline.risk.disclosure.measure import DisclosureMeasure
from pipeline.risk.idrisk.matching import histogram
from pipeline.risk.idrisk.measure import IdentificationRiskMeasure
from pipeline.risk.idrisk.result import SetStatistics

MEMORY = Executor(policy="memory")
SCENARIO = {"scenarios": {"income": {"known": ["Urban", "Marital"], "synthesised": ["Income"]}}}


def _ce_one_set(n: int = 1500):
    """CE records with Income moved to another record of the same (Urban, Marital) cell (m = 1)."""
    ce = load_demo("cedata")
    frame = ce.to_pandas().sample(n=n, random_state=11).reset_index(drop=True)
    syn = frame.copy()
    cells = frame.groupby(["Urban", "Marital"], observed=True)["Income"]
    syn["Income"] = cells.transform(lambda s: s.sample(frac=1, random_state=4).to_numpy())
    return frame, syn, ce.schema


def _bootstrap(rows, measure: str, **params) -> dict[str, float]:
    got = {
        r.summary: r.value
        for r in rows
        if r.measure == measure and (r.method or "bootstrap") == "bootstrap" and r.summary is not None
        and all(r.params.get(k) == v for k, v in params.items())
    }  # fmt: skip
    return got


def test_one_set_gets_percentile_bounds_around_its_value():
    frame, syn, schema = _ce_one_set()
    rows = evaluate(
        IdentificationRiskMeasure({**SCENARIO, "radius": 0.05}), as_eval_data(frame, [syn], schema=schema), MEMORY
    ).rows()
    params = {"scenario": "income", "radius": {"Income": 0.05}}
    for name in ("file_risk", "true.rate", "exp.risk", "file_risk_at_max"):
        (value,) = [r.value for r in rows if r.measure == name and r.synthetic == "1" and r.params == params]
        bounds = _bootstrap(rows, name, **params)
        assert set(bounds) == {"mean", "lower95", "upper95"}, name
        assert bounds["mean"] == value
        assert bounds["lower95"] < value < bounds["upper95"], (name, bounds, value)
    # the spread is the binomial one of a share of n records: about ±1.96·sqrt(p(1-p)/n)
    p = next(r.value for r in rows if r.measure == "true.rate" and r.synthetic == "1" and r.params == params)
    b = _bootstrap(rows, "true.rate", **params)
    assert (b["upper95"] - b["lower95"]) / 2 == pytest.approx(1.96 * np.sqrt(p * (1 - p) / len(frame)), rel=0.15)
    bound_rows = [r for r in rows if r.method == "bootstrap"]
    assert bound_rows and all(r.synthetic == "all" for r in bound_rows)


def test_a_sweep_keeps_the_observed_maximising_radius_and_the_rows_are_the_same_on_partitions(clients):
    import dask.dataframe as dd

    frame, syn, schema = _ce_one_set(900)
    measure = IdentificationRiskMeasure({**SCENARIO, "radius_grid": [0.02, 0.05, 0.2]})
    options = BaselineOptions(seed=7, bootstrap=200)
    rows = evaluate(measure, as_eval_data(frame, [syn], schema=schema), MEMORY, options).rows()
    (best,) = [r.params["radius"] for r in rows if r.measure == "file_risk_at_max" and r.synthetic == "1"]
    assert set(_bootstrap(rows, "file_risk_at_max", scenario="income", radius=best)) == {"mean", "lower95", "upper95"}
    syn_parts = [dd.from_pandas(syn, npartitions=2, sort=False)]
    lazy = as_eval_data(dd.from_pandas(frame, npartitions=3, sort=False), syn_parts, schema=schema)
    got = evaluate(measure, lazy, Executor(clients[1], policy="blocks", block_rows=200), options).rows()

    def bounds(rows):
        return sorted((r.measure, r.synthetic, str(r.params), r.value) for r in rows if r.method == "bootstrap")

    assert bounds(rows) and bounds(got) == bounds(rows)


def test_percentile_interval_covers_the_population_value():
    """Targets drawn from a population of (c, T) pairs: the 95 % interval of file risk (mean of
    T/c) and true.rate covers the population value in 92-98 % of 300 samples."""
    rng = np.random.default_rng(2026)
    population = 200_000
    c = rng.geometric(0.35, population) - 1  # many unique and no matches, a long tail
    t = (c > 0) & (rng.random(population) < 0.6)
    truth_file = float(np.mean(np.where(c > 0, t / np.maximum(c, 1), 0.0)))
    truth_true = float(np.mean((c == 1) & t))
    covered = {"file": 0, "true": 0}
    sims, n, replicates = 300, 400, 400
    for _ in range(sims):
        pick = rng.integers(0, population, n)
        stats = SetStatistics.from_histograms(n, [histogram(c[pick], t[pick])])
        reps = stats.resampled(rng, replicates)
        lo, hi = np.quantile(reps.file_risk, [0.025, 0.975])
        covered["file"] += lo <= truth_file <= hi
        lo, hi = np.quantile(reps.true_rate, [0.025, 0.975])
        covered["true"] += lo <= truth_true <= hi
    for name, k in covered.items():
        assert 0.92 <= k / sims <= 0.98, (name, k / sims)


def test_no_bootstrap_where_it_is_not_sound_or_not_needed():
    sd = load_demo("sd2011_subset")
    frame, schema = sd.to_pandas(), sd.schema
    one = as_eval_data(frame.iloc[:800], [frame.iloc[800:1600]], schema=schema)
    rows = evaluate(DisclosureMeasure({"keys": ["sex", "agegr"], "targets": ["depress"]}), one, MEMORY).rows()
    assert not [r for r in rows if r.method == "bootstrap"]  # uniqueness: resampling is not sound
    ce, syn, schema = _ce_one_set(600)
    two = as_eval_data(ce, [syn, syn.sample(frac=1, random_state=2).reset_index(drop=True)], schema=schema)
    rows = evaluate(IdentificationRiskMeasure({**SCENARIO, "radius": 0.05}), two, MEMORY).rows()
    assert not [r for r in rows if r.method == "bootstrap"]  # m = 2: t over sets
    assert [r for r in rows if r.method == "t"]
    off = evaluate(IdentificationRiskMeasure({**SCENARIO, "radius": 0.05}), as_eval_data(ce, [syn], schema=schema),
                   MEMORY, BaselineOptions(bootstrap=0)).rows()  # fmt: skip
    assert not [r for r in off if r.method == "bootstrap"]


def test_replicate_count_is_validated():
    with pytest.raises(ValueError, match="at least 100"):
        BaselineOptions(bootstrap=50)


def test_replicates_are_the_statistics_of_redrawn_histograms():
    """The stacked replicates (sets 1..B) are, set by set, the statistics of the (c, T) histogram
    with its counts redrawn from the multinomial; only a one-set result is redrawn."""
    rng = np.random.default_rng(5)
    c, t = rng.geometric(0.4, 3000) - 1, rng.random(3000) < 0.5
    hc, ht, counts = histogram(c, t)
    stats = SetStatistics.from_histograms(3000, [(hc, ht, counts)])
    reps = stats.resampled(np.random.default_rng(9), 60)
    drawn = np.random.default_rng(9).multinomial(counts.sum(), counts / counts.sum(), size=60)
    assert reps.m == 60 and len(set(reps.s.tolist())) > 1
    for k in range(60):
        one = SetStatistics.from_histograms(3000, [(hc, ht, drawn[k])])
        for name in ("s", "n_true_unique", "n_false_unique", "sum_c", "n_no_match"):
            assert getattr(reps, name)[k] == getattr(one, name)[0], (name, k)
        assert reps.exp_risk[k] == pytest.approx(one.exp_risk[0], rel=1e-12)
    with pytest.raises(ValueError, match="one synthetic set, not 2"):
        SetStatistics.from_histograms(3000, [(hc, ht, counts)] * 2).resampled(rng, 10)
