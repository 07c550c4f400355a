"""What ``compare_fit`` reads beyond the formula.

synthpop's ``incomplete`` is read from the pipeline's own synthesis when ``not_synthesised`` is
not given: a partial synthesis keeps every variable without a method (synthpop's method ``""``),
and ``incomplete`` is whether the formula's first variable in data order is one of them
(``checkcomplete``), as in CF08-CF10, whose CEdata syntheses keep Age and Expenditure.  The
holdout is fitted in the place of one fully synthetic set (the figures a fresh sample gets).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from pipeline.compare_fit import compare_fit_synds
from pipeline.compare_fit.measure import CompareFitMeasure
from pipeline.datasets import load_demo
from pipeline.evaluation.data import as_eval_data
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


def test_holdout_fit_is_the_comparison_a_fresh_sample_gets() -> None:
    ce, res = cedata(), partial()
    original, holdout = ce.iloc[:4000].reset_index(drop=True), ce.iloc[4000:].reset_index(drop=True)
    sets = [s.iloc[:4000].reset_index(drop=True) for s in res.synthetic]
    data = as_eval_data(original, sets, holdout=holdout)
    got = CompareFitMeasure(formula=FORMULA, model="lm").run(data, MEMORY)
    # the holdout in the place of one fully synthetic set of its size
    fresh = compare_fit_synds(FORMULA, original, [holdout], fitting_function="lm", executor=MEMORY)
    assert got.holdout_n == len(holdout) == len(ce) - 4000
    for name in ("diff", "std_diff", "ci_overlap"):
        np.testing.assert_allclose(getattr(got.holdout, name), getattr(fresh.comparison, name), rtol=1e-12)
    assert got.holdout.lack_of_fit == pytest.approx(fresh.comparison.lack_of_fit, rel=1e-12)
    rows = got.tidy()
    held = rows[rows["role"] == "holdout"]
    assert set(held["measure"]) == {"diff", "std_diff", "ci_overlap", "mean_ci_overlap", "mean_abs_std_diff",
                                    "lack_of_fit", "lof_pvalue"}  # fmt: skip
    observed = rows[rows["role"] == "observed"].set_index(["synthetic", "measure", "params"])
    assert held.set_index(["synthetic", "measure", "params"]).index.isin(observed.index).all()  # same keys
    mean = held.loc[held["measure"] == "mean_ci_overlap", "value"].item()
    assert mean == pytest.approx(fresh.comparison.mean_ci_overlap, rel=1e-12)
    assert got.to_dict()["holdout"]["n"] == len(holdout)
    # without a holdout: no such rows
    assert (CompareFitMeasure(formula=FORMULA, model="lm").run(as_eval_data(original, sets), MEMORY)
            .tidy()["role"] == "observed").all()  # fmt: skip


def test_report_shows_the_holdout_figures() -> None:
    from pipeline.compare_fit.section import compare_fit_section
    from pipeline.evaluation.reporting import Markup, ReportedRun
    from pipeline.row_params import of_kind

    ce, res = cedata(), partial()
    original, holdout = ce.iloc[:4000].reset_index(drop=True), ce.iloc[4000:].reset_index(drop=True)
    sets = [s.iloc[:4000].reset_index(drop=True) for s in res.synthetic]
    got = CompareFitMeasure(formula=FORMULA, model="lm").run(as_eval_data(original, sets, holdout=holdout), MEMORY)
    rows = got.tidy().assign(dataset="ce", source="partial", repetition=0, measure_name="compare_fit",
                             family="compare_fit", type="compare_fit")  # fmt: skip

    def text(rows: pd.DataFrame) -> str:
        blocks = compare_fit_section(of_kind(rows), ReportedRun(rows, {}))
        return "".join(b.html for b in blocks if isinstance(b, Markup))

    assert "a fresh sample (the holdout" in text(rows)
    assert f"mean_ci_overlap: {got.holdout.mean_ci_overlap:.4g}" in text(rows)
    assert "fresh sample" not in text(rows[rows["role"] == "observed"])
