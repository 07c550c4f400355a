"""The partial synthesiser: syn() semantics (kept columns, donors from the leaf, visit sequence,
predictor matrix, padMis), its methods, bad input, and seeds independent of the workers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError
from synth_helpers import MEMORY, partial_params

from pipeline.data.dataset import Dataset
from pipeline.data.schema import Schema, Variable
from pipeline.errors import ParameterError, PipelineError
from pipeline.evaluation.execution import Executor
from pipeline.row_params import of_kind
from pipeline.runner import run_task
from pipeline.synth.partial.params import PartialParams
from pipeline.synth.partial.syn import plan_lines, plan_synthesis, prepare, synthesise_partial
from pipeline.synthesisers import parse_settings
from pipeline.tasks import load_task


def test_kept_columns_identical_and_cart_values_are_leaf_donors(cedata):
    params = partial_params(method={"Income": "cart"}, m=2, seed=5)
    res = synthesise_partial(cedata, params, MEMORY)
    orig = cedata.to_pandas().reset_index(drop=True)
    prepared = prepare(orig, cedata.schema, plan_synthesis(cedata.schema, params), params)
    (step,) = prepared.steps
    assert res.tree_sizes == {"Income": (1269, 635)}
    for syn in res.synthetic:
        for v in ["Age", "Urban", "Tenure", "Educ", "Expenditure", "Marital"]:
            pd.testing.assert_series_equal(syn[v], orig[v])
        # every synthetic Income is an original Income of the leaf the (kept) predictors lead to
        leaf = step.tree.where  # predictors are all kept: the synthetic record's leaf is its own
        pairs = set(zip(leaf.tolist(), orig["Income"].tolist(), strict=True))
        assert all((lf, y) in pairs for lf, y in zip(leaf.tolist(), syn["Income"].tolist(), strict=True))
        assert (syn["Income"] != orig["Income"]).mean() > 0.5
    assert not res.synthetic[0]["Income"].equals(res.synthetic[1]["Income"])


def test_default_visit_sequence_and_predictor_matrix_follow_column_order(cedata):
    plan = plan_synthesis(
        cedata.schema, partial_params(method={"Tenure": "cart", "Expenditure": "cart", "Income": "cart"})
    )
    assert plan.synthesised == ["Tenure", "Expenditure", "Income"]
    assert plan.predictors == {
        "Tenure": ("Age", "Urban"),
        "Expenditure": ("Age", "Urban", "Tenure", "Educ"),
        "Income": ("Age", "Urban", "Tenure", "Educ", "Expenditure", "Marital"),
    }
    # a user predictor row: a synthesised predictor visited later is dropped (synthpop), kept ones stay
    plan = plan_synthesis(
        cedata.schema,
        partial_params(
            method={"Expenditure": "cart", "Income": "cart"}, predictors={"Expenditure": ["Income", "Marital"]}
        ),
    )
    assert plan.predictors["Expenditure"] == ("Marital",)
    assert plan.dropped == {"Expenditure": ("Income",)}


def test_synthesised_factor_keeps_its_levels_and_margins(cedata):
    res = synthesise_partial(cedata, partial_params(method={"Tenure": "cart"}, m=3, seed=2), MEMORY)
    orig = cedata.to_pandas()["Tenure"].value_counts(normalize=True).sort_index()
    for syn in res.synthetic:
        assert list(syn["Tenure"].cat.categories) == ["1", "2", "4", "5", "6"]
        share = syn["Tenure"].value_counts(normalize=True).sort_index()
        np.testing.assert_allclose(share, orig, atol=0.03)  # ~ 3 SE of a 5571-record share


@pytest.mark.parametrize(
    ("method", "variable"),
    [("norm", "Expenditure"), ("normrank", "Income"), ("logreg", "Urban"), ("polyreg", "Marital"), ("sample", "Age")],
)
def test_other_methods_reproduce_the_margin(cedata, method, variable):
    res = synthesise_partial(cedata, partial_params(method={variable: method}, m=1, seed=9), MEMORY)
    orig, syn = cedata.to_pandas()[variable], res.synthetic[0][variable]
    if cedata.schema[variable].is_factor:
        np.testing.assert_allclose(
            syn.value_counts(normalize=True).sort_index(), orig.value_counts(normalize=True).sort_index(), atol=0.03
        )
    else:
        assert abs(syn.mean() - orig.mean()) < 0.1 * orig.std()
        if method in ("normrank", "sample"):
            assert syn.isin(orig).all()  # both return original values
        if method == "norm":
            assert abs(syn.std() - orig.std()) < 0.1 * orig.std()


def test_missing_values_and_special_codes_are_synthesised_as_categories():
    """padMis: a numeric variable with NA and a code -8 keeps their shares; a factor's NA is a level."""
    rng = np.random.default_rng(0)
    n = 3000
    g = rng.integers(0, 3, n)
    income = np.exp(rng.normal(7 + 0.3 * g, 0.4))
    income[rng.random(n) < 0.1] = -8.0
    income[rng.random(n) < 0.05] = np.nan
    grp = np.where(rng.random(n) < 0.08, None, g.astype(str))
    frame = pd.DataFrame({"grp": grp, "income": income})
    schema = Schema((Variable("grp", "factor", ("0", "1", "2")), Variable("income", "numeric", missing_codes=(-8.0,))))
    ds = Dataset.from_pandas(frame, schema)
    res = synthesise_partial(ds, partial_params(method={"grp": "cart", "income": "cart"}, m=2, seed=1), MEMORY)
    orig = ds.to_pandas()
    for syn in res.synthetic:
        assert abs(syn["grp"].isna().mean() - orig["grp"].isna().mean()) < 0.025
        assert abs((syn["income"] == -8).mean() - (orig["income"] == -8).mean()) < 0.025
        assert abs(syn["income"].isna().mean() - orig["income"].isna().mean()) < 0.02
        ordinary = syn["income"][(syn["income"] != -8) & syn["income"].notna()]
        assert ordinary.isin(orig["income"]).all() and (ordinary > 0).all()


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"method": {"Urban": "norm"}}, "'norm' is not a method for 'Urban'"),
        ({"method": {"Income": "logreg"}}, "'logreg' is not a method for 'Income'"),
        ({"method": {"Income": "cart"}, "predictors": {"Income": ["Age", "Wealth"]}}, "'Wealth' not in the data"),
        ({"method": {"Salary": "cart"}}, "'Salary' not in the data"),
    ],
)
def test_bad_input_is_a_clear_error(cedata, settings, message):
    with pytest.raises(ParameterError, match=message):
        synthesise_partial(cedata, parse_settings({"kind": "partial", **settings}), MEMORY)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"method": {"Income": "cart"}, "keep": ["Income"]}, "both kept"),
        ({"method": {"Income": "cart"}, "m": 0}, "m\n  Input should be greater than or equal to 1"),
        ({"method": {"Income": "cart"}, "cart_minbucket": 0}, "cart_minbucket"),
        ({"method": {"Income": ""}}, "give at least one variable a synthesis method"),
    ],
)
def test_settings_that_need_no_data_are_refused_by_the_model(settings, message):
    with pytest.raises(ValidationError, match=message):
        parse_settings({"kind": "partial", **settings})


