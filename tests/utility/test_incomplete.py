"""utility_gen's kept variables read from the pipeline's own partial synthesis.

synthpop's ``utility.gen`` on a ``synds`` object reads the unsynthesised variables from its
method vector (method ``""``): the synthesis is then incomplete, resampling defaults to
``pairs`` and ``perm`` is refused, and a logit model's ``df`` counts only the coefficients of
synthesised variables.  The pipeline does the same with a partial synthesis result (or data
carrying :attr:`~pipeline.evaluation.data.EvalData.synthesised`) when ``not_synthesised`` is
not given.  synthpop's ``utility.tab`` reads no method vector (nothing to infer there).
"""

from __future__ import annotations

import warnings
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from pipeline.datasets import load_demo
from pipeline.errors import ParameterError
from pipeline.evaluation.data import as_eval_data
from pipeline.evaluation.execution import Executor
from pipeline.runner import run_task
from pipeline.synth.partial.syn import synthesise_partial
from pipeline.tasks import load_task
from pipeline.utility.api import utility_gen
from pipeline.utility.measure import UtilityGenMeasure

MEMORY = Executor(policy="memory")
VARS = ["Urban", "Tenure", "Educ", "Marital", "Income"]
KEPT = ["Urban", "Tenure", "Educ", "Marital"]


@cache
def cedata() -> pd.DataFrame:
    return load_demo("cedata").to_pandas()


@cache
def partial():
    return synthesise_partial(cedata(), method={"Income": "cart"}, m=4, seed=5, executor=MEMORY)


def test_a_partial_synthesis_result_is_an_incomplete_synthesis() -> None:
    ce, res = cedata(), partial()
    told = utility_gen(ce, res, method="logit", vars=VARS, executor=MEMORY)
    given = utility_gen(ce, res.synthetic, method="logit", vars=VARS, not_synthesised=KEPT, executor=MEMORY)
    files = utility_gen(ce, res.synthetic, method="logit", vars=VARS, executor=MEMORY)
    assert told.incomplete and told.not_synthesised == tuple(KEPT)
    assert told.resamp_method == "pairs"  # synthpop's default for an incomplete synthesis
    assert files.resamp_method is None and not files.incomplete and files.not_synthesised == ()
    pd.testing.assert_frame_equal(told.tidy(), given.tidy())
    # df: the coefficients naming Income (its main effect and its interactions with the kept
    # factors: 1 + 1 + 4 + 7 + 4), not the intercept nor the kept factors' own terms
    naming_income = [n for n in told.fits[0].names if "Income" in n]
    assert len(naming_income) == 17 and (told["df"] == 17).all()
    assert (files["df"] == files.fits[0].rank - 1).all() and files.fits[0].rank - 1 > 17
    # the pairs null: half the mean pMSE of the 6 pairs of sets
    assert told["pMSEExp"][0] == pytest.approx(np.mean(told.null_pMSE["pairs"]) / 2, rel=1e-15)
    assert len(told.null_pMSE["pairs"]) == 6
    assert told.to_dict()["not_synthesised"] == KEPT


def test_an_explicit_list_wins_over_the_synthesis() -> None:
    ce, res = cedata(), partial()
    complete = utility_gen(ce, res, method="logit", vars=VARS, not_synthesised=[], executor=MEMORY)
    files = utility_gen(ce, res.synthetic, method="logit", vars=VARS, executor=MEMORY)
    assert not complete.incomplete and complete.resamp_method is None
    pd.testing.assert_frame_equal(complete.tidy(), files.tidy())
    # only the compared variables count: none of them kept -> complete
    only_income = utility_gen(ce, res, method="logit", maxorder=0, vars=["Income"], executor=MEMORY)
    assert not only_income.incomplete and only_income.resamp_method is None


