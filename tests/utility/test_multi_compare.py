"""``multi_compare`` (synthpop's ``multi.compare``).

There is no synthpop reference for it (``multi.compare`` returns a ggplot object, and
/work/shared/reference holds none): every table here is checked against a brute-force pandas
``groupby`` / ``pd.cut`` of the same records, and the histogram edges against ggplot2's rule
worked by hand for SD2011's ages.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pandas as pd
import pytest

from pipeline.datasets import load_demo, load_demo_synthetic
from pipeline.errors import ParameterError
from pipeline.evaluation.data import as_eval_data
from pipeline.evaluation.execution import Executor
from pipeline.utility.api import multi_compare
from pipeline.utility.measure import MultiCompareMeasure
from pipeline.utility.multi_compare import ggplot_width_breaks
from pipeline.utility.plots import plot_multi_compare

MEMORY = Executor(policy="memory")


@cache
def sd2011() -> tuple[pd.DataFrame, tuple[pd.DataFrame, ...], object]:
    orig = load_demo("sd2011_subset")
    syn = load_demo_synthetic("sd2011_cart")[:3]
    return orig.to_pandas(), tuple(s.to_pandas() for s in syn), orig.schema


def _labels(s: pd.Series) -> pd.Series:
    """A by or var column as the result's labels (NA a level of its own)."""
    return s.astype(object).where(s.notna(), None)


def brute_counts(frames: list[pd.DataFrame], var: str, by: list[str], columns: pd.Series | None = None) -> pd.Series:
    """Records per (by..., category) summed over ``frames``, by pandas groupby."""
    parts = []
    for f in frames:
        g = pd.DataFrame({b: _labels(f[b]).fillna("<NA>") for b in by})
        g["category"] = (_labels(f[var]) if columns is None else columns.loc[f.index]).fillna("<NA>")
        parts.append(g)
    return pd.concat(parts).groupby([*by, "category"], dropna=False).size()


def got_counts(result, source: str) -> pd.Series:
    frame = result.frame()
    frame = frame[frame["source"] == source].fillna({"category": "<NA>", **{b: "<NA>" for b in result.by}})
    return frame.set_index([*result.by, "category"])["count"]


def test_factor_by_two_factors_pooled() -> None:
    orig, syn, schema = sd2011()
    r = multi_compare(orig, list(syn), "smoke", ["sex", "agegr"], schema=schema, executor=MEMORY)
    assert r.sources == ("original", "mean")
    assert r.categories == ("YES", "NO", None)  # the schema's levels, then NA (held)
    for source, frames, scale in (("original", [orig], 1), ("mean", list(syn), len(syn))):
        want = brute_counts(frames, "smoke", ["sex", "agegr"]) / scale
        got = got_counts(r, source)
        got = got[got > 0]
        pd.testing.assert_series_equal(got.sort_index(), want.astype(float).sort_index(), check_names=False)
    # groups: every combination present, level order, NA of agegr last
    assert r.groups[0] == ("MALE", "16-24")
    assert ("MALE", None) in r.groups
    assert r.groups.index(("MALE", None)) == r.groups.index(("FEMALE", "16-24")) - 1
    # percentages within group and source; records per group = synthpop's bytable
    np.testing.assert_allclose(np.nansum(r.percents, axis=2)[r.records > 0], 100)
    bytable = orig.groupby([_labels(orig["sex"]).fillna("<NA>"), _labels(orig["agegr"]).fillna("<NA>")]).size()
    assert r.records[0].sum() == len(orig) and sorted(r.records[0][r.records[0] > 0]) == sorted(bytable)
    sizes = r.tidy()
    sizes = sizes[(sizes["measure"] == "group_records") & (sizes["synthetic"] == "original")]["value"]
    assert sorted(sizes[sizes > 0]) == sorted(bytable)


