"""synthpop's ``incomplete`` read from the pipeline's own synthesis when ``not_synthesised`` is not
given: a partial synthesis keeps every variable without a method (synthpop's method ``""``), and
``incomplete`` is whether the formula's first variable in data order is one of them
(``checkcomplete``) — as CF08-CF10, whose CEdata syntheses keep Age and Expenditure."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pandas as pd
import pytest
import yaml

from pipeline.compare_fit import compare_fit_synds
from pipeline.datasets import load_demo
from pipeline.evaluation.execution import Executor
from pipeline.row_params import param_columns
from pipeline.runner import run_task
from pipeline.synth.partial.syn import synthesise_partial
from pipeline.tasks import load_task

MEMORY = Executor(policy="memory")
FORMULA = "Income ~ Age + Expenditure"


@cache
def cedata() -> pd.DataFrame:
    return load_demo("cedata").to_pandas()


@cache
def partial():
    return synthesise_partial(cedata(), method={"Income": "cart"}, m=4, seed=3, executor=MEMORY)


def test_a_partial_synthesis_result_tells_incomplete() -> None:
    ce, res = cedata(), partial()
    assert res.synthesised == frozenset({"Income"})
    told = compare_fit_synds(FORMULA, ce, res, fitting_function="lm", executor=MEMORY)
    given = compare_fit_synds(FORMULA, ce, res.synthetic, fitting_function="lm", executor=MEMORY,
                              not_synthesised=["Age", "Expenditure"])  # fmt: skip
    files = compare_fit_synds(FORMULA, ce, res.synthetic, fitting_function="lm", executor=MEMORY)
    assert told.incomplete and given.incomplete and not files.incomplete
    assert told.not_synthesised == ("Age", "Expenditure")
    assert told.comparison.lof_test == "hotelling" and files.comparison.lof_test == "chi-square"
    pd.testing.assert_frame_equal(told.tidy(), given.tidy())
    # an explicit (empty) list wins over the synthesis
    stated = compare_fit_synds(FORMULA, ce, res, fitting_function="lm", executor=MEMORY, not_synthesised=[])
    assert not stated.incomplete


def test_only_the_first_formula_variable_in_data_order_decides() -> None:
    ce, res = cedata(), partial()
    first = next(c for c in ce.columns if c in ("Income", "Age", "Expenditure"))
    assert first == "Age"  # kept: incomplete even though Income, the response, is synthesised
    synthesised_first = synthesise_partial(
        ce, method={"Age": "cart", "Income": "cart"}, m=2, seed=4, visit_sequence="kept_first", executor=MEMORY
    )
    assert not compare_fit_synds(FORMULA, ce, synthesised_first, fitting_function="lm", executor=MEMORY).incomplete
    assert compare_fit_synds(FORMULA, ce, res, fitting_function="lm", executor=MEMORY).incomplete


@pytest.mark.slow
def test_a_task_reads_incomplete_from_its_partial_synthesis(tmp_path: Path) -> None:
    task = {
        "name": "incomplete",
        "seed": 3,
        "datasets": [{"name": "ce", "original": {"demo": "cedata"},
                      "synthetic": [{"name": "partial", "synthesise": {"kind": "partial", "method": {"Income": "cart"},
                                                                      "m": 3}},
                                    {"name": "file", "demo": "cedata_syn_income"}]}],
        "measures": [{"type": "compare_fit", "params": {"formula": FORMULA, "model": "lm"}}],
    }  # fmt: skip
    path = tmp_path / "incomplete.yaml"
    path.write_text(yaml.safe_dump(task))
    outcome = run_task(load_task(path), out_dir=tmp_path / "run", progress=False, report=False)
    rows = param_columns(outcome.results)
    flag = rows[rows["measure"] == "incomplete"].set_index("source")["value"]
    assert flag["partial"] == 1.0  # Age, the first formula variable, is kept by the partial synthesis
    assert flag["file"] == 0.0  # a file is taken as fully synthetic
    tests = rows[rows["measure"] == "lof_df2"]["source"].tolist()
    assert tests == ["partial"]  # Hotelling's F test (m = 3 >= 3 coefficients) only where incomplete
