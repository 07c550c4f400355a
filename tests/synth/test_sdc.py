"""SDC of the ground-truth variables and margin tabulation (pandas and Dask)."""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from pipeline.errors import ParameterError
from pipeline.evaluation.execution import Executor
from pipeline.rcompat import quantile7 as _quantile7
from pipeline.synth import Categorise, MergeLevels, TopBottomCoding, apply_sdc, margin_sets, tabulate
from pipeline.synth.sdc import interval_labels


def test_top_bottom_then_bins(sd2011_subset) -> None:
    df, schema = sd2011_subset
    steps = [
        TopBottomCoding(variable="income", bottom=100, top=4000),
        Categorise(variable="income", breaks=(100, 1000, 2000, 4000)),
    ]
    out = apply_sdc(df, schema, ["income", "sex"], steps)
    income = out.transform(df)["income"]
    assert list(income.cat.categories) == ["[100,1e+03)", "[1e+03,2e+03)", "[2e+03,4e+03]", "-8"]
    raw = df["income"]
    assert (income == "-8").sum() == (raw == -8).sum()
    assert (income == "[100,1e+03)").sum() == ((raw != -8) & (raw < 1000) & raw.notna()).sum()
    assert (income == "[2e+03,4e+03]").sum() == (raw >= 2000).sum()
    assert income.isna().sum() == raw.isna().sum()
    assert out.records[0] == {
        "step": "top_bottom_coding",
        "variable": "income",
        "bottom": 100.0,
        "top": 4000.0,
        "exclude": [-8.0],
    }
    assert out.bins["income"].codes == (-8.0,)


def test_quantile_breaks_match_r_type7() -> None:
    x = np.array([1, 2, 2, 3, 7, 7, 7, 10, 12, 40.0])
    vals, counts = np.unique(x, return_counts=True)
    probs = np.arange(6) * (1 / 5)
    np.testing.assert_allclose(_quantile7(vals, counts, probs), np.quantile(x, probs), rtol=1e-15)


def test_quantile_categorise_and_labels(sd2011_subset) -> None:
    df, schema = sd2011_subset
    out = apply_sdc(df, schema, ["age"], [Categorise(variable="age", groups=5)])
    breaks = np.quantile(df["age"].dropna(), np.arange(6) / 5)
    assert out.bins["age"].breaks == pytest.approx(tuple(breaks))
    assert out.records[0]["from_data"] is True
    assert out.transform(df)["age"].notna().sum() == df["age"].notna().sum()
    # R cut(dig.lab = 3) style, with more digits only where needed to keep labels distinct
    assert interval_labels([0, 1000.5, 1000.7]) == ("[0,1000)", "[1000,1001]")
    assert interval_labels([16, 25, 1000]) == ("[16,25)", "[25,1e+03]")


def test_merge_small_levels(sd2011_subset) -> None:
    df, schema = sd2011_subset
    counts = df["marital"].value_counts()
    out = apply_sdc(df, schema, ["marital"], [MergeLevels(variable="marital", min_count=100)])
    small = [lv for lv in schema["marital"].levels if counts[lv] < 100]
    assert out.records[0]["merged"][: len(small)] == small
    assert out.levels["marital"][-1] == "Other"
    merged = out.transform(df)
    assert (merged["marital"] == "Other").sum() >= 100
    assert len(merged) == len(df)
    by_hand = apply_sdc(
        df,
        schema,
        ["marital"],
        [MergeLevels(variable="marital", groups={"SEPARATED": ("LEGALLY SEPARATED", "DE FACTO SEPARATED")})],
    )
    assert by_hand.levels["marital"] == ("SINGLE", "MARRIED", "WIDOWED", "DIVORCED", "SEPARATED")


def test_sdc_errors(sd2011_subset) -> None:
    df, schema = sd2011_subset
    with pytest.raises(ParameterError, match="numeric without bins"):
        apply_sdc(df, schema, ["sex", "income"])
    with pytest.raises(ParameterError, match="outside the breaks"):
        apply_sdc(df, schema, ["income"], [Categorise(variable="income", breaks=(0, 100))])
    with pytest.raises(ParameterError, match="not in the data"):
        apply_sdc(df, schema, ["nope"])
    with pytest.raises(ParameterError, match="not a numeric"):
        apply_sdc(df, schema, ["sex"], [Categorise(variable="sex", breaks=(0, 1))])
    with pytest.raises(ParameterError, match="not a factor"):
        apply_sdc(df, schema, ["age"], [Categorise(variable="age", breaks=(0, 50, 100)), MergeLevels(variable="age")])
    with pytest.raises(ValueError, match="strictly increasing"):
        Categorise(variable="age", breaks=(3, 1))


def test_margin_sets_order_and_errors() -> None:
    assert margin_sets(["a", "b", "c"]) == [("a", "b"), ("a", "c"), ("b", "c")]
    assert margin_sets(["a", "b", "c"], None, [["c", "a"]]) == [("c", "a")]
    assert len(margin_sets(list("abcdefghijk"))) == 55
    with pytest.raises(ParameterError, match="'z'"):
        margin_sets(["a", "b"], "twoway", [["a", "z"]])
    with pytest.raises(ParameterError, match="twice"):
        margin_sets(["a", "b"], "twoway", [["b", "a"]])


@pytest.mark.parametrize("npartitions", [1, 4])
def test_tabulate_pandas_equals_dask(sd2011_subset, npartitions: int) -> None:
    df, schema = sd2011_subset
    names = ["sex", "agegr", "edu", "smoke"]
    margins = [*margin_sets(names), ("sex", "agegr", "edu")]
    levels = [schema[v].levels for v in names]
    layout, tables, n = tabulate(df[names], names, levels, margins)
    assert n == len(df)
    assert layout.levels[1][-1] is None  # agegr has missing values: NA level last
    crosstab = df.groupby(["agegr", "edu"], observed=False).size().unstack()
    np.testing.assert_array_equal(tables[3].counts[:6, :4], crosstab.to_numpy())
    assert all(t.total == n for t in tables)
    d_layout, d_tables, d_n = tabulate(dd.from_pandas(df[names], npartitions=npartitions), names, levels, margins)
    assert d_layout == layout and d_n == n
    for a, b in zip(tables, d_tables, strict=True):
        np.testing.assert_array_equal(a.counts, b.counts)


def test_sdc_on_dask_equals_pandas(sd2011_subset) -> None:
    df, schema = sd2011_subset
    steps = [
        TopBottomCoding(variable="income", bottom=0, top=6000),
        Categorise(variable="income", groups=4),
        Categorise(variable="age", groups=5, style="equal"),
        MergeLevels(variable="marital", min_count=60),
    ]
    names = ["income", "age", "marital", "sex"]
    local = apply_sdc(df, schema, names, steps, Executor(policy="memory"))
    dist = apply_sdc(dd.from_pandas(df, npartitions=4), schema, names, steps, Executor(policy="blocks"))
    assert local.records == dist.records and local.levels == dist.levels and local.bins == dist.bins
    per_partition = dd.from_pandas(df, npartitions=4).map_partitions(dist.transform).compute()
    pd.testing.assert_frame_equal(local.transform(df), per_partition)