def test_selected_sets_are_compared_one_by_one() -> None:
    orig, syn, schema = sd2011()
    r = multi_compare(orig, list(syn), "edu", "sex", msel=[3, 1], schema=schema, executor=MEMORY)
    assert r.sources == ("original", "1", "3")
    for source, frame in (("1", syn[0]), ("3", syn[2])):
        want = brute_counts([frame], "edu", ["sex"]).astype(float)
        got = got_counts(r, source)
        pd.testing.assert_series_equal(got[got > 0].sort_index(), want.sort_index(), check_names=False)


def test_numeric_histogram_ggplot_binwidth() -> None:
    orig, syn, schema = sd2011()
    r = multi_compare(orig, list(syn), "age", ["sex"], binwidth=5, schema=schema, executor=MEMORY)
    lo = min(f["age"].min() for f in (orig, *syn))
    hi = max(f["age"].max() for f in (orig, *syn))
    assert lo == 16  # SD2011's youngest: ggplot2's lattice 2.5 + 5k puts the first edge at 12.5
    assert r.breaks[0] == 12.5 and r.breaks[-1] > hi and r.breaks[-2] < hi
    np.testing.assert_allclose(np.diff(r.breaks), 5)
    edges = np.asarray(r.breaks)
    cut = pd.Series(pd.cut(pd.concat([orig["age"], *[s["age"] for s in syn]], ignore_index=True), edges,
                           right=True, include_lowest=True, labels=list(r.categories[: len(edges) - 1])))  # fmt: skip
    for source, frames, scale in (("original", [orig], 1), ("mean", list(syn), len(syn))):
        stacked = pd.concat(frames, ignore_index=True)
        offset = 0 if source == "original" else len(orig)
        columns = cut.iloc[offset : offset + len(stacked)].reset_index(drop=True).astype(object)
        want = brute_counts([stacked], "age", ["sex"], columns.where(columns.notna(), None)) / scale
        got = got_counts(r, source)
        pd.testing.assert_series_equal(got[got > 0].sort_index(), want.astype(float).sort_index(), check_names=False)
    # ggplot2's density integrates to 1 in every group and source
    np.testing.assert_allclose((r.density * np.diff(r.breaks)).sum(axis=2), 1)


def test_ggplot_width_breaks_by_hand() -> None:
    # boundary 5, origin 5 + floor(-0.5) * 10 = -5, seq(-5, 20 + (1 - 1e-8) * 10, 10)
    np.testing.assert_allclose(ggplot_width_breaks(0.0, 20.0, 10.0), [-5, 5, 15, 25])
    # one value: origin 1 + floor(1) * 2 = 3, seq gives one break, ggplot2 adds origin + width
    np.testing.assert_allclose(ggplot_width_breaks(3.0, 3.0, 2.0), [3, 5])


def test_numeric_special_codes_and_na_have_columns() -> None:
    orig, syn, schema = sd2011()
    r = multi_compare(orig, list(syn), "income", ["sex"], cont_na={"income": -8}, schema=schema, executor=MEMORY)
    assert r.categories[-2:] == ("miss.-8", None)
    labels = list(r.categories)
    for source, frames, scale in (("original", [orig], 1), ("mean", list(syn), len(syn))):
        stacked = pd.concat(frames, ignore_index=True)
        for gi, (sex,) in enumerate(r.groups):
            inc = stacked.loc[_labels(stacked["sex"]).eq(sex) if sex is not None else stacked["sex"].isna(), "income"]
            si = r.sources.index(source)
            pooled = np.rint(r.counts[si, gi] * scale)  # the pooled counts (the rows hold them / m)
            assert pooled[labels.index("miss.-8")] == (inc == -8).sum()
            assert pooled[labels.index(None)] == inc.isna().sum()
            counted = inc[(inc != -8) & inc.notna()]
            # right-closed bins, the first closed (incomes sit on the round edges)
            want = pd.cut(counted, r.breaks, right=True, include_lowest=True).value_counts(sort=False)
            np.testing.assert_array_equal(pooled[: len(r.breaks) - 1], want.to_numpy())
    assert r.breaks[0] <= 0 and r.breaks[0] % 500 == 0  # R's pretty: rounded outward


