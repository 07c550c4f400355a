"""End to end: SDC -> margins -> V1/V2/V3 -> IPF -> sampling, determinism, output, bad input."""

from __future__ import annotations

import json

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError
from synth_helpers import example_tables

from pipeline.data.dataset import Dataset
from pipeline.data.schema import Schema
from pipeline.errors import ParameterError
from pipeline.synth import MarginsParams, fit_ipf, read_margins, synthesise, synthesise_frame, synthesised_schema

BASE = {
    "variables": ["sex", "agegr", "edu", "smoke", "income"],
    "sdc": [
        {"step": "top_bottom_coding", "variable": "income", "bottom": 0, "top": 4000},
        {"step": "categorise", "variable": "income", "breaks": [0, 800, 1400, 2500, 4000]},
    ],
    "limit": 10,
    "tol": 1e-6,
    "seed": 2026,
    "m": 2,
}


def params(**kw) -> MarginsParams:
    return MarginsParams(**{**BASE, **kw})


def syn_counts(frame: pd.DataFrame, table) -> np.ndarray:
    """Counts of a synthetic frame over a margin's cells (NA = the last level)."""
    idx = []
    for v, lv in zip(table.variables, table.levels, strict=True):
        c = frame[v].cat.codes.to_numpy().astype(np.int64)
        idx.append(np.where(c < 0, len(lv) - 1, c))
    flat = np.ravel_multi_index(idx, table.counts.shape)
    return np.bincount(flat, minlength=table.counts.size).reshape(table.counts.shape)


@pytest.fixture(scope="module")
def v2_result(sd2011_subset):
    df, schema = sd2011_subset
    return synthesise_frame(df, schema, params(variant="V2", priorn=0))


def test_coarsened_margins_are_multiples_of_limit(v2_result) -> None:
    assert v2_result.margins.variant == "V2"
    for t in v2_result.margins.tables:
        assert np.all(t.counts % 10 == 0)
        assert np.all((t.counts == 0) | (t.counts >= 10))
    moved = [t.moved for t in v2_result.margins.totals]
    assert any(m != 0 for m in moved)  # coarsening moves totals; V3 would put them back
    assert not v2_result.fit.compatibility.compatible and v2_result.fit.converged


def test_synthetic_margins_close_to_coarsened(v2_result) -> None:
    k = v2_result.k
    assert k == 5000 and len(v2_result.synthetic) == 2
    syn = v2_result.synthetic[0]
    assert list(syn.columns) == BASE["variables"]
    assert syn["sex"].dtype == v2_result.schema["sex"].dtype  # factor levels preserved
    for fitted, released in zip(v2_result.fitted_margins, v2_result.margins.tables, strict=True):
        if "income" in fitted.variables:
            continue  # numeric again; checked in test_numeric_recreated_within_bins
        counts = syn_counts(syn, fitted)
        p = fitted.counts / fitted.counts.sum()
        assert np.all(np.abs(counts - k * p) <= 5 * np.sqrt(k * p * (1 - p)) + 1e-9)
        # and the fit itself is near the released (coarsened) margin
        rel = released.counts * (k / released.total)
        assert 0.5 * np.abs(k * p - rel).sum() < 0.02 * k
    tvd = [s.tvd for s in v2_result.synthetic_margins]
    assert len(tvd) == 2 * len(v2_result.margins.tables) and max(tvd) < 0.05 * k


def test_numeric_recreated_within_bins(v2_result, sd2011_subset) -> None:
    df, _ = sd2011_subset
    income = v2_result.synthetic[0]["income"]
    regular = income[(income != -8) & income.notna()]
    assert regular.between(0, 4000).all()
    assert not np.isin(regular.to_numpy(), df["income"].dropna().to_numpy()).any()  # no original value copied
    assert (income == -8).sum() > 0 and income.isna().sum() > 0


