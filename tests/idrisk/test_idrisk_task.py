"""Task integration (pydantic parameters, evaluate, tidy, to_dict) and the plots."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure
from pydantic import ValidationError

from pipeline.data.dataset import Dataset
from pipeline.risk.idrisk import plots
from pipeline.risk.idrisk.result import TIDY_COLUMNS
from pipeline.risk.idrisk.task import IdentificationRiskParams, evaluate


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
    },
    "radius": {"Age": 0.1},
    "radius_grid": [0.05, 0.1, 0.2],
    "sets_per_repetition": 2,
}


def test_params_validation():
    with pytest.raises(ValidationError):
        IdentificationRiskParams.model_validate({**PARAMS, "unknown": 1})
    with pytest.raises(ValidationError):
        IdentificationRiskParams.model_validate({"scenarios": {}})
    with pytest.raises(ValidationError):
        IdentificationRiskParams.model_validate({"scenarios": {"a=b": {"known": [], "synthesised": ["x"]}}})
    with pytest.raises(ValidationError):
        IdentificationRiskParams.model_validate({**PARAMS, "interval": "half"})


def test_evaluate_tidy_and_dict(ce_datasets, tmp_path):
    orig, syns = ce_datasets
    params = IdentificationRiskParams.model_validate(PARAMS)
    result = evaluate(orig, syns, params)
    tidy = result.tidy()
    assert list(tidy.columns) == TIDY_COLUMNS
    assert set(tidy["synthetic"]) == {"1", "2", "3", "4", "mean"}
    inc = tidy[(tidy.setting == "scenario=incexp;r=0.1") & (tidy.measure == "exp.risk")]
    # incexp files 1-4 at r = 0.1 (spec section 11.1)
    np.testing.assert_allclose(
        inc["value"].to_numpy()[:4], [76.276497114, 95.3126734377, 75.5142857143, 72.1596320346], rtol=1e-10
    )
    assert set(tidy.measure) >= {"exp.risk", "file_risk", "true.rate", "false.rate", "s", "r_star"}
    assert "scenario=grid2;r_Income=0.05;r_Expenditure=0.1" in set(tidy.setting)
    assert "scenario=fixed" in set(tidy.setting)
    assert tidy["value"].dtype == float
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
    assert list(points.columns) == ["scenario", "utility", "risk"] and len(points) == 16
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