def test_settings_dispatch_on_kind():
    assert parse_settings({"variables": ["sex", "edu"]}).kind == "margins"
    assert type(parse_settings({"kind": "partial", "method": {"x": "cart"}})) is PartialParams
    with pytest.raises(ValidationError, match="kind: unknown synthesiser; the kinds are margins, partial"):
        parse_settings({"kind": "bootstrap"})


TASK = """
name: partial_units
seed: 7
repetitions: 2
datasets:
  - name: cedata
    original: {{demo: cedata}}
    synthetic:
      - name: s3
        synthesise: {{kind: partial, method: {method}, m: 3}}
measures:
  - type: identification_risk
    params:
      scenarios:
        s3: {{known: [Urban, Tenure, Educ, Marital], synthesised: [Expenditure, Income]}}
      radius_grid: [0.05, 0.1]
"""


def _task(tmp_path: Path, workers: int, method: str = "{Expenditure: cart, Income: cart}") -> Path:
    folder = tmp_path / f"w{workers}"
    folder.mkdir()
    (folder / "local.yaml").write_text(f"type: local\nn_workers: {workers}\nprocesses: false\n")
    p = folder / "task.yaml"
    p.write_text(TASK.format(method=method))
    return p


def test_same_seed_same_sets_and_table_on_one_and_two_workers(tmp_path):
    runs = []
    for workers in (1, 2):
        task = _task(tmp_path, workers)
        out = task.parent / "out"
        run_task(load_task(task), cluster=str(task.parent / "local.yaml"), out_dir=out, progress=False, report=False)
        runs.append(out)
    for rep in (0, 1):
        for i in (1, 2, 3):
            a, b = (pd.read_parquet(o / "synthesis" / "cedata" / "s3" / f"rep{rep}" / "synthetic" / f"syn{i}.parquet")
                    for o in runs)  # fmt: skip
            pd.testing.assert_frame_equal(a, b)
    s0 = pd.read_parquet(runs[0] / "synthesis/cedata/s3/rep0/synthetic/syn1.parquet")
    s1 = pd.read_parquet(runs[0] / "synthesis/cedata/s3/rep1/synthetic/syn1.parquet")
    assert not s0["Income"].equals(s1["Income"])  # repetitions draw from different seeds
    cols = [
        "dataset",
        "source",
        "repetition",
        "measure_name",
        "params",
        "synthetic",
        "measure",
        "role",
        "summary",
        "value",
    ]
    t1, t2 = (pd.read_parquet(o / "results.parquet")[cols] for o in runs)
    pd.testing.assert_frame_equal(t1, t2)
    assert (of_kind(t1)["measure"] == "file_risk_at_max").sum() == 2 * 3  # own rows (not the summaries over sets)


