"""Bad input: clear errors naming the parameter or variable, never a silent wrong number."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pipeline.data.schema import Schema, Variable
from pipeline.errors import CompatibilityError, DataError, ParameterError
from pipeline.risk.idrisk import identification_risk, radius_sweep


@pytest.fixture
def frames():
    rng = np.random.default_rng(1)
    n = 30
    orig = pd.DataFrame(
        {
            "sex": pd.Categorical(rng.choice(["F", "M"], n)),
            "age": rng.integers(20, 60, n).astype(float),
            "income": rng.lognormal(5, 1, n),
        }
    )
    syn = orig.copy()
    syn["income"] = rng.permutation(orig["income"].to_numpy())
    return orig, syn


@pytest.mark.parametrize(
    ("radius", "percentage", "message"),
    [
        (-0.1, True, "must be a finite number >= 0"),
        ({"income": -1.0}, False, "must be a finite number >= 0"),
        (float("nan"), True, "finite"),
        (1.0, True, "must be < 1"),
        (10, True, "percentage=False"),
        ({"sex": 0.1, "income": 0.1}, True, "categorical variable 'sex'"),
        ({"income": 0.1, "other": 0.1}, True, "'other'"),
        ({"age": 0.1}, True, "no radius for continuous variable(s) 'income'"),
        ([0.1, 0.1, 0.1], True, "expected 2, got 3"),
        ("0.1", True, "must be a number"),
        (True, True, "must be a number"),
    ],
)
def test_bad_radius(frames, radius, percentage, message):
    orig, syn = frames
    with pytest.raises(ParameterError, match=message.replace("(", r"\(").replace(")", r"\)")):
        identification_risk(orig, [syn], ["sex", "age"], ["income"], radius, percentage=percentage)


def test_absolute_radius_may_exceed_one(frames):
    orig, syn = frames
    res = identification_risk(orig, [syn], ["sex"], ["income"], 50.0, percentage=False)
    assert res.c.shape == (30, 1)


def test_zero_radius_never_matches_open_but_is_exact_when_closed(frames):
    """The R package returns c = 0 for every record with a radius of 0 and open intervals (nothing
    matches, not even a record's own value); sdc-pipeline refuses that setting (issue 23)."""
    orig, _ = frames
    with pytest.raises(ParameterError, match="a radius of 0 matches nothing"):
        identification_risk(orig, [orig], ["sex"], ["income"], 0.0)
    closed = identification_risk(orig, [orig], ["sex"], ["income"], 0.0, interval="closed")
    assert (closed.c >= 1).all() and closed.T.all()


@pytest.mark.parametrize(
    ("known", "syn", "message"),
    [
        (["sex", "income"], ["income"], "both known and synthesised"),
        (["sex", "sex"], ["income"], "more than once"),
        (["sex"], [], "at least one"),
        (["nope"], ["income"], "'nope' not found"),
    ],
)
def test_bad_variables(frames, known, syn, message):
    orig, s = frames
    with pytest.raises(ParameterError, match=message):
        identification_risk(orig, [s], known, syn, 0.1)


def test_bad_options(frames):
    orig, syn = frames
    with pytest.raises(ParameterError, match="interval"):
        identification_risk(orig, [syn], ["sex"], ["income"], 0.1, interval="half-open")
    with pytest.raises(ParameterError, match="na_action"):
        identification_risk(orig, [syn], ["sex"], ["income"], 0.1, na_action="drop")
    with pytest.raises(ParameterError, match="at least one synthetic"):
        identification_risk(orig, [], ["sex"], ["income"], 0.1)


def test_row_counts_must_agree(frames):
    orig, syn = frames
    with pytest.raises(CompatibilityError, match="row-aligned"):
        identification_risk(orig, [syn.iloc[:-1]], ["sex"], ["income"], 0.1)


def test_synthetic_missing_variable(frames):
    orig, syn = frames
    with pytest.raises(CompatibilityError, match="'income' are in the original but not in synthetic set 1"):
        identification_risk(orig, [syn.drop(columns=["income"])], ["sex"], ["income"], 0.1)


def test_missing_continuous_values(frames):
    orig, syn = frames
    syn.loc[syn.index[3], "income"] = np.nan
    with pytest.raises(DataError, match=r"synthetic set 1 .*'income' \(1 records\)"):
        identification_risk(orig, [syn], ["sex"], ["income"], 0.1)
    res = identification_risk(orig, [syn], ["sex"], ["income"], 0.1, na_action="no_match")
    assert not res.T[3, 0]
    orig.loc[orig.index[4], "income"] = np.inf
    res = identification_risk(orig, [syn], ["sex"], ["income"], 0.1, na_action="no_match")
    assert res.c[4, 0] == 0
    with pytest.raises(DataError, match="original data"):
        identification_risk(orig, [syn], ["sex"], ["income"], 0.1)


def test_schema_decides_kinds(frames):
    orig, syn = frames
    orig["code"] = 2.0  # an integer-coded category: radius-matched unless the schema says factor
    syn["code"] = 2.0
    schema = Schema(
        (
            Variable("sex", "factor", ("F", "M")),
            Variable("age", "integer"),
            Variable("income", "numeric"),
            Variable("code", "factor", ("2",)),
        )
    )
    with pytest.raises(ParameterError, match="categorical variable 'code'"):
        identification_risk(orig, [syn], ["code"], ["income"], {"code": 0.1, "income": 0.1}, schema=schema)
    res = identification_risk(orig, [syn], ["code"], ["income"], 0.1, schema=schema)
    assert res.plan.categorical == ("code",) and res.plan.continuous == ("income",)


def test_bad_grids(frames):
    orig, syn = frames
    with pytest.raises(ParameterError, match="repeated"):
        radius_sweep(orig, [syn], ["sex"], ["income"], grid=[0.1, 0.1])
    with pytest.raises(ParameterError, match="empty"):
        radius_sweep(orig, [syn], ["sex"], ["income"], grid=[])
    with pytest.raises(ParameterError, match="categorical"):
        radius_sweep(orig, [syn], ["sex"], ["income"], grid={"sex": [0.1]})
    with pytest.raises(ParameterError, match="no radius for continuous variable"):
        radius_sweep(orig, [syn], ["sex", "age"], ["income"], grid=[0.1, 0.2])
    with pytest.raises(ParameterError, match="criterion"):
        radius_sweep(orig, [syn], ["sex"], ["income"], grid=[0.1], criterion="max")


def test_a_zero_radius_with_open_intervals_is_refused_with_how_to_match_exactly():
    """Issue 23: `radius: {x: 0}` used to match nothing (file risk 0.0000, r* at the grid edge)."""
    from pipeline.errors import ParameterError
    from pipeline.risk.idrisk.measure import IdentificationRiskMeasure

    scenario = {"s": {"known": ["sex", "age"], "synthesised": ["income"]}}
    for params in (
        {"scenarios": scenario, "radius": {"age": 0, "income": 0.1}},
        {"scenarios": scenario, "radius": 0.1, "radius_grid": {"income": [0.0, 0.1]}},
    ):
        with pytest.raises(ParameterError, match=r"a radius of 0 matches nothing.*set interval: closed"):
            IdentificationRiskMeasure(params)
    closed = IdentificationRiskMeasure(
        {"scenarios": scenario, "radius": {"age": 0, "income": 0.1}, "interval": "closed"}
    )
    assert closed.params.radius == {"age": 0.0, "income": 0.1}


def test_exact_variables_take_no_radius_and_belong_to_a_scenario(frames):
    from pipeline.risk.idrisk.measure import IdentificationRiskMeasure

    scenario = {"s": {"known": ["sex", "age"], "synthesised": ["income"]}}
    with pytest.raises(ParameterError, match=r"'age' is matched exactly .*also given a radius"):
        IdentificationRiskMeasure({"scenarios": scenario, "radius": {"age": 0.1, "income": 0.1}, "exact": ["age"]})
    with pytest.raises(ParameterError, match="'age' is matched exactly"):
        IdentificationRiskMeasure(
            {"scenarios": {"s": {**scenario["s"], "radius_grid": {"age": [0.1]}}}, "radius": 0.1, "exact": ["age"]}
        )
    with pytest.raises(ParameterError, match="exact names 'wage', which no scenario uses"):
        IdentificationRiskMeasure({"scenarios": scenario, "radius": 0.1, "exact": ["wage"]})
    with pytest.raises(ParameterError, match=r"a radius of 0 matches nothing.*exact: \[variable\]"):
        IdentificationRiskMeasure({"scenarios": scenario, "radius": {"age": 0, "income": 0.1}})
    orig, syn = frames
    res = identification_risk(orig, [syn], ["sex", "age"], ["income"], 0.1, exact=["age"])
    assert res.radius == {"income": 0.1}


def test_no_match_reports_the_share_of_records_left_out_of_the_matching(frames):
    """Issue 23 (SLID: 44 % of the records had a missing wage): the share is a row, per scenario."""
    from pipeline.evaluation.data import as_eval_data
    from pipeline.evaluation.execution import Executor
    from pipeline.risk.idrisk.measure import IdentificationRiskMeasure

    orig, syn = frames
    orig.loc[orig.index[:6], "income"] = np.nan
    orig.loc[orig.index[5:9], "age"] = np.nan  # one record has both
    syn.loc[syn.index[10], "income"] = np.nan  # a synthetic record matched by nothing: not a target left out
    scenarios = {
        "income": {"known": ["sex"], "synthesised": ["income"]},
        "both": {"known": ["sex", "age"], "synthesised": ["income"]},
    }
    params = {"scenarios": scenarios, "radius": 0.1, "na_action": "no_match"}
    res = IdentificationRiskMeasure(params).run(as_eval_data(orig, [syn]), Executor(policy="memory"))
    shares = {r.params["scenario"]: r.value for r in res.rows() if r.measure == "excluded_share"}
    assert shares == {"income": 6 / 30, "both": 9 / 30}
    assert {r.synthetic for r in res.rows() if r.measure == "excluded_share"} == {"original"}
    assert res.to_dict()["scenarios"]["both"]["excluded_share"] == 9 / 30
    with pytest.raises(DataError, match="set na_action: no_match"):
        IdentificationRiskMeasure({**params, "na_action": "error"}).run(as_eval_data(orig, [syn]))
    kept = orig.notna().all(axis=1) & syn.notna().all(axis=1)
    plain = IdentificationRiskMeasure({**params, "na_action": "error"}).run(as_eval_data(orig[kept], [syn[kept]]))
    assert not [r for r in plain.rows() if r.measure == "excluded_share"]
