"""Unit tests of the building blocks: R labels, classInt breaks, coders, options, the kernel."""

from __future__ import annotations

import itertools
from collections import Counter

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from pipeline.blocks import block_ids
from pipeline.evaluation.data import as_eval_data
from pipeline.evaluation.execution import Executor
from pipeline.rcompat import as_character as r_number_label
from pipeline.rcompat import class_breaks, quantile7
from pipeline.rcompat import cut_labels as interval_labels
from pipeline.risk.disclosure import disclosure
from pipeline.risk.disclosure.coding import MISSING, build_coders, encode_frame, encode_joint
from pipeline.risk.disclosure.compute import gather_stats, merge_summaries, tally_records, tally_summary
from pipeline.risk.disclosure.kernel import (
    COUNT,
    JointTables,
    KernelPlan,
    Stat,
    _distinct,
    _pair_histogram,
    _sums_by,
    block_summary,
    cell_counts,
    combine,
    joint_counts,
    joint_counts_by_target,
)
from pipeline.risk.disclosure.params import DisclosureParams, bind_options


@pytest.mark.parametrize(
    ("value", "label"),
    [
        (57.0, "57"),
        (-8.0, "-8"),
        (0.1, "0.1"),
        (2.5, "2.5"),
        (20000.0, "20000"),
        (100000.0, "1e+05"),
        (123456.0, "123456"),
        (0.0001, "1e-04"),
        (1 / 3, "0.333333333333333"),
        (1e15, "1e+15"),
        (2.0**53, "9007199254740992"),
        (0.0, "0"),
        (-0.001, "-0.001"),
        (1234.5678, "1234.5678"),
    ],
)
def test_r_number_label_is_as_character(value: float, label: str) -> None:
    assert r_number_label(value) == label


def test_quantile_type7_from_counts() -> None:
    values, counts = np.array([1.0, 2, 3, 5, 8, 13]), np.array([1, 2, 1, 3, 1, 1])
    probs = np.array([0, 0.1, 0.25, 0.5, 0.9, 1])
    np.testing.assert_allclose(
        quantile7(values, counts, probs), np.quantile(np.repeat(values, counts), probs), rtol=1e-15
    )


def test_class_breaks_quantile_unique_and_equal() -> None:
    x = np.arange(1.0, 11)
    ones = np.ones(10, dtype=np.int64)
    np.testing.assert_allclose(class_breaks(x, ones, 4, "quantile"), [1, 3.25, 5.5, 7.75, 10])
    # at most n distinct values: one class per value, mid-points, ends padded by half the mean gap
    np.testing.assert_allclose(
        class_breaks(np.array([1.0, 2, 4]), np.ones(3, np.int64), 3, "quantile"), [0.25, 1.5, 3, 4.75]
    )
    np.testing.assert_allclose(class_breaks(x, ones, 3, "equal"), [1, 4, 7, 10])
    # duplicated quantiles are dropped
    assert class_breaks(np.array([1.0, 2, 9]), np.array([8, 1, 1]), 2, "quantile").tolist() == [1, 9]


def test_interval_labels_like_cut() -> None:
    assert interval_labels([1, 3, 7.333333333, 11]) == ["[1,3)", "[3,7.3333333)", "[7.3333333,11]"]
    # digits are raised until neighbouring labels differ
    assert interval_labels([1, 1.000000001, 2]) == ["[1,1.000000001)", "[1.000000001,2]"]


def _stats(original: pd.DataFrame, synthetic: pd.DataFrame, variables: list[str]) -> list:
    """The value counts the measure builds its coders from (in memory)."""
    return gather_stats(as_eval_data(original, [synthetic]), Executor(policy="memory"), variables)


def test_grouping_with_special_code_and_missing() -> None:
    gt = pd.DataFrame({"k": pd.Categorical(list("ab") * 10), "inc": [-8.0, np.nan] + [float(v) for v in range(1, 19)]})
    coders = build_coders(_stats(gt, gt, ["k", "inc"]), ["k", "inc"], {"inc": 3}, {"inc": (-8.0,)})
    inc = coders["inc"]
    assert inc.labels == ("[1,6.6666667)", "[6.6666667,12.333333)", "[12.333333,18]", "-8", MISSING)
    codes = inc.encode(gt["inc"])
    assert [inc.labels[c] for c in codes[:4]] == ["-8", MISSING, "[1,6.6666667)", "[1,6.6666667)"]
    assert inc.labels[codes[-1]] == "[12.333333,18]"