@pytest.mark.parametrize(
    ("method", "message"),
    [("{Urban: norm}", "'norm' is not a method for 'Urban'"), ("{Income: cart}, keep: [Income]", "both kept")],
)
def test_bad_task_writes_nothing(tmp_path, method, message):
    task = _task(tmp_path, 1, method)
    out = task.parent / "out"
    with pytest.raises(PipelineError, match=message):
        run_task(load_task(task), cluster=str(task.parent / "local.yaml"), out_dir=out, progress=False)
    assert not (out / "results.parquet").exists() and not (out / "synthesis").exists()


def test_sj_bandwidth_scales_and_pair_counts_count_every_pair():
    from pipeline.synth.partial.smooth import _pair_counts, bandwidth_sj

    rng = np.random.default_rng(4)
    x = rng.normal(10.0, 2.0, 480)  # <= 500 values: R counts every pair
    h = bandwidth_sj(x)
    assert 0.3 < h < 0.9  # normal reference ~ 1.06 * sd * n^-1/5 = 0.61
    assert bandwidth_sj(3 * x) == pytest.approx(3 * h, rel=0.05)  # a scale parameter (to R's root tolerance)
    d, exact = _pair_counts(x)
    assert d == pytest.approx((x.max() - x.min()) * 1.01 / 1000)
    assert exact.sum() == len(x) * (len(x) - 1) / 2
    y = np.concatenate([x, x + 1e-9])  # 960 values: the binned counts
    d, binned = _pair_counts(y)
    assert d == pytest.approx((y.max() - y.min()) * 1.01 / 1000)
    assert binned.sum() == pytest.approx(len(y) * (len(y) - 1) / 2)


def test_density_smoothing_of_cart_values(cedata):
    params = partial_params(method={"Income": "cart"}, m=1, seed=8, smoothing={"Income": "density"})
    res = synthesise_partial(cedata, params, MEMORY)
    orig, syn = cedata.to_pandas()["Income"], res.synthetic[0]["Income"]
    zero = (orig == 0).mean()
    assert zero < 0.7 and (syn == 0).mean() < zero / 2  # zeros are smoothed too (no value holds 70 %)
    assert not syn.isin(orig).all() and syn.min() >= orig.min()
    np.testing.assert_array_equal(syn, np.round(syn))  # rounded to the originals' 0 decimals
    assert abs(syn.mean() - orig.mean()) < 0.05 * orig.std()
    with pytest.raises(ParameterError, match="smoothing: 'Urban' must be a numeric variable"):
        synthesise_partial(cedata, partial_params(method={"Urban": "cart"}, smoothing={"Urban": "density"}), MEMORY)


