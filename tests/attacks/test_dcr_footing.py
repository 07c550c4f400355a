"""``closer_to_training`` on equal footing: a harmless synthesis gives 0.5 whatever the split."""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from pipeline.data.schema import Schema
from pipeline.evaluation.data import as_eval_data
from pipeline.evaluation.execution import Executor
from pipeline.risk.distance.measure import DCRMeasure

SCHEMA = Schema.from_dict(
    {
        "columns": [
            {"name": "g", "type": "factor", "levels": ["a", "b", "c"]},
            {"name": "x", "type": "numeric"},
            {"name": "y", "type": "numeric"},
        ]
    }
)


def _draw(rng: np.random.Generator, n: int) -> pd.DataFrame:
    frame = pd.DataFrame({"g": rng.choice(["a", "b", "c"], n), "x": rng.normal(size=n), "y": rng.exponential(size=n)})
    return SCHEMA.apply(frame, "draw")


def _share(rows, name: str = "closer_to_training") -> float:
    return next(r.value for r in rows if r.measure == name and r.synthetic == "1")


@pytest.mark.parametrize(("n_train", "n_hold"), [(4000, 1000), (1000, 4000)])
def test_an_independent_draw_is_at_one_half_on_equal_footing(n_train, n_hold):
    rng = np.random.default_rng(n_train)
    train, hold, syn = _draw(rng, n_train), _draw(rng, n_hold), _draw(rng, 3000)
    data = as_eval_data(train, [syn], schema=SCHEMA, holdout=hold)
    memory = Executor(policy="memory")
    equal = DCRMeasure({"seed": 3}).run(data, memory).rows()
    # the share also varies with which records are in the two reference sets (not only with the
    # synthetic records the Wilson interval counts): a tolerance rather than the interval
    assert _share(equal) == pytest.approx(0.5, abs=0.05)
    whole = _share(DCRMeasure({"footing": "all"}).run(data, memory).rows())
    assert whole == pytest.approx(n_train / (n_train + n_hold), abs=0.04)  # what "all" shows instead
    # the DCR figures themselves use every training record either way
    assert _share(equal, "dcr_median") == _share(DCRMeasure({"footing": "all"}).run(data, memory).rows(), "dcr_median")


def test_a_copy_of_training_records_is_closer_to_training_on_equal_footing():
    rng = np.random.default_rng(1)
    train, hold = _draw(rng, 4000), _draw(rng, 1000)
    data = as_eval_data(train, [train.sample(2000, random_state=2).reset_index(drop=True)], schema=SCHEMA,
                        holdout=hold)  # fmt: skip
    # a copied record is at distance 0 from itself when it is in the subsample (a quarter of them)
    # and strictly closer than any holdout record (distinct values) in most other cases too
    assert _share(DCRMeasure({}).run(data, Executor(policy="memory")).rows()) > 0.6


def test_the_subsample_is_the_same_on_partitions_and_workers(clients):
    rng = np.random.default_rng(2)
    train, hold, syn = _draw(rng, 1200), _draw(rng, 300), _draw(rng, 500)
    measure = DCRMeasure({"seed": 5})
    want = measure.run(as_eval_data(train, [syn], schema=SCHEMA, holdout=hold), Executor(policy="memory")).rows()

    def lazy(f: pd.DataFrame, parts: int) -> dd.DataFrame:
        return dd.from_pandas(f, npartitions=parts, sort=False)

    data = as_eval_data(lazy(train, 3), [lazy(syn, 2)], schema=SCHEMA, holdout=lazy(hold, 2))
    got = measure.run(data, Executor(clients[1], policy="blocks")).rows()
    assert sorted((r.measure, r.value) for r in got) == sorted((r.measure, r.value) for r in want)


def _categorical(rng: np.random.Generator, n: int) -> pd.DataFrame:
    frame = pd.DataFrame({"g": rng.choice(["a", "b", "c"], n), "x": rng.integers(0, 3, n).astype(float)})
    return SCHEMA.select(["g", "x"]).apply(frame, "draw")


def test_ties_count_half_and_the_interval_comes_from_relabelling():
    """Since issue 32: on categorical data nearly every synthetic record ties, and the strict rule
    (SDMetrics, anonymeter) reads an independent draw far below 0.5; counting ties half puts it at
    0.5 with an interval from relabelling training and holdout records that covers it."""
    rng = np.random.default_rng(4)
    train, hold, syn = _categorical(rng, 2000), _categorical(rng, 500), _categorical(rng, 1000)
    data = as_eval_data(train, [syn], schema=SCHEMA.select(["g", "x"]), holdout=hold)
    memory = Executor(policy="memory")
    half = DCRMeasure({"seed": 1}).run(data, memory).rows()
    strict = DCRMeasure({"seed": 1, "ties": "not_closer", "relabellings": 0}).run(data, memory).rows()
    assert _share(half, "closer_to_training_ties") == 1.0  # 9 combinations: every record has a twin in both
    assert _share(half) == 0.5 and _share(strict) == 0.0
    # nothing tells training from holdout records here: every relabelling gives 0.5 too
    assert _share(half, "closer_to_training_lower") == 0.5 == _share(half, "closer_to_training_upper")
    # a copy can reach only (1 + 1/4) / 2 of the records at 4:1 (the training group is a quarter)
    assert _share(half, "closer_to_training_ceiling") == 0.625


def test_a_copy_of_binned_records_is_detected_with_ties_half_not_with_the_strict_rule():
    """Issue 32: on binned data a memorising synthesis reads far below 0.5 with the strict rule
    (97 % of the copies have a holdout twin); with ties half it is above 0.5, interval included."""
    rng = np.random.default_rng(6)
    train, hold = _draw(rng, 1000), _draw(rng, 1000)
    train["x"], hold["x"] = train["x"].round(1), hold["x"].round(1)  # binned: many ties
    copy = train.sample(1000, random_state=1).reset_index(drop=True)
    data = as_eval_data(train, [copy], schema=SCHEMA, holdout=hold)
    memory = Executor(policy="memory")
    rows = DCRMeasure({"vars": ["g", "x"]}).run(data, memory).rows()
    strict = DCRMeasure({"vars": ["g", "x"], "ties": "not_closer"}).run(data, memory).rows()
    assert _share(rows, "closer_to_training_ceiling") == 1.0  # equal sizes: no subsample
    assert _share(rows, "closer_to_training_ties") == pytest.approx(0.972)
    assert _share(rows) == pytest.approx(0.514) and _share(rows, "closer_to_training_lower") > 0.5
    assert _share(strict) == pytest.approx(0.028) and _share(strict, "closer_to_training_upper") < 0.5