def test_two_groups_fall_back_to_equal_widths() -> None:
    """synthpop redoes the grouping with equal widths when the original gets < 3 categories."""
    x = pd.DataFrame({"k": pd.Categorical(list("ab") * 5), "v": [1.0, 1, 1, 1, 1, 1, 1, 2, 3, 10]})
    with pytest.warns(UserWarning, match="only 2 groups"):
        coder = build_coders(_stats(x, x, ["v"]), ["v"], {"v": 2}, {})["v"]
    assert coder.labels[:2] == ("[1,5.5)", "[5.5,10]")


def test_numbers_that_print_alike_share_a_category() -> None:
    x = pd.DataFrame({"k": pd.Categorical(["a", "a"]), "v": [0.1 + 0.2, 0.3]})
    coder = build_coders(_stats(x, x, ["v"]), ["v"], {}, {})["v"]
    assert coder.labels == ("0.3", MISSING)


def test_per_key_options_are_bound_to_names() -> None:
    params = DisclosureParams(keys=["b", "a"], target="t", usekeysNA=[False, True], ngroups_keys=[0, 4])
    (opts,) = bind_options(params, ["b", "a"], ["t"])
    assert opts.usekeysNA == {"b": False, "a": True}
    assert opts.ngroups_keys == {"b": 0, "a": 4}
    (opts,) = bind_options(DisclosureParams(keys=["b", "a"], target="t", usekeysNA={"a": False}), ["b", "a"], ["t"])
    assert opts.usekeysNA == {"b": True, "a": False}


def _coded(seed: int) -> tuple[pd.DataFrame, list[pd.DataFrame], KernelPlan]:
    """Cell counts of random coded records (keys k1, k2; targets t0, t1) and a plan with every exclusion."""
    rng = np.random.default_rng(seed)

    def draw(n: int) -> pd.DataFrame:
        codes = pd.DataFrame(
            {
                "k1": rng.integers(0, 4, n),
                "k2": rng.integers(0, 6, n),
                "t0": rng.integers(0, 3, n),
                "t1": rng.integers(0, 9, n),
            }
        )
        return cell_counts(codes, ("k1", "k2"), (4, 6), ("t0", "t1"), (3, 9))

    plan = KernelPlan(
        keys=("k1", "k2"),
        target_index=0,
        key_sizes=(4, 6),
        target_size=3,
        not_target=(2,),
        keys_missing=((1, 5),),
        exclude=((0, 1, 0),),
        denom_lim=3,
        thresh_2way=1,
    )
    return draw(400), [draw(300), draw(350)], plan


def test_kernel_statistics_do_not_depend_on_blocks() -> None:
    original, synthetic, plan = _coded(1)
    whole = combine([block_summary(original, *synthetic, plan=plan)])
    n_blocks = 5
    ids = [block_ids(f, ["k1", "k2"], n_blocks) for f in (original, *synthetic)]
    parts = [
        block_summary(*(f[i == b] for f, i in zip((original, *synthetic), ids, strict=True)), plan=plan)
        for b in range(n_blocks)
    ]
    split = combine(parts)
    assert whole.keys() == split.keys()
    for key, rows in whole.items():
        for col in ("a", "b", "c", "value"):
            np.testing.assert_array_equal(getattr(rows, col), getattr(split[key], col), err_msg=str(key))
    assert whole[(0, int(Stat.N_ROWS))].value.tolist() == [400]


