"""The measure: Params validation, schema checks, rows (incl. the r* decision), to_dict, the plots."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure
from pydantic import ValidationError

from pipeline.data.dataset import Dataset
from pipeline.errors import ParameterError
from pipeline.evaluation.base import TIDY_COLUMNS, Row
from pipeline.evaluation.data import as_eval_data
from pipeline.evaluation.execution import Executor
from pipeline.risk.idrisk import plots
from pipeline.risk.idrisk.measure import IdentificationRiskMeasure
from pipeline.risk.idrisk.params import IdentificationRiskParams
from pipeline.risk.idrisk.plan import MatchPlan, RadiusGrid
from pipeline.risk.idrisk.result import RadiusSweepResult, SetStatistics


@pytest.fixture(scope="module")
def ce_datasets(load_ce, ce_schema):
    orig = Dataset.from_pandas(load_ce("data/cedata.csv"), ce_schema, name="cedata")
    syns = [
        Dataset.from_pandas(load_ce(f"data/cedata_syn_incexp_{k}.csv"), ce_schema, name=f"syn{k}") for k in range(1, 5)
    ]
    return orig, syns


PARAMS = {
    "scenarios": {
        "income": {"known": ["Age", "Urban", "Marital"], "synthesised": ["Income"]},
        "incexp": {"known": ["Age", "Urban", "Marital"], "synthesised": ["Expenditure", "Income"]},
        "grid2": {
            "known": ["Urban", "Marital"],
            "synthesised": ["Expenditure", "Income"],
            "radius_grid": {"Income": [0.05, 0.1], "Expenditure": [0.1, 0.2]},
        },
        "fixed": {"known": ["Urban"], "synthesised": ["Income"], "radius": 0.1, "radius_grid": None},
        "exact": {"known": ["Urban", "Marital"], "synthesised": ["Tenure"], "radius_grid": None},
    },
    "radius": {"Age": 0.1},
    "radius_grid": [0.05, 0.1, 0.2],
    "sets_per_repetition": 2,
}


def _scenario(**kw):
    return {"scenarios": {"s": {"known": ["Age", "Urban"], "synthesised": ["Income"], **kw}}}


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({**PARAMS, "unknown": 1}, "unknown"),
        ({**PARAMS, "n_blocks": 4}, "n_blocks"),  # the executor decides blocks, not the measure
        ({"scenarios": {}}, "scenarios"),
        ({"scenarios": {"a=b": {"known": [], "synthesised": ["x"]}}}, "scenario names"),
        ({**PARAMS, "interval": "half"}, "interval"),
        ({**PARAMS, "criterion": "max"}, "criterion"),
        (_scenario(radius=-0.1), "finite number >= 0"),
        (_scenario(radius={"Age": float("inf"), "Income": 0.1}), "finite number >= 0"),
        (_scenario(radius="0.1"), "must be a number"),
        (_scenario(radius=1.5), "must be < 1"),
        ({**_scenario(radius=0.1), "radius_grid": [0.1, 2.0]}, "percentage=False"),
        (_scenario(radius_grid=[0.1, 0.1]), "repeated"),
        (_scenario(radius_grid=[]), "empty"),
        (_scenario(radius_grid={}), "empty"),
        (_scenario(radius={"Tenure": 0.1}), "'Tenure'"),
        (_scenario(radius_grid={"Tenure": [0.1]}), "'Tenure'"),
        ({**_scenario(), "radius": {"Expenditure": 0.1}}, "no scenario uses"),
        ({**_scenario(), "radius_grid": {"Expenditure": [0.1]}}, "scenario 's' neither"),
        ({"scenarios": {"s": {"known": ["Age"], "synthesised": []}}}, "at least one"),
        ({"scenarios": {"s": {"known": ["Age", "Age"], "synthesised": ["Income"]}}}, "more than once"),
        ({"scenarios": {"s": {"known": ["Income"], "synthesised": ["Income"]}}}, "both known and synthesised"),
    ],
)
def test_parameter_checks_are_the_model(params, message):
    with pytest.raises(ValidationError, match=message):
        IdentificationRiskParams.model_validate(params)
    with pytest.raises(ParameterError, match=message):
        IdentificationRiskMeasure(params)


def test_absolute_radii_may_exceed_one_and_variables_are_declared():
    params = IdentificationRiskParams.model_validate(
        {**_scenario(radius={"Age": 2, "Income": 500.0}, radius_grid=[100, 1000]), "percentage": False}
    )
    assert params.variables() == ["Age", "Urban", "Income"]
    assert IdentificationRiskMeasure(PARAMS).params.variables() == [
        "Age",
        "Urban",
        "Marital",
        "Income",
        "Expenditure",
        "Tenure",
    ]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (_scenario(radius_grid=[0.1, 0.2]), "scenario 's': no radius for continuous variable.*'Age'"),
        (_scenario(radius={"Urban": 0.1, "Age": 0.1, "Income": 0.1}), "categorical variable 'Urban'"),
        (_scenario(radius_grid={"Urban": [0.1]}), "radius grid given for categorical variable 'Urban'"),
        (_scenario(radius=[0.1, 0.1, 0.1]), "expected 2, got 3"),
        ({**_scenario(radius=0.1), "sets_per_repetition": 3}, "does not divide the 4 synthetic sets"),
        (
            {"scenarios": {"s": {"known": ["Urban"], "synthesised": ["Tenure"], "radius_grid": [0.1]}}},
            "at least one continuous",
        ),
    ],
)
def test_schema_checks_run_in_check(ce_datasets, params, message):
    """What needs the schema fails in ``check`` (so ``validate`` catches it), before any work."""
    orig, syns = ce_datasets
    measure = IdentificationRiskMeasure(params)
    with pytest.raises(ParameterError, match=message):
        measure.check(as_eval_data(orig, syns))


def _rows(result, measure: str, **params) -> list[Row]:
    return [r for r in result.rows() if r.measure == measure and all(r.params.get(k) == v for k, v in params.items())]


def test_rows_to_dict_and_plots(ce_datasets, tmp_path):
    orig, syns = ce_datasets
    result = IdentificationRiskMeasure(PARAMS).run(as_eval_data(orig, syns), Executor(policy="memory"))
    tidy = result.tidy()
    assert list(tidy.columns) == TIDY_COLUMNS
    assert tidy["value"].dtype == float
    assert set(tidy["synthetic"]) == {"1", "2", "3", "4", "mean"}
    at_01 = {"Age": 0.1, "Expenditure": 0.1, "Income": 0.1}
    inc = [r for r in _rows(result, "exp.risk", scenario="incexp", radius=at_01) if r.synthetic != "mean"]
    # incexp files 1-4 at r = 0.1 (spec section 11.1)
    np.testing.assert_allclose(
        [r.value for r in inc], [76.276497114, 95.3126734377, 75.5142857143, 72.1596320346], rtol=1e-10
    )
    assert set(tidy.measure) == {
        "exp.risk",
        "file_risk",
        "true.rate",
        "false.rate",
        "s",
        "r_star",
        "r_star_at_boundary",
        "file_risk_at_max",
        "repetition_file_risk",
    }
    # the decision is in the rows: r* per synthesised (or swept) continuous variable, the boundary flag,
    # and the per-set file risk at r* (the file_risk rows of that radius, again)
    for name, res in result.scenarios.items():
        at_max = _rows(result, "file_risk_at_max", scenario=name)
        assert [r.synthetic for r in at_max] == ["1", "2", "3", "4"]
        np.testing.assert_array_equal([r.value for r in at_max], result.at_max(name).file_risk)
        radius = at_max[0].params["radius"]
        same = [r.value for r in _rows(result, "file_risk", scenario=name, radius=radius) if r.synthetic != "mean"]
        assert same == [r.value for r in at_max]
        reps = _rows(result, "repetition_file_risk", scenario=name)
        assert [r.params["repetition"] for r in reps] == [1, 2]
        np.testing.assert_allclose([r.value for r in reps], result.repetition_means(name))
        r_star = {r.params["variable"]: r.value for r in _rows(result, "r_star", scenario=name)}
        boundary = _rows(result, "r_star_at_boundary", scenario=name)
        if isinstance(res, RadiusSweepResult):
            assert r_star == {v: radius[v] for v in res.plan.synthesised if v in res.plan.continuous}
            assert [r.value for r in boundary] == [float(res.r_star_at_boundary)]
        else:
            assert not r_star and not boundary
    assert result.scenarios["incexp"].r_star == {"r": 0.1}
    assert _rows(result, "r_star", scenario="incexp", variable="Income")[0].value == 0.1
    assert _rows(result, "file_risk", scenario="exact", radius={})  # exact matching: radius {}
    assert _rows(result, "file_risk", scenario="fixed", radius={"Income": 0.1})
    assert set(tidy.loc[tidy.measure == "r_star", "setting"]) >= {"scenario=incexp;variable=Income"}

    d = result.to_dict()
    json.dumps(d)  # JSON-serialisable
    assert d["scenarios"]["incexp"]["max_radius"] == {"r": 0.1}
    assert set(d["scenarios"]["grid2"]["max_radius"]) == {"Income", "Expenditure"}
    assert len(d["scenarios"]["income"]["repetition_file_risk"]) == 2
    assert d["scenarios"]["fixed"]["max_radius"] == {"Income": 0.1}

    figs = [
        plots.plot_risk_by_radius(result),
        plots.plot_risk_at_max_radius(result),
    ]
    utility = {name: np.linspace(0.01, 0.02, 4) for name in result.scenarios}
    points = plots.utility_risk_points(result, utility)
    assert list(points.columns) == ["scenario", "utility", "risk"] and len(points) == 20
    figs.append(plots.plot_utility_risk(points))
    reps = pd.DataFrame(
        {
            "m": np.repeat([1, 10], 8),
            "utility": np.random.default_rng(0).uniform(0.01, 0.02, 16),
            "risk": np.random.default_rng(1).uniform(0.008, 0.012, 16),
        }
    )
    figs.append(plots.plot_2d_boxplot(reps))
    for k, fig in enumerate(figs):
        assert isinstance(fig, Figure)
        fig.savefig(tmp_path / f"fig{k}.png")
        assert (tmp_path / f"fig{k}.png").stat().st_size > 0


def test_same_rows_in_memory_and_on_key_blocks(ce_datasets, dask_client):
    """Every scenario kind (sweeps, fixed, exact) gives the same table on key blocks of a cluster."""
    orig, syns = ce_datasets
    measure = IdentificationRiskMeasure(PARAMS)
    reference = measure.run(as_eval_data(orig, syns), Executor(policy="memory")).tidy()
    for block_rows in (5571, 1000):
        got = measure.run(as_eval_data(orig, syns), Executor(dask_client, policy="blocks", block_rows=block_rows))
        pd.testing.assert_frame_equal(got.tidy(), reference)


def _sweep(file_risks: list[list[float]], criterion: str) -> RadiusSweepResult:
    """A sweep over r in {0.1, 0.2} of one synthesised variable whose per-set file risks are given."""
    n = 10
    plan = MatchPlan(("Urban",), ("Income",), ("Urban",), ("Income",), (False,))
    grid = RadiusGrid(("Income",), True, ((0.1, 0.2),), ({"Income": 0.1}, {"Income": 0.2}))
    stats = []
    for risks in file_risks:
        zeros = np.zeros(len(risks), dtype=np.int64)
        exp_risk = np.array(risks) * n
        stats.append(SetStatistics(n, zeros, zeros, zeros, exp_risk, zeros, zeros))
    return RadiusSweepResult(plan, grid, tuple(stats), criterion)


@pytest.mark.parametrize(("criterion", "r_star"), [("median", 0.2), ("mean", 0.1)])
def test_criterion_decides_r_star_in_the_rows(criterion, r_star):
    """Per-set file risks {r=0.1: 0, 0, 0.9; r=0.2: 0.2, 0.2, 0.2}: the median picks 0.2, the mean 0.1."""
    sweep = _sweep([[0.0, 0.0, 0.9], [0.2, 0.2, 0.2]], criterion)
    rows = sweep.rows()
    assert [(r.synthetic, r.value, dict(r.params)) for r in rows if r.measure == "r_star"] == [
        ("mean", r_star, {"variable": "Income"})
    ]
    assert [r.value for r in rows if r.measure == "r_star_at_boundary"] == [1.0]
    at_max = [r for r in rows if r.measure == "file_risk_at_max"]
    assert [r.synthetic for r in at_max] == ["1", "2", "3"]
    assert all(r.params == {"radius": {"Income": r_star}} for r in at_max)
    expected = [0.2, 0.2, 0.2] if r_star == 0.2 else [0.0, 0.0, 0.9]
    np.testing.assert_allclose([r.value for r in at_max], expected)
