"""Sampled inference attacks over 30 seeds side by side with anonymeter 1.1.0's (vendored counts,
tests/reference/anonymeter/anonymeter_repeated.json): the mean success counts of the main and of
the control attack are compared with Welch's t-test at the 1 % level (false-alarm rate 1 % per
comparison, four comparisons: about 4 % for the file).  Both sides are seeded, so the test is
deterministic.  A planted change — numeric differences not scaled by their range, a different
distance — must be detected."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import ttest_ind

from pipeline.evaluation.execution import Executor
from pipeline.risk.attacks import compute
from pipeline.risk.attacks.measure import InferenceMeasure
from pipeline.risk.nearest.compute import DistanceSpace
from tests.attacks.test_attacks_anonymeter import _data
from tests.reference import reference_path

REFERENCE = json.loads(reference_path("anonymeter/anonymeter_repeated.json").read_text())
ALPHA = 0.01
MEMORY = Executor(policy="memory")


def _ours(case: dict) -> dict[str, np.ndarray]:
    data = _data(case["data"])
    counts: dict[str, list[float]] = {"main": [], "control": []}
    for run in case["runs"]:
        measure = InferenceMeasure(
            aux_cols=case["aux_cols"], secret=case["secret"], n_attacks=REFERENCE["n_attacks"], seed=run["seed"]
        )
        values = {r.measure: r.value for r in measure.run(data, MEMORY).rows()}
        for role in counts:
            counts[role].append(values[f"{role}_successes"])
    return {role: np.array(v) for role, v in counts.items()}


def _p_values(case: dict) -> dict[str, float]:
    ours = _ours(case)
    return {
        role: float(ttest_ind(ours[role], [r[role] for r in case["runs"]], equal_var=False).pvalue)
        for role in ("main", "control")
    }


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(REFERENCE["cases"]))
def test_rates_are_indistinguishable_from_anonymeters(name):
    p = _p_values(REFERENCE["cases"][name])
    assert min(p.values()) > ALPHA, p


@pytest.mark.slow
def test_a_different_distance_is_detected(monkeypatch):
    original = compute.space_from_ranges

    def unscaled(*args, **kwargs) -> DistanceSpace:
        space = original(*args, **kwargs)
        return DistanceSpace(space.factors, space.numerics, np.ones_like(space.scale), space.missing_codes)

    monkeypatch.setattr(compute, "space_from_ranges", unscaled)
    p = _p_values(REFERENCE["cases"]["cedata_infer_tenure"])
    assert p["main"] < ALPHA and p["control"] < ALPHA, p
