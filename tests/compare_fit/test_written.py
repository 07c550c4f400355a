"""What ``compare_fit`` and ``compare`` write: rare levels coarsened, bad input refused clearly."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pipeline.compare_fit import compare_fit_synds
from pipeline.compare_fit.names import written_names
from pipeline.data.schema import Schema, Variable
from pipeline.errors import ParameterError
from pipeline.evaluation.execution import Executor
from pipeline.rmodels.design import Predictor
from pipeline.rmodels.regression import RegressionSpec
from pipeline.utility.api import compare_synds

LEVELS = ("a", "b", "RAREMARKER")


def test_rare_levels_are_coarsened_in_coefficient_names() -> None:
    spec = RegressionSpec.build("multinom", "y", "identity", ("p", "q", "RAREQ"),
                                [Predictor("x", LEVELS), Predictor("z")])  # fmt: skip
    names = written_names(spec, np.array([50, 40, 3, 60, 25, 5]))
    assert names[:4] == ("q:(Intercept)", "q:xb", "q:xlevel 3 (<10 records)", "q:z")
    assert names[4] == "level 3 (<10 records):(Intercept)"
    assert not any("MARKER" in n or "RAREQ" in n for n in names)


def data(n: int, rare: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = np.array(["a", "b"] * (n // 2), dtype=object)
    x[:rare] = "RAREMARKER"
    z = rng.normal(size=n)
    y = (rng.random(n) < 1 / (1 + np.exp(-(0.5 * z + (x == "b"))))).astype(int)
    return pd.DataFrame({"y": pd.Categorical(np.where(y == 1, "yes", "no"), ["no", "yes"]),
                         "x": pd.Categorical(x, LEVELS), "z": z})  # fmt: skip


SCHEMA = Schema((Variable("y", "factor", ("no", "yes")), Variable("x", "factor", LEVELS), Variable("z", "numeric")))


def test_written_rows_hide_a_rare_level() -> None:
    orig, syns = data(400, 5, 1), [data(400, 6, 2), data(400, 7, 3)]
    res = compare_fit_synds("y ~ x + z", orig, syns, schema=SCHEMA, executor=Executor(policy="memory"))
    assert "xRAREMARKER" in res.names  # R's names in the object
    assert not res.tidy()["params"].str.contains("MARKER").any()
    cmp = compare_synds(orig, syns, schema=SCHEMA, vars=["x", "z"], executor=Executor(policy="memory"))
    assert "RAREMARKER" in cmp.tables["x"][0]
    assert not cmp.tidy()["params"].str.contains("MARKER").any()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"fitting_function": "multinom", "formula": "z ~ x"}, "needs a factor response"),
        ({"fitting_function": "lm", "formula": "y ~ x"}, "needs a numeric response"),
        ({"fitting_function": "polr", "formula": "y ~ z"}, "3 or more levels"),
        ({"formula": "y ~ x*z"}, "not of the form"),
        ({"formula": "y ~ w"}, "'w' not found"),
        ({"formula": "y ~ z", "not_synthesised": ["x"]}, "not in the formula"),
    ],
)
def test_bad_parameters(kwargs: dict, message: str) -> None:
    orig = data(100, 0, 1)
    with pytest.raises(ParameterError, match=message):
        compare_fit_synds(**{"original": orig, "synthetic": [orig], "schema": SCHEMA, **kwargs})


def test_a_gate_below_a_mean_ci_overlap_fails() -> None:
    from pipeline.nightly import check_gates
    from pipeline.tasks import GateSpec

    orig, syns = data(400, 20, 1), [data(400, 20, 2), data(400, 20, 3)]
    res = compare_fit_synds("y ~ x + z", orig, syns, schema=SCHEMA, executor=Executor(policy="memory"))
    rows = res.tidy().assign(dataset="d", source="s", measure_name="compare_fit", family="compare_fit")
    overlap = res.comparison.mean_ci_overlap
    gate = {"measure": "mean_ci_overlap", "family": "compare_fit", "statistic": "mean"}
    gates = [GateSpec(**gate, below=overlap + 0.01), GateSpec(**gate, below=overlap - 0.01)]
    failed, passed = check_gates(rows, None, gates)
    assert failed.failed and failed.value == pytest.approx(overlap) and "<" in failed.reason
    assert not passed.failed