def test_remove_lindep_drops_constant_copying_and_collinear_predictors():
    from pipeline.synth.partial.lindep import lindep_keep

    rng = np.random.default_rng(2)
    a, b, y = rng.normal(size=(3, 500))
    x = np.column_stack([a, 2 * a + 1, b, np.full(500, 3.0), y * 5 - 2, a + b])
    keep = lindep_keep(x, y)
    assert not keep[3] and not keep[4]  # constant; a copy of the response
    assert keep[[0, 1, 2, 5]].sum() == 2  # a, 2a + 1, b, a + b span two dimensions
    assert np.linalg.matrix_rank(x[:, keep]) == 2  # what is left is of full rank


def test_collinear_variables_are_derived_from_the_first_visited():
    rng = np.random.default_rng(6)
    g = rng.integers(0, 3, 800)
    y1 = np.round(np.exp(rng.normal(5 + 0.5 * g, 0.3)))
    frame = pd.DataFrame({"g": g.astype(str), "y1": y1, "y2": 2 * y1 + 3, "z": rng.normal(size=800)})
    schema = Schema(
        (
            Variable("g", "factor", ("0", "1", "2")),
            Variable("y1", "numeric"),
            Variable("y2", "numeric"),
            Variable("z", "numeric"),
        )
    )
    ds = Dataset.from_pandas(frame, schema)
    res = synthesise_partial(ds, partial_params(method={"y1": "cart", "y2": "cart", "z": "cart"}, m=2, seed=3), MEMORY)
    assert res.plan.method["y2"] == "collinear" and res.plan.predictors["y2"] == ("y1",)
    assert "y2" not in res.plan.predictors["z"]  # a derived variable predicts nothing
    for syn in res.synthetic:
        np.testing.assert_array_equal(syn["y2"], 2 * syn["y1"] + 3)
        assert not syn["y1"].equals(frame["y1"])


def test_sets_do_not_depend_on_the_partitioning_of_the_original(cedata):
    params = partial_params(method={"Tenure": "cart", "Income": "cart"}, m=2, seed=12)
    one = synthesise_partial(cedata, params, MEMORY)
    parts = Dataset.from_pandas(cedata.to_pandas(), cedata.schema, npartitions=4)
    four = synthesise_partial(parts, params, Executor(None, policy="blocks"))
    for a, b in zip(one.synthetic, four.synthetic, strict=True):
        pd.testing.assert_frame_equal(a, b)


def _cps_like(n: int = 3000) -> Dataset:
    """CPS 1988's layout: the synthesised ``wage`` is column 1, kept variables that predict it follow."""
    rng = np.random.default_rng(1988)
    education = rng.integers(6, 19, n).astype(float)
    experience = rng.integers(0, 45, n).astype(float)
    parttime = rng.choice(["no", "yes"], n, p=[0.9, 0.1])
    wage = np.exp(4.5 + 0.09 * education + 0.03 * experience - 0.0005 * experience**2 + rng.normal(0, 0.3, n))
    frame = pd.DataFrame({"wage": wage, "education": education, "experience": experience, "parttime": parttime})
    schema = Schema(
        [
            Variable("wage", "numeric"),
            Variable("education", "integer"),
            Variable("experience", "integer"),
            Variable("parttime", "factor", levels=("no", "yes")),
        ]
    )
    return Dataset.from_pandas(schema.apply(frame, "cps"), schema, name="cps")


def test_synthesised_first_column_has_no_predictors_as_in_synthpop_and_the_plan_says_so(cedata):
    """Issue 23: synthpop's default visit order gives a synthesised first column no predictors
    (R changes its method to sample); the plan warns once, naming the variable."""
    cps = _cps_like()
    plan = plan_synthesis(cps.schema, partial_params(method={"wage": "cart"}))
    assert plan.predictors == {"wage": ()}
    (note,) = plan.notes
    assert note.startswith("'wage' is synthesised with no predictors") and "visit_sequence: kept_first" in note
    # explicitly asked-for independent draws, or nothing kept: nothing to warn about
    assert plan_synthesis(cps.schema, partial_params(method={"wage": "sample"})).notes == ()
    every = {v: "cart" for v in cps.schema.names}
    assert plan_synthesis(cps.schema, partial_params(method=every)).notes == ()
    # the CEdata references' layouts (kept variables first) plan without a note
    assert plan_synthesis(cedata.schema, partial_params(method={"Income": "cart"})).notes == ()