def test_few_numeric_values_and_numeric_by() -> None:
    orig, syn, _ = sd2011()
    o, s = orig.copy(), [f.copy() for f in syn]
    for f in (o, *s):
        f["kids"] = (f["age"] // 30).clip(upper=2).astype(float)  # 3 values: a factor of values
        f["band"] = (f["age"] // 20) * 20.0  # a numeric by variable
    r = multi_compare(o, s, "kids", ["band"], executor=MEMORY)
    assert r.kind == "factor" and r.categories[:3] == ("0", "1", "2")
    assert [g[0] for g in r.groups] == ["0", "20", "40", "60", "80"]
    want = brute_counts([o], "kids", ["band"])
    got = got_counts(r, "original")
    got = got[got > 0]
    assert list(got.to_numpy()) == list(want.to_numpy().astype(float))


def test_rare_values_are_coarsened_in_written_rows() -> None:
    orig, syn, _ = sd2011()
    o = orig.copy()
    o["edu"] = o["edu"].cat.add_categories("ZZMARKER_LEVEL")
    o.loc[:2, "edu"] = "ZZMARKER_LEVEL"
    o["ls_num"] = 1.0
    o.loc[:3, "ls_num"] = 987654.321  # a rare value of a few-valued numeric var
    s = [f.assign(ls_num=1.0) for f in syn]
    r = multi_compare(o, s, "ls_num", ["sex", "edu"], executor=MEMORY)
    assert ("FEMALE", "ZZMARKER_LEVEL") in r.groups or ("MALE", "ZZMARKER_LEVEL") in r.groups
    text = r.tidy().to_string() + str(r.to_dict())
    assert "ZZMARKER" not in text and "987654" not in text
    assert "(<10 records)" in text


def test_refusals() -> None:
    orig, syn, schema = sd2011()
    with pytest.raises(ParameterError, match="msel"):
        multi_compare(orig, list(syn), "smoke", "sex", msel=4, schema=schema, executor=MEMORY)
    with pytest.raises(ParameterError, match="other than var"):
        multi_compare(orig, list(syn), "smoke", "smoke", schema=schema, executor=MEMORY)
    with pytest.raises(ParameterError, match="max_groups = 10"):
        multi_compare(orig, list(syn), "smoke", ["sex", "edu", "agegr"], max_groups=10, schema=schema, executor=MEMORY)
    with pytest.raises(ParameterError, match="more than 5 distinct values"):
        multi_compare(orig, list(syn), "smoke", "age", max_groups=5, schema=schema, executor=MEMORY)
    # validate's check: the original alone already has 14 sex x agegr groups
    data = as_eval_data(orig, list(syn), schema=schema)
    with pytest.raises(ParameterError, match="form 14 groups"):
        MultiCompareMeasure(var="smoke", by=["sex", "agegr"], max_groups=10).check_aggregates(data, MEMORY)
    MultiCompareMeasure(var="smoke", by=["sex", "agegr"], max_groups=14).check_aggregates(data, MEMORY)
    with pytest.warns(UserWarning, match="removed from by"):
        r = multi_compare(orig, list(syn), "smoke", ["smoke", "sex"], schema=schema, executor=MEMORY)
    assert r.by == ("sex",)


def test_plot_reads_rows() -> None:
    orig, syn, schema = sd2011()
    r = multi_compare(orig, list(syn), "smoke", ["sex", "agegr"], schema=schema, executor=MEMORY)
    fig = plot_multi_compare(r.tidy(), "smoke")
    titled = [ax.get_title() for ax in fig.axes if ax.get_visible() and ax.get_title()]
    assert titled[0] == "sex=MALE, agegr=16-24" and len(titled) == len(r.groups)
    h = plot_multi_compare(multi_compare(orig, list(syn), "age", "sex", binwidth=5, schema=schema,
                                         executor=MEMORY).tidy(), y_hist="density")  # fmt: skip
    assert h.axes[0].get_ylabel() == "density"