def test_kernel_of_several_tables_per_data_set_equals_that_of_their_concatenation() -> None:
    original, synthetic, plan = _coded(3)

    def pieces(f: pd.DataFrame) -> list[pd.DataFrame]:  # an empty and a one-row table; cells in two tables
        this = f[f["__target__"] == plan.target_index]
        return [f.iloc[:0], this.iloc[:1], f.iloc[1 : len(f) // 2], f.iloc[len(f) // 3 :], this.iloc[:0]]

    def doubled(f: pd.DataFrame) -> pd.DataFrame:  # the same records as the pieces, in one table
        return pd.concat([f.iloc[:1], f.iloc[1 : len(f) // 2], f.iloc[len(f) // 3 :]], ignore_index=True)

    by_pieces = combine([block_summary(pieces(original), *map(pieces, synthetic), plan=plan)])
    concatenated = combine([block_summary(doubled(original), *map(doubled, synthetic), plan=plan)])
    assert by_pieces.keys() == concatenated.keys()
    for key, rows in concatenated.items():
        for col in ("a", "b", "c", "value"):
            np.testing.assert_array_equal(getattr(rows, col), getattr(by_pieces[key], col), err_msg=str(key))


def test_kernel_mixed_radix_overflow_fallback_gives_same_result() -> None:
    original, synthetic, plan = _coded(2)
    wide = KernelPlan(**{**plan.__dict__, "key_sizes": (2**40, 2**30)})
    a = combine([block_summary(original, *synthetic, plan=plan)])
    b = combine([block_summary(original, *synthetic, plan=wide)])
    for key in a:
        if key[1] != int(Stat.PAIRS) and key[1] != int(Stat.GT_KT):
            np.testing.assert_array_equal(a[key].value, b[key].value, err_msg=str(key))


def test_encoded_codes_align_by_label_not_by_position() -> None:
    gt = pd.DataFrame({"k": pd.Categorical(["x", "y"], categories=["x", "y"]), "t": pd.Categorical(["u", "v"])})
    sd = pd.DataFrame({"k": pd.Categorical(["y", "x"], categories=["y", "x"]), "t": pd.Categorical(["v", "u"])})
    coders = build_coders(_stats(gt, sd, ["k", "t"]), ["k", "t"], {}, {})
    a, b = encode_frame(gt, coders), encode_frame(sd, coders)
    assert a["k"].tolist() == b["k"].tolist()[::-1]
    res = disclosure(gt, sd, ["k"], "t")
    assert res.attrib.loc[1, "DiSCO"] == 100


def test_single_key_counts_declared_levels_as_present() -> None:
    """R (table of a factor) lists every level of a single key, so UiOiS counts unobserved ones."""
    gt = pd.DataFrame(
        {"k": pd.Categorical(["a", "b", "b"], categories=["a", "b", "c"]), "t": pd.Categorical(["u", "u", "v"])}
    )
    sd = pd.DataFrame({"k": pd.Categorical(["b", "b"], categories=["a", "b", "c"]), "t": pd.Categorical(["u", "u"])})
    res = disclosure(gt, sd, "k", "t")
    assert res.ident.loc[1, "UiO"] == pytest.approx(100 / 3)
    assert res.ident.loc[1, "UiOiS"] == pytest.approx(100 / 3)  # "a" is a declared level of the synthetic factor
    assert res.ident.loc[1, "repU"] == 0


def _values(frame: pd.DataFrame, variables: list[str]) -> list[tuple]:
    """Each row's values of ``variables`` (missing as None)."""
    return list(zip(*(frame[v].astype(object).where(frame[v].notna(), None) for v in variables), strict=True))


def _brute_joint(frame: pd.DataFrame, variables: list[str]) -> dict[tuple, int]:
    """Records per combination of values (missing a value), counted one record at a time."""
    return dict(Counter(_values(frame, variables)))


def _joint_as_dict(joint: pd.DataFrame, variables: list[str]) -> dict[tuple, int]:
    rows = _values(joint, variables)
    assert len(set(rows)) == len(rows)  # one row per combination
    return dict(zip(rows, joint[COUNT].tolist(), strict=True))


def _mixed_frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    sex = pd.Categorical(rng.choice(["M", "F", None], n, p=[0.45, 0.45, 0.1]), categories=["M", "F", "X"])
    age = rng.integers(16, 90, n).astype(float)
    age[rng.random(n) < 0.1] = np.nan
    income = np.round(rng.normal(2000, 50, n), 1)  # not whole numbers: factorised
    income[rng.random(n) < 0.1] = np.nan
    town = pd.array(rng.choice(["a", "b", "c", None], n), dtype="string")
    return pd.DataFrame({"sex": sex, "age": age, "income": income, "town": town})


def test_joint_counts_equal_a_group_by_of_the_values() -> None:
    frame = _mixed_frame(3000, 1)
    variables = ["sex", "age", "income", "town"]
    joint = joint_counts(frame, variables, ["sex"]).frame()
    assert list(joint.columns) == [*variables, COUNT]
    assert joint["sex"].dtype == frame["sex"].dtype and joint["town"].dtype == frame["town"].dtype
    assert joint[COUNT].sum() == len(frame) and (joint[COUNT] > 0).all()
    assert _joint_as_dict(joint, variables) == _brute_joint(frame, variables)
    # weights: counting counted combinations again (e.g. merging partitions) sums them
    halves = pd.concat(
        [
            joint_counts(frame[:1000], variables, ["sex"]).frame(),
            joint_counts(frame[1000:], variables, ["sex"]).frame(),
        ],
        ignore_index=True,
    )
    merged = joint_counts(halves, variables, ["sex"], halves[COUNT].to_numpy()).frame()
    assert _joint_as_dict(merged, variables) == _brute_joint(frame, variables)


def test_joint_counts_when_the_combinations_cannot_be_numbered() -> None:
    # eight columns of ~470 distinct values each: ~2^70 possible combinations, beyond an int64
    rng = np.random.default_rng(2)
    frame = pd.DataFrame({f"x{i}": rng.integers(0, 4000, 500).astype(float) * 1.5 for i in range(8)})
    frame.iloc[::7, 0] = np.nan
    frame = pd.concat([frame, frame.iloc[:100]], ignore_index=True)  # repeated combinations
    variables = list(frame.columns)
    joint = joint_counts(frame, variables, []).frame()
    assert len(joint) == 500
    assert _joint_as_dict(joint, variables) == _brute_joint(frame, variables)


def test_joint_counts_renumber_again_and_again_when_every_record_is_distinct() -> None:
    # register-like: factors, whole numbers and money with about one distinct value per record,
    # so the combinations are renumbered before every money column; missing values and ties
    rng = np.random.default_rng(7)
    n = 4000
    frame = _mixed_frame(n, 8)
    for i in range(6):
        money = np.round(rng.lognormal(8, 1, n), 2)
        money[rng.random(n) < 0.05] = np.nan
        money[:40] = money[40:80]  # repeated values
        frame[f"money{i}"] = money
    frame = pd.concat([frame, frame.iloc[:300]], ignore_index=True)  # repeated combinations
    variables = list(frame.columns)
    joint = joint_counts(frame, variables, ["sex"]).frame()
    assert joint[COUNT].sum() == len(frame) and len(joint) == n
    assert _joint_as_dict(joint, variables) == _brute_joint(frame, variables)
    weighted = joint_counts(joint, variables, ["sex"], joint[COUNT].to_numpy()).frame()
    assert _joint_as_dict(weighted, variables) == _brute_joint(frame, variables)


def test_joint_counts_of_no_records() -> None:
    frame = _mixed_frame(10, 3).iloc[:0]
    joint = joint_counts(frame, ["sex", "age", "town"], ["sex"]).frame()
    assert len(joint) == 0 and list(joint.columns) == ["sex", "age", "town", COUNT]


def _merged_joint(parts: list) -> dict[tuple, int]:
    """The per-partition counts of one data set merged (exact sums by combination of values)."""
    out: Counter = Counter()
    for part in parts:
        frame = part.frame()
        for key, n in zip(_values(frame, list(part.variables)), frame[COUNT].tolist(), strict=True):
            out[key] += n
    return dict(out)


def _wide_frame(n: int, seed: int) -> pd.DataFrame:
    """:func:`_mixed_frame` with money in whole units (about one value per record) and a level
    of ``sex`` that no record has."""
    frame = _mixed_frame(n, seed)
    rng = np.random.default_rng(seed + 100)
    money = rng.integers(0, 4 * n + 1, n).astype(float)  # 0 and 4n: values on the ends of the range
    money[rng.random(n) < 0.05] = np.nan
    frame["money"] = money
    return frame


@pytest.mark.parametrize("sizes", [[3000], [1200, 0, 1, 1799], [0], [1], [2, 2]])
def test_joint_counts_by_target_equal_the_joint_counts_of_each_target(sizes: list[int]) -> None:
    whole = _wide_frame(sum(sizes), 21)
    whole = pd.concat([whole, whole.iloc[: len(whole) // 3]], ignore_index=True)  # repeated records (ties)
    bounds = np.cumsum([0, *sizes[:-1], len(whole) - sum(sizes[:-1])])
    frames = [whole.iloc[a:b] for a, b in itertools.pairwise(bounds.tolist())]
    keys, targets = ["sex", "age", "town"], ["income", "money", "sex_t"]
    for f in frames:
        f.insert(len(f.columns), "sex_t", f["sex"])
    whole["sex_t"] = whole["sex"]
    got = joint_counts_by_target(frames, keys, targets, ["sex", "sex_t"])
    assert [j.variables for j in got] == [(*keys, t) for t in targets]
    for joint, target in zip(got, targets, strict=True):
        assert _merged_joint([joint]) == _brute_joint(whole, [*keys, target])
        # a target with few values per record is counted (one row per combination); one with more
        # than one per ROWS_PER_VALUE records is left as the records
        distinct = len(_brute_joint(whole, [*keys, target]))
        assert len(joint) in ({distinct} if target == "sex_t" and len(whole) >= 64 else {distinct, len(whole)})
    # the value counts of every variable, each from one table, equal those of the records
    merged, _ = merge_summaries([tally_summary(JointTables(tuple(got)))])
    expected = JointTables(tuple(joint_counts(frames, [*keys, t], ["sex", "sex_t"]) for t in targets)).value_counts()
    for v in [*keys, *targets]:
        pd.testing.assert_series_equal(merged[v], expected[v])
    # weighted rows (combinations already counted) give the same counts
    counted = joint_counts(frames, [*keys, *targets], ["sex", "sex_t"]).frame()
    weighted = joint_counts_by_target(counted, keys, targets, ["sex", "sex_t"], counted[COUNT].to_numpy())
    for joint, target in zip(weighted, targets, strict=True):
        assert _merged_joint([joint]) == _brute_joint(whole, [*keys, target])


def test_gather_stats_keeps_the_partial_counts_in_the_driver_only_within_one_block() -> None:
    frame = _mixed_frame(3000, 4)
    syn = _mixed_frame(2000, 5)
    variables = ["sex", "age", "income", "town"]
    data = as_eval_data(frame, [syn])
    in_memory = gather_stats(data, Executor(policy="memory"), variables)
    without = gather_stats(data, Executor(policy="memory"), variables, joint=False)
    assert in_memory.local and in_memory.partials is not None and without.partials is None
    assert [sum(int(j.counts.sum()) for j in p) for p in in_memory.partials] == [3000, 2000]
    for a, b in zip(in_memory, without, strict=True):
        for v in variables:
            pd.testing.assert_series_equal(a[v].counts, b[v].counts, check_names=False)
            assert (a[v].n_missing, a[v].n) == (b[v].n_missing, b[v].n)
    # on partitions: the counts of each partition, in the driver while they fit one block
    lazy = as_eval_data(
        dd.from_pandas(frame, npartitions=3, sort=False), [dd.from_pandas(syn, npartitions=2)], data.schema
    )
    fits = gather_stats(lazy, Executor(policy="blocks", block_rows=10**6), variables)
    assert fits.local and [len(p) for p in fits.partials] == [3, 2]
    assert _merged_joint(fits.partials[0]) == _brute_joint(frame, variables)
    assert fits.partial_rows == sum(len(j) for j in fits.partials[0])
    # past the executor's block size they stay where they were computed; the value counts are exact
    too_big = gather_stats(lazy, Executor(policy="blocks", block_rows=500), variables)
    assert not too_big.local and too_big.partial_rows == fits.partial_rows
    for a, b in zip(too_big, without, strict=True):
        for v in variables:
            pd.testing.assert_series_equal(a[v].counts, b[v].counts, check_names=False)


def test_value_counts_of_the_partial_counts_equal_those_of_the_records() -> None:
    frame = _mixed_frame(3000, 6)
    variables, factors = ["sex", "age", "income", "town"], ["sex"]
    parts = [tally_records(frame[i : i + 700], variables, factors) for i in range(0, 3000, 700)]
    merged, rows = merge_summaries([tally_summary(p) for p in parts])
    assert rows == sum(len(p) for p in parts)
    # a factor: every level, missing first, as the records' value counts
    assert merged["sex"].index[0] != merged["sex"].index[0] and list(merged["sex"].index[1:]) == ["M", "F", "X"]
    assert merged["sex"].tolist() == [int(frame["sex"].isna().sum()), *(int((frame["sex"] == c).sum()) for c in "MFX")]
    for v in variables[1:]:
        brute = Counter(None if pd.isna(x) else x for x in frame[v].tolist())
        got = merged[v]
        assert dict(zip([None if pd.isna(x) else x for x in got.index], got.tolist(), strict=True)) == brute


@pytest.mark.parametrize("rows", [0, 1, 2, 40, 3000], ids=lambda n: f"{n} records")
def test_joint_counts_dense_and_hashed_equal_a_group_by_with_missing_keys(rows: int) -> None:
    # sex x age x town: 5 x 76 x 5 = 1,900 possible numbers: dense at 3,000 records (<= 8 per row), hashed below
    frame = _mixed_frame(3000, 9).iloc[:rows]
    variables, factors = ["sex", "age", "town"], ["sex"]
    joint = joint_counts(frame, variables, factors)
    assert joint.counts.dtype == np.int64 and all(c.dtype == np.int32 for c in joint.codes)
    assert _joint_as_dict(joint.frame(), variables) == _brute_joint(frame, variables)
    assert int(joint.counts.sum()) == rows
    counts = joint.value_counts()
    assert int(counts["sex"].sum()) == rows and len(counts["sex"]) == 4  # every level listed, missing first
    for v in ("age", "town"):  # only the values present
        assert sorted(counts[v].tolist()) == sorted(Counter(_values(frame, [v])).values())


@pytest.mark.parametrize("rows", [0, 1, 2, 40, 3000], ids=lambda n: f"{n} records")
@pytest.mark.parametrize("weighted", [False, True], ids=["records", "weighted"])
def test_joint_counts_without_missing_values_equal_a_group_by(rows: int, weighted: bool) -> None:
    # no missing value in a column: it gets no code for missing (a smaller space of numbers:
    # 2 x 7 x 4 = 56, dense from 7 records); ties, the ends of the age range, an unused level
    rng = np.random.default_rng(rows)
    age = rng.integers(-3, 4, rows).astype(float)
    age[:2] = [-3.0, 3.0][: min(rows, 2)]  # the ends of the range
    frame = pd.DataFrame(
        {
            "sex": pd.Categorical(rng.choice(["M", "F"], rows), categories=["M", "F", "X"])[:rows],
            "age": age,
            "town": pd.Categorical(rng.choice(list("abcd"), rows), categories=list("abcd")),
        }
    )
    variables, factors = ["sex", "age", "town"], ["sex", "town"]
    weights = rng.integers(1, 5, rows) if weighted else None
    joint = joint_counts(frame, variables, factors, weights)
    expected: Counter = Counter()
    for row, w in zip(_values(frame, variables), weights if weighted else [1] * rows, strict=True):
        expected[row] += int(w)
    assert _joint_as_dict(joint.frame(), variables) == dict(expected)
    assert joint.counts.dtype == np.int64 and all(c.dtype == np.int32 for c in joint.codes)
    counts = joint.value_counts()
    # a factor: every level listed, missing first (with no record), as the records' value counts
    assert counts["sex"].index[0] != counts["sex"].index[0] and list(counts["sex"].index[1:]) == ["M", "F", "X"]
    total = int(sum(expected.values()))
    assert counts["sex"].tolist() == [0, *(sum(n for k, n in expected.items() if k[0] == c) for c in "MFX")]
    assert int(counts["town"].sum()) == total and int(counts["age"].sum()) == total


@pytest.mark.parametrize("cuts", [[0, 3000], [0, 0, 1, 1, 2999, 3000], [0, 1000, 2000, 3000]],
                         ids=["one frame", "empty and one-record frames", "three frames"])  # fmt: skip
@pytest.mark.parametrize("rows", [3000, 40], ids=["dense", "hashed"])
def test_joint_counts_of_several_frames_equal_those_of_their_concatenation(cuts: list[int], rows: int) -> None:
    # the partitions on one worker counted together: codes shared by the frames (missing values
    # in some frames only, whole numbers with other ranges, text and money factorised together)
    frame = _mixed_frame(3000, 12)
    frame.loc[:999, "age"] = frame.loc[:999, "age"].fillna(50.0) + 100  # another range, no missing value
    frame.loc[:1999, "sex"] = frame.loc[:1999, "sex"].fillna("M")  # missing in the last frame only
    frame = frame.iloc[: cuts[-1]]
    parts = [frame.iloc[a:b] for a, b in itertools.pairwise(cuts)]
    if rows < 3000:  # a few records in each frame: a space of numbers too large to count densely
        parts = [p.iloc[: rows // len(parts) + 1] for p in parts]
    variables, factors = ["sex", "age", "income", "town"], ["sex"]
    together = pd.concat(parts, ignore_index=True)
    joint = joint_counts(parts, variables, factors)
    assert _joint_as_dict(joint.frame(), variables) == _brute_joint(together, variables)
    weights = np.arange(len(together)) % 3 + 1
    weighted = joint_counts(parts, variables, factors, weights)
    expected: Counter = Counter()
    for row, w in zip(_values(together, variables), weights.tolist(), strict=True):
        expected[row] += w
    assert _joint_as_dict(weighted.frame(), variables) == dict(expected)
    one = joint_counts(together, variables, factors).value_counts()
    for v, counts in joint.value_counts().items():
        assert _present(counts) == _present(one[v]) == dict(Counter(x for (x,) in _values(together, [v])))


def _present(counts: pd.Series) -> dict:
    """Value counts with a count, missing as None."""
    return {None if pd.isna(k) else k: int(n) for k, n in counts.items() if n}


def test_joint_counts_of_frames_with_other_levels() -> None:
    a = pd.DataFrame({"sex": pd.Categorical(["M", "F", "M"]), "x": [1.0, 2.0, 2.0]})
    b = pd.DataFrame({"sex": pd.Categorical(["X", None, "M"]), "x": [2.0, 2.0, 1.0]})
    joint = joint_counts([a, b], ["sex", "x"], ["sex"])
    assert _joint_as_dict(joint.frame(), ["sex", "x"]) == _brute_joint(pd.concat([a, b]), ["sex", "x"])


def test_encode_joint_equals_encoding_the_values() -> None:
    # grouped age (intervals merge values) and NA in every variable: the table of a partition's values
    # gives the codes the coders give the values themselves
    data = as_eval_data(_mixed_frame(3000, 10), [_mixed_frame(2000, 11)])
    variables = ["sex", "age", "income", "town"]
    factors = [v for v in variables if data.schema[v].is_factor]
    stats = gather_stats(data, Executor(policy="memory"), variables)
    coders = build_coders(stats, variables, {"age": 4}, {}, "quantile")
    frame, syn = data.frames
    for part in (frame.iloc[:1], frame.iloc[:500], syn):
        joint = joint_counts(part, variables, factors)
        pd.testing.assert_frame_equal(
            encode_joint(joint, coders), encode_frame(joint.frame(), coders).reset_index(drop=True)
        )


@pytest.mark.parametrize("n", [0, 1, 5, 2000])
@pytest.mark.parametrize("weighted", [False, True], ids=["counts", "sums"])
def test_sums_by_dense_sorted_or_both_equal_a_brute_force_sum(n: int, weighted: bool) -> None:
    # values below the dense bound (DENSE_CELLS = 2^20 here), values on it and far above it, ties,
    # weights that cancel to zero sums (left out)
    rng = np.random.default_rng(n)
    bound = 1 << 20
    for high in (50, bound, 10**12):
        values = rng.integers(0, high, n).astype(np.int64)
        values[: n // 3] = rng.choice([0, bound - 1, bound, bound + 1], n // 3)
        weights = rng.integers(-2, 3, n).astype(np.int64) if weighted else None
        expected: Counter = Counter()
        for v, w in zip(values.tolist(), weights.tolist() if weighted else [1] * n, strict=True):
            expected[v] += w
        groups, sums = _sums_by(values, weights)
        assert groups.tolist() == sorted(v for v, s in expected.items() if s)
        assert sums.tolist() == [expected[v] for v in groups.tolist()]


@pytest.mark.parametrize("n", [0, 1, 5, 2000])
def test_distinct_by_counters_or_sort_equals_unique(n: int) -> None:
    rng = np.random.default_rng(n)
    for high in (50, 10**9):  # few possible values (counters) and many (sort)
        values = rng.integers(0, high, n).astype(np.int64)
        got, inverse = _distinct(values)
        expected, expected_inverse = np.unique(values, return_inverse=True)
        np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(inverse, expected_inverse)


def test_pair_histogram_equals_counting_the_pairs() -> None:
    rng = np.random.default_rng(12)
    b = rng.integers(1, 30, 5000)
    for a in (b * rng.integers(1, 30, 5000), np.full(5000, 2**61) - b):  # one number per pair, or a sort
        got_a, got_b, n = _pair_histogram(a, b)
        expected = sorted(Counter(zip(a.tolist(), b.tolist(), strict=True)).items())
        assert list(zip(zip(got_a.tolist(), got_b.tolist(), strict=True), n.tolist(), strict=True)) == expected
    assert [len(x) for x in _pair_histogram(np.zeros(0, np.int64), np.zeros(0, np.int64))] == [0, 0, 0]