def test_kept_first_visits_every_kept_variable_before_the_synthesised_first_column():
    cps = _cps_like()
    params = partial_params(method={"wage": "cart"}, visit_sequence="kept_first", m=1, seed=3)
    plan = plan_synthesis(cps.schema, params)
    assert plan.visit_sequence == ("education", "experience", "parttime", "wage")
    assert plan.predictors == {"wage": ("education", "experience", "parttime")} and plan.notes == ()
    orig = cps.to_pandas()
    by_default = synthesise_partial(cps, partial_params(method={"wage": "cart"}, m=1, seed=3), MEMORY)
    kept_first = synthesise_partial(cps, params, MEMORY)
    r_orig = np.corrcoef(np.log(orig["wage"]), orig["education"])[0, 1]
    r_default = np.corrcoef(np.log(by_default.synthetic[0]["wage"]), orig["education"])[0, 1]
    r_kept_first = np.corrcoef(np.log(kept_first.synthetic[0]["wage"]), orig["education"])[0, 1]
    assert r_orig > 0.5
    assert abs(r_default) < 0.05  # drawn independently of education (3000 records: SE ~ 0.018)
    assert abs(r_kept_first - r_orig) < 0.05


def test_plan_notes_are_kept_once_by_the_unit_that_raises_them():
    from pipeline import notices
    from pipeline.synth.partial.syn import warn_plan

    cps = _cps_like(200)
    params = partial_params(method={"wage": "cart"}, variables=["wage", "experience", "education"])
    note = plan_synthesis(cps.schema, params).notes[0]
    with notices.collected() as kept:
        for _ in range(3):  # the repetitions of a study share their plan
            warn_plan(plan_synthesis(cps.schema, params))
    assert kept == [note]
    with pytest.warns(UserWarning, match="'wage' is synthesised with no predictors"):
        warn_plan(plan_synthesis(cps.schema, params))


def test_a_variable_predicted_by_fewer_than_half_of_the_kept_ones_is_noted():
    cps = _cps_like(200)
    order = ["education", "wage", "experience", "parttime"]
    plan = plan_synthesis(cps.schema, partial_params(method={"wage": "cart"}, variables=order))
    assert plan.notes == (
        "'wage' is synthesised with 1 of the 3 kept variables as predictors (education); visit the kept ones "
        "first (visit_sequence: kept_first) or name its predictors",
    )
    # two of three is at least half; named predictors are as the user asked
    order = ["education", "experience", "wage", "parttime"]
    assert plan_synthesis(cps.schema, partial_params(method={"wage": "cart"}, variables=order)).notes == ()
    named = partial_params(method={"wage": "cart"}, predictors={"wage": ["parttime"]})
    assert plan_synthesis(cps.schema, named).notes == ()
    assert plan_lines(plan_synthesis(cps.schema, named)) == ["wage (cart) <- parttime"]


def test_synthesise_partial_takes_a_pandas_frame_and_keyword_settings():
    """Issue 36: a notebook user passes a pandas frame (its schema inferred, as the measures'
    functions do) and the settings as keywords; the sets are a list, as synthpop's syn()$syn."""
    frame = _cps_like(300).to_pandas()
    res = synthesise_partial(frame, method={"wage": "cart"}, visit_sequence="kept_first", m=2, seed=5)
    assert isinstance(res.synthetic, list) and len(res.synthetic) == 2
    assert list(res.synthetic[0].columns) == list(frame.columns) and len(res.synthetic[0]) == 300
    assert res.synthetic[0]["education"].equals(frame["education"])  # kept variables unchanged
    with pytest.raises(ParameterError, match="either as params or as keywords"):
        synthesise_partial(frame, partial_params(method={"wage": "cart"}), m=2)