def test_v3_totals_back_to_n(sd2011_subset) -> None:
    df, schema = sd2011_subset
    res = synthesise_frame(df, schema, params(variant="V3", m=1, variables=["sex", "agegr", "smoke"], sdc=[]))
    assert all(abs(t.moved) < 1e-9 for t in res.margins.totals)
    assert res.fit.scale == "counts"
    tidy = res.tidy()  # the contract's table: rows with structured params
    assert list(tidy.columns) == ["synthetic", "setting", "params", "measure", "value"]
    assert {"ipf_iterations", "ipf_max_abs_dev_n", "margin_total_moved", "syn_margin_tvd"} <= set(tidy["measure"])
    assert set(tidy["synthetic"]) == {"original", "1"}
    per_margin = [r for r in res.rows() if r.measure == "ipf_tvd_n"]
    assert [r.params["margin"] for r in per_margin] == ["sex:agegr", "sex:smoke", "agegr:smoke"]
    json.dumps(res.to_dict())


def test_same_seed_same_data_and_different_seed_differs(sd2011_subset) -> None:
    df, schema = sd2011_subset
    p = params(variables=["sex", "agegr", "smoke"], sdc=[], m=1)
    a = synthesise_frame(df, schema, p).synthetic[0]
    b = synthesise_frame(df, schema, p).synthetic[0]
    pd.testing.assert_frame_equal(a, b)
    c = synthesise_frame(df, schema, params(variables=["sex", "agegr", "smoke"], sdc=[], m=1, seed=7)).synthetic[0]
    assert not a.equals(c)


def test_workers_and_chunking_do_not_change_the_data(sd2011_subset, dask_client) -> None:
    from distributed import Client, LocalCluster

    df, schema = sd2011_subset
    p = params(variant="V3")
    two = synthesise(Dataset.from_pandas(df, schema, npartitions=5), p)
    with (
        LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster,
        Client(cluster),
    ):
        one = synthesise(Dataset.from_pandas(df, schema, npartitions=1), p)
    local = synthesise_frame(df, schema, p)
    for x, y, z in zip(one.synthetic, two.synthetic, local.synthetic, strict=True):
        pd.testing.assert_frame_equal(x, y)
        pd.testing.assert_frame_equal(x, z)
    assert one.datasets()[0].name == "syn1"


def test_write_is_complete_and_atomic(v2_result, tmp_path) -> None:
    out = v2_result.write(tmp_path / "run")
    assert sorted(p.name for p in (out / "synthetic").iterdir()) == [
        "syn1.parquet",
        "syn1.schema.json",
        "syn2.parquet",
        "syn2.schema.json",
    ]
    back = read_margins(out / "margins")
    for a, b in zip(back, v2_result.margins.tables, strict=True):
        assert a.variables == b.variables and a.levels == b.levels
        np.testing.assert_array_equal(a.counts, b.counts)
    assert len(list((out / "margins").glob("*.parquet"))) == len(back)
    report = json.loads((out / "fit_report.json").read_text())
    assert report["fit"]["iterations"] == v2_result.fit.iterations
    syn = pd.read_parquet(out / "synthetic" / "syn1.parquet")
    assert list(syn["edu"].cat.categories) == list(v2_result.schema["edu"].levels)
    with pytest.raises(ParameterError, match="exists"):
        v2_result.write(out)
    v2_result.write(out, overwrite=True)
    assert [p.name for p in tmp_path.iterdir()] == ["run"]  # no temporary directory left behind


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"structural_zeros": [{"sex": ["MALE"], "agegr": ["16-24"]}]}, "contradict margin 'sex:agegr'"),
        ({"max_cells": 100}, r"too big: sex\(2\) x agegr\(7\)"),
        ({"sdc": []}, "numeric without bins"),
        ({"structural_zeros": [{"sex": ["OTHER"]}]}, "not among the levels"),
    ],
)
def test_bad_input_is_a_clear_parameter_error(sd2011_subset, kw: dict, match: str) -> None:
    df, schema = sd2011_subset
    with pytest.raises(ParameterError, match=match):
        synthesise_frame(df, schema, params(**kw))


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"extra_margins": [["sex", "nope"]]}, "'nope'"),
        ({"limit": 0}, "limit"),
        ({"limit": -3}, "limit"),
        ({"limit": True}, "limit"),
        ({"m": 0}, "m\n"),
        ({"k": 0}, "k\n"),
        ({"output_format": []}, "output_format"),
        ({"tol": 0}, "tol"),
        ({"priorn": float("inf")}, "priorn"),
    ],
)
def test_settings_that_need_no_data_are_refused_by_the_model(kw: dict, match: str) -> None:
    with pytest.raises(ValidationError, match=match):  # when a task is loaded, before any data
        params(**kw)