def test_perm_and_all_kept_are_refused_at_check() -> None:
    ce, res = cedata(), partial()
    data = as_eval_data(ce, res)
    perm = UtilityGenMeasure(method="cart", vars=VARS, resamp_method="perm")
    with pytest.raises(ParameterError, match=r"kept \['Urban', 'Tenure', 'Educ', 'Marital'\].*'pairs'"):
        perm.check(data)
    # the same files without the synthesis' knowledge: a complete synthesis, perm is fine
    perm.check(as_eval_data(ce, res.synthetic))
    with pytest.raises(ParameterError, match="every compared variable is unsynthesised"):
        UtilityGenMeasure(method="logit", vars=KEPT).check(data)
    # a cont_na of the measure rebuilds the data: the synthesis' variables survive it
    coded = UtilityGenMeasure(method="logit", vars=VARS, cont_na={"Expenditure": -1.0})
    assert coded.coded(data).synthesised == frozenset({"Income"})


def test_one_incomplete_set_has_no_null() -> None:
    """synthpop: ``pairs`` (its default here) with m = 1 leaves S_pMSE NA."""
    ce = cedata()
    one = synthesise_partial(ce, method={"Income": "cart"}, m=1, seed=6, executor=MEMORY)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = utility_gen(ce, one, method="logit", vars=VARS, executor=MEMORY)
    assert got.resamp_method == "pairs" and got.m == 1
    assert np.isnan(got["S_pMSE"][0]) and np.isnan(got["pMSEExp"][0])
    assert got["pMSE"][0] > 0 and got["df"][0] == 17
    assert [str(w.message) for w in caught if "no pair" in str(w.message)]
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)]  # no mean of an empty slice


def _task(tmp_path: Path, name: str, params: dict) -> pd.DataFrame:
    task = {
        "name": name,
        "seed": 11,
        "datasets": [{"name": "ce", "original": {"demo": "cedata"},
                      "synthetic": [{"name": "partial", "synthesise": {"kind": "partial", "method": {"Income": "cart"},
                                                                      "m": 3}},
                                    {"name": "file", "demo": "cedata_syn_income"}]}],
        "measures": [{"type": "utility_gen", "params": {"method": "logit", "vars": VARS, **params}}],
    }  # fmt: skip
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(task))
    outcome = run_task(load_task(path), out_dir=tmp_path / name, progress=False, report=False)
    rows = outcome.results
    return rows[rows["source"] == "partial"].set_index(["synthetic", "measure"])["value"].sort_index()


@pytest.mark.slow
def test_a_task_reads_the_kept_variables_from_its_partial_synthesis(tmp_path: Path) -> None:
    told = _task(tmp_path, "told", {})
    spelled = _task(tmp_path, "spelled", {"not_synthesised": KEPT})
    complete = _task(tmp_path, "complete", {"not_synthesised": []})
    pd.testing.assert_series_equal(told, spelled)
    assert told[("1", "df")] == 17.0 and complete[("1", "df")] > 17
    assert np.isfinite(told[("1", "S_SPECKS")])  # pairs gives the standardised SPECKS
    assert not np.isclose(told[("mean", "S_pMSE")], complete[("mean", "S_pMSE")])


def test_validate_refuses_perm_on_a_partial_source_before_any_synthesis(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from pipeline.cli import main

    task = {
        "name": "perm",
        "datasets": [{"name": "ce", "original": {"demo": "cedata"},
                      "synthetic": [{"name": "partial", "synthesise": {"kind": "partial", "method": {"Income": "cart"},
                                                                      "m": 2}}]}],
        "measures": [{"type": "utility_gen", "params": {"vars": VARS, "resamp_method": "perm"}}],
    }  # fmt: skip
    path = tmp_path / "perm.yaml"
    path.write_text(yaml.safe_dump(task))
    res = CliRunner().invoke(main, ["validate", str(path)])
    assert res.exit_code == 2, res.output
    (line,) = [ln for ln in res.output.splitlines() if ln.startswith("error:")]
    assert "source 'partial'" in line and "resamp_method='pairs'" in line
    assert not (tmp_path / "synthesis").exists()
