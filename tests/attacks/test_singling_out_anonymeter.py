"""Singling out side by side with anonymeter 1.1.0 (tests/reference/anonymeter/anonymeter_singling_out_*.json,
made by make_anonymeter_references.py --singling-out in anonymeter's own environment), on the
CEdata and SD2011 slices of the linkability/inference comparison and every column of them.

* Deterministic configuration, counts equal: every univariate candidate predicate (their
  number, and how many single out a training and a control record), and fixed multivariate
  predicates (anonymeter's, from fixed synthetic records and column triples) counted in the
  synthetic set, the training and the control slice.
* Sampled runs over 20 seeds (500 predicates): the mean main, control and baseline success
  counts of each case compared with Welch's t-test at the 1 % level (false-alarm rate 1 % per
  comparison, twelve comparisons: about 11 % for the file, but both sides are seeded, so the
  outcome is fixed).  Where neither side varies (SD2011 has 99 univariate candidates, all used,
  and a control slice of 1,000 records, which anonymeter's size correction subsamples in full)
  the values must be equal.  A planted change — numeric variables read as factors (equality
  predicates instead of ranges) — must be detected.
"""

from __future__ import annotations

import json
from functools import cache

import numpy as np
import pytest
from scipy.stats import ttest_ind

from pipeline.evaluation.execution import Executor
from pipeline.risk.attacks import singling
from pipeline.risk.attacks.measure import SinglingOutMeasure
from pipeline.risk.attacks.predicates import count_matches
from tests.attacks.test_attacks_anonymeter import _data
from tests.reference import reference_path

ALPHA = 0.01
MEMORY = Executor(policy="memory")


@cache
def _reference(name: str) -> dict:
    return json.loads(reference_path(f"anonymeter/anonymeter_singling_out_{name}.json").read_text())


def _records(name: str):
    """The measure's columns and the distinct records of the synthetic set, training and control slices."""
    data = _data(name)
    columns = SinglingOutMeasure().columns(data)
    return columns, {
        role: singling.synthetic_records(MEMORY, frame, columns)
        for role, frame in (("syn", data.synthetic[0]), ("train", data.original), ("control", data.holdout))
    }


@pytest.mark.parametrize("name", ["cedata", "sd2011"])
def test_fixed_predicates_give_anonymeters_counts(name):
    fixed = _reference(name)["fixed"]
    columns, records = _records(name)
    assert {role: len(r) for role, r in records.items()} == fixed["distinct"]
    rng = np.random.default_rng(0)
    univariate = singling.univariate_predicates(records["syn"], columns, 10**9, rng)
    assert len(univariate) == fixed["univariate_predicates"]
    for role in ("train", "control"):
        role_name = "main" if role == "train" else "control"
        assert int(np.sum(count_matches(records[role], univariate) == 1)) == fixed[f"univariate_{role_name}"]
    chosen = np.array([[columns.names.index(c) for c in cols] for cols in fixed["multivariate_cols"]])
    medians = singling.medians(records["syn"])
    predicates = singling._from_records(records["syn"], columns, np.array(fixed["multivariate_rows"]), chosen, medians)
    for role, expected in fixed["multivariate_counts"].items():
        np.testing.assert_array_equal(count_matches(records[role], predicates, None), expected)
    # the comparison is not empty: counts from none to many records, some predicates single out
    assert all(len(set(counts)) > 30 for counts in fixed["multivariate_counts"].values())
    assert min(sum(c == 1 for c in counts) for counts in fixed["multivariate_counts"].values()) > 0
    assert fixed["univariate_main"] > 0 and fixed["univariate_control"] > 0


def _ours(case: dict) -> dict[str, np.ndarray]:
    data = _data(case["data"])
    counts: dict[str, list[float]] = {"main": [], "control": [], "baseline": []}
    extra = {"n_cols": case["n_cols"]} if "n_cols" in case else {}
    # anonymeter's size correction of the control count: equal footing is the default since issue
    # 32 (the control slice is smaller than the training slice here)
    extra["footing"] = "size_corrected"
    for run in case["runs"]:
        measure = SinglingOutMeasure(mode=case["mode"], n_attacks=500, seed=run["seed"], **extra)
        values = {r.measure: r.value for r in measure.run(data, MEMORY).rows()}
        for role in counts:
            counts[role].append(values[f"{role}_successes"])
    return {role: np.array(v) for role, v in counts.items()}


def _p_value(ours: np.ndarray, theirs: np.ndarray) -> float:
    """Welch's t-test; where neither side varies (every candidate predicate used, a control set
    of at most 1,000 records) the values must be equal: p 1 if they are, else 0."""
    if np.ptp(ours) == 0 and np.ptp(theirs) == 0:
        return float(np.isclose(ours[0], theirs[0], rtol=1e-9))
    return float(ttest_ind(ours, theirs, equal_var=False).pvalue)


def _p_values(case: dict) -> dict[str, float]:
    ours = _ours(case)
    return {
        role: _p_value(ours[role], np.array([r[role] for r in case["runs"]]))
        for role in ("main", "control", "baseline")
    }


@pytest.mark.slow
@pytest.mark.parametrize("data", ["cedata", "sd2011"])
@pytest.mark.parametrize("mode", ["univariate", "multivariate"])
def test_rates_are_indistinguishable_from_anonymeters(data, mode):
    reference = _reference(data)
    assert reference["n_attacks"] == 500
    p = _p_values(reference["cases"][f"{data}_{mode}"])
    assert min(p.values()) > ALPHA, p


@pytest.mark.slow
def test_numeric_variables_read_as_factors_are_detected(monkeypatch):
    monkeypatch.setattr(singling.Columns, "is_numeric", property(lambda self: np.zeros(len(self.names), dtype=bool)))
    p = _p_values(_reference("cedata")["cases"]["cedata_multivariate"])
    assert p["main"] < ALPHA and p["control"] < ALPHA, p