def test_size_guard_message_says_how_big_and_why(example) -> None:
    with pytest.raises(ParameterError) as err:
        fit_ipf(example_tables(example, "margins"), 77, max_cells=10)
    msg = str(err.value)
    assert "A(2) x B(2) x C(3) = 12 cells" in msg and "GiB" in msg and "max_cells=10" in msg


def test_structural_zero_in_seed(example) -> None:
    zero = [{"A": ["a1"], "B": ["b2"], "C": ["c3"]}]  # the ground-truth count there is 0
    fit = fit_ipf(
        example_tables(example, "margins"), 77, priorn=0, structural_zeros=zero, tol=1e-12, tol_type="absolute"
    )
    p = fit.probabilities()
    assert p[0, 1, 2] == 0
    assert fit.report.compatibility.compatible and fit.report.converged
    assert max(m.max_abs_dev_n for m in fit.report.margins) < 1e-8  # all margins reproduced
    prior = fit_ipf(example_tables(example, "margins"), 77, priorn=1, structural_zeros=zero, tol=1e-10)
    assert prior.probabilities()[0, 1, 2] == 0 and prior.probabilities().min() == 0


def test_params_model_rejects_unknown_keys() -> None:
    with pytest.raises(ValueError, match="extra"):
        MarginsParams(variables=["sex"], colour="red")
    p = MarginsParams.model_validate({"variables": ["age", "sex"], "sdc": [{"step": "categorise", "variable": "age"}]})
    assert p.sdc[0].groups == 5


def test_dask_input_margins_equal_pandas(sd2011_subset) -> None:
    df, schema = sd2011_subset
    p = params(variables=["sex", "agegr", "smoke"], sdc=[], m=1)
    a = synthesise_frame(df, schema, p)
    b = synthesise_frame(dd.from_pandas(df, npartitions=3), schema, p)
    for x, y in zip(a.margins.tables, b.margins.tables, strict=True):
        np.testing.assert_array_equal(x.counts, y.counts)
    pd.testing.assert_frame_equal(a.synthetic[0], b.synthetic[0])


@pytest.mark.parametrize("mode", ["midpoint", "bin"])
def test_numeric_output_modes(sd2011_subset, mode: str) -> None:
    df, schema = sd2011_subset
    res = synthesise_frame(df, schema, params(variables=["sex", "income"], numeric_output=mode, m=1))
    income = res.synthetic[0]["income"]
    if mode == "bin":
        assert list(income.cat.categories) == ["[0,800)", "[800,1.4e+03)", "[1.4e+03,2.5e+03)", "[2.5e+03,4e+03]", "-8"]
        assert res.schema["income"].kind == "factor"
    else:
        assert set(income.dropna().unique()) <= {400.0, 1100.0, 1950.0, 3250.0, -8.0}
        assert res.schema["income"].kind == "numeric"


def test_integer_bins_give_integers() -> None:
    from pipeline.synth.sdc import Bins

    bins = Bins("n", "integer", (0.0, 2.5, 10.0), ("[0,2.5)", "[2.5,10]"), (-1.0,))
    rng = np.random.default_rng(0)
    values = bins.values(np.array([0, 1, 2, -1] * 500), rng, "uniform")
    first, second = values[0::4], values[1::4]
    assert set(first) == {0.0, 1.0, 2.0} and set(second) == set(np.arange(3.0, 11.0))
    assert np.all(values[2::4] == -1) and np.all(np.isnan(values[3::4]))
    assert bins.values(np.array([0, 1]), rng, "midpoint").tolist() == [1.0, 6.0]
    with pytest.raises(ParameterError, match="no integer"):
        Bins("n", "integer", (0.2, 0.7, 3.0), ("a", "b"), ()).check()


@pytest.mark.parametrize("numeric_output", ["uniform", "bin"])
def test_synthesised_schema_is_the_schema_of_the_sets_without_synthesising(sd2011_subset, numeric_output, monkeypatch):
    from pipeline.synth import coarsened as synth_task

    df, schema = sd2011_subset
    original = Dataset.from_pandas(df, schema, npartitions=3)
    p = params(
        variables=["sex", "agegr", "marital", "income", "age"],
        sdc=[
            *BASE["sdc"],
            {"step": "merge_levels", "variable": "marital", "min_count": 100},  # which levels merge: from the data
            {"step": "categorise", "variable": "age", "groups": 4},  # breaks from the data
        ],
        numeric_output=numeric_output,
    )
    expected = synthesise(original, p).schema

    def forbidden(*args, **kwargs):
        raise AssertionError("synthesised_schema must not fit or draw")

    monkeypatch.setattr(synth_task, "fit_ipf", forbidden)
    monkeypatch.setattr(synth_task, "draw_synthetic", forbidden)
    derived = synthesised_schema(original, p)
    assert derived == expected
    assert derived["marital"].levels[-1] == "Other"
    assert derived["income"].kind == ("factor" if numeric_output == "bin" else "numeric")
    with pytest.raises(ParameterError, match="outside the breaks"):  # the same checks of the steps as a run
        synthesised_schema(original, params(sdc=[{"step": "categorise", "variable": "income", "breaks": [0, 100]}]))
    with pytest.raises(ValidationError, match="limit"):  # the settings: refused by their model
        params(limit=0)


def test_a_level_held_by_fewer_than_limit_records_is_counted_not_named(sd2011_subset) -> None:
    """Issue 25 (8): the synthesis summary (summary.json, fit_report.json) named a level that one
    record holds; it is counted there now, and the synthesis warns that the release names it."""
    df, schema = sd2011_subset
    spec = schema.to_dict()
    for col in spec["columns"]:
        if col["name"] == "marital":
            col["levels"] = [*col["levels"], "ZQXMARKER"]
    schema = Schema.from_dict(spec)
    frame = df.copy()
    frame["marital"] = frame["marital"].cat.add_categories("ZQXMARKER")
    frame.loc[frame.index[0], "marital"] = "ZQXMARKER"
    with pytest.warns(UserWarning, match=r"variable 'marital' has \d level\(s\) held by fewer than 10 records"):
        result = synthesise_frame(frame, schema, params(variables=["sex", "marital"], sdc=[]))
    summary = result.to_dict()
    assert "ZQXMARKER" not in json.dumps(summary)
    marital = next(v for v in summary["layout"]["variables"] if v["name"] == "marital")
    held = frame["marital"].value_counts(dropna=False)
    rare = [lv for lv, n in held.items() if 0 < n < 10 and not pd.isna(lv)]  # missing is no label (issue 36)
    assert "ZQXMARKER" in rare and marital["unnamed_levels"] == len(rare)
    assert set(marital["levels"]) == {lv for lv, n in held.items() if n >= 10 or n == 0} | (
        {None} & set(marital["levels"])
    )


def test_a_few_missing_values_are_not_a_rare_level_to_merge(sd2011_subset) -> None:
    """Issue 36: "level(s) held by fewer than 10 records" must not count the NA level."""
    from pipeline import notices

    df, schema = sd2011_subset
    frame = df.copy()
    frame["sex"] = frame["sex"].astype(object)
    frame.loc[frame.index[:3], "sex"] = None  # 3 missing values, both labelled levels frequent
    frame["sex"] = pd.Categorical(frame["sex"], categories=df["sex"].cat.categories)
    with notices.collected() as raised:
        synthesise_frame(frame, schema, params(variables=["sex", "agegr"], sdc=[]))
    assert not [w for w in raised if "'sex'" in w and "held by fewer than" in w]
