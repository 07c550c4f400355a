"""The kernels against direct, record-by-record statements of sdcMicro's rules on small random
data (missing values, ties, several patterns), and the privacy of what the result writes."""

from __future__ import annotations

import json
import math
from itertools import combinations

import numpy as np
import pandas as pd
import pytest

from pipeline.data.schema import Schema, Variable
from pipeline.evaluation.execution import Executor
from pipeline.risk.sdcrisk import freqCalc, sdc_risk
from pipeline.risk.sdcrisk.diversity import ldiversity
from pipeline.risk.sdcrisk.frequencies import key_table, matched_frequencies, per_record
from pipeline.risk.sdcrisk.suda import msu_weights, suda2

EX = Executor(policy="memory")


def _random_keys(rng: np.random.Generator, n: int, levels: list[int], na: float) -> pd.DataFrame:
    cols = {f"k{j}": rng.integers(1, lv + 1, n).astype(float) for j, lv in enumerate(levels)}
    frame = pd.DataFrame(cols)
    frame = frame.mask(rng.random(frame.shape) < na)
    frame.iloc[0] = np.nan  # one record missing in every key
    return frame


def _brute_frequencies(codes: pd.DataFrame, w: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """sdcMicro's freqCalc rule, record by record (see frequencies' docstring)."""
    x = codes.to_numpy()
    n, k = x.shape
    na = np.isnan(x)
    fk, big = np.zeros(n), np.zeros(n)
    for i in range(n):
        for j in range(n):
            same = all(x[i, c] == x[j, c] or (na[i, c] and na[j, c]) for c in range(k))
            match = all(na[i, c] or na[j, c] or x[i, c] == x[j, c] for c in range(k))
            if na[i].all():
                factor = 1.0  # all missing: the file's count
            elif k == 1:
                factor = 1.0 if same else (alpha if match and na[j].all() else 0.0)
            elif not na[i].any():
                factor = 1.0 if same else (alpha if match and na[j].any() and not na[j].all() else 0.0)
            else:
                factor = 1.0 if same or (match and not na[j].any()) else (alpha if match else 0.0)
            fk[i] += factor
            big[i] += factor * w[j]
    return fk, big


@pytest.mark.parametrize("alpha", [1.0, 0.5])
@pytest.mark.parametrize("levels", [[3, 2, 4], [2, 3], [4]])
def test_frequencies_follow_the_missing_value_rule(levels, alpha):
    rng = np.random.default_rng(len(levels) * 10 + int(alpha * 2))
    codes = _random_keys(rng, 80, levels, na=0.15)
    w = rng.uniform(1, 9, len(codes))
    got = per_record(codes, matched_frequencies(key_table(codes, w), alpha))
    fk, big = _brute_frequencies(codes, w, alpha)
    np.testing.assert_allclose(got["fk"].to_numpy(dtype=float), fk, rtol=1e-12)
    np.testing.assert_allclose(got["Fk"].to_numpy(), big, rtol=1e-12)


def _brute_suda(x: np.ndarray, original_scores: bool) -> np.ndarray:
    """Every record's MSUs by enumeration (missing = -999 is no value), scored as sdcMicro."""
    n, m = x.shape
    weights = msu_weights(m, original_scores)
    score = np.zeros(n)
    for i in range(n):
        unique_sets = []
        for size in range(1, m + 1):
            for s in combinations(range(m), size):
                if any(x[i, c] == -999 for c in s):
                    continue
                if sum(all(x[j, c] == x[i, c] for c in s) for j in range(n)) == 1:
                    if not any(set(u) < set(s) for u in unique_sets):
                        score[i] += weights[size - 1]
                    unique_sets.append(s)
    return score


@pytest.mark.parametrize("original_scores", [True, False])
def test_suda2_finds_every_minimal_sample_unique(original_scores):
    rng = np.random.default_rng(7)
    codes = _random_keys(rng, 60, [3, 2, 3, 2], na=0.1)
    table = key_table(codes).rename(columns={"fk": "n"}).drop(columns="Fk")
    got = suda2(table, list(codes.columns), original_scores=original_scores)
    per = per_record(codes, table.assign(score=got.score))
    expected = _brute_suda(codes.fillna(-999).to_numpy(), original_scores)
    np.testing.assert_allclose(per["score"].to_numpy(), expected, rtol=1e-12)
    assert (expected > 0).sum() >= 5  # the data do have special uniques
    # a smaller missing dimension finds only the MSUs up to that size: a lower score
    small = suda2(table, list(codes.columns), original_scores=original_scores, max_size=2)
    assert (small.score <= got.score + 1e-12).all() and (small.score < got.score).any()


def _entropy(counts: list[int]) -> float:
    p = np.array(counts, dtype=float) / sum(counts)
    return float(np.exp(-np.sum(p * np.log(p))))


def _recursive(counts: list[int], c: float) -> int:
    r = sorted(counts, reverse=True)
    return 1 + sum(1 for j in range(1, len(r)) if c * sum(r[j:]) > r[0])


@pytest.mark.parametrize("c", [2.0, 3.0])
def test_ldiversity_per_group_and_multi(c):
    rng = np.random.default_rng(3)
    n = 300
    frame = pd.DataFrame(
        {
            "a": rng.integers(1, 4, n).astype(float),
            "b": rng.integers(1, 3, n).astype(float),
            "s1": rng.integers(1, 5, n).astype(float),
            "s2": rng.integers(1, 4, n).astype(float),
        }
    )
    got = ldiversity(frame.assign(n=1), ["a", "b"], ["s1", "s2"], c=c)
    for _, g in frame.groupby(["a", "b"]):
        row = got.loc[g.index[0]]
        for s in ("s1", "s2"):
            counts = g[s].value_counts().tolist()
            assert row[f"{s}_Distinct_Ldiversity"] == len(counts)
            assert row[f"{s}_Entropy_Ldiversity"] == pytest.approx(_entropy(counts), rel=1e-12)
            assert row[f"{s}_Recursive_Ldiversity"] == _recursive(counts, c)
        entropies, recursives = [], []
        for s, other in (("s1", "s2"), ("s2", "s1")):
            for _, sub in g.groupby(other):
                counts = sub[s].value_counts().tolist()
                entropies.append(np.float32(_entropy(counts)))
                recursives.append(_recursive(counts, c))
        assert row["MultiEntropy_Ldiversity"] == float(min(entropies))
        assert row["MultiRecursive_Ldiversity"] == min(recursives)


def test_ldiversity_missing_values_as_sdcmicro():
    # a record with a missing key is a group of its own; a missing sensitive value is a
    # category of its own per record; the missing code counts once, beside other values
    frame = pd.DataFrame(
        {
            "a": [1.0, 1, 1, 1, 1, np.nan, np.nan],
            "s": [5.0, np.nan, np.nan, -999, 5, 5, 5],
        }
    )
    got = ldiversity(frame.assign(n=1), ["a"], ["s"])
    # group a = 1: categories 5 (x2), NaN, NaN, and the missing code: 4 distinct
    assert got["s_Distinct_Ldiversity"].tolist() == [4, 4, 4, 4, 4, 1, 1]
    expected_entropy = _entropy([2, 1, 1, 1])
    assert got["s_Entropy_Ldiversity"].iloc[0] == pytest.approx(expected_entropy, rel=1e-12)
    # recursive over the values (the missing code left out): counts 2, 1, 1
    assert got["s_Recursive_Ldiversity"].iloc[0] == _recursive([2, 1, 1], 2.0)


def test_only_aggregates_leave_the_result():
    # a planted rare level and a planted unique number: never in rows or the summary
    rng = np.random.default_rng(11)
    n = 400
    levels = ("A", "B", "C", "ZZ_PLANTED_LEVEL")
    frame = pd.DataFrame(
        {
            "f": pd.Categorical(rng.choice(levels[:3], n), categories=levels),
            "x": rng.integers(20, 30, n).astype(float),
            "s": pd.Categorical(rng.choice(["u", "v"], n), categories=["u", "v"]),
        }
    )
    frame.loc[5, "f"] = "ZZ_PLANTED_LEVEL"
    frame.loc[7, "x"] = 987654.321
    schema = Schema(
        variables=(
            Variable("f", "factor", levels=levels),
            Variable("x", "numeric"),
            Variable("s", "factor", levels=("u", "v")),
        )
    )
    res = sdc_risk(
        frame,
        [frame.sample(frac=1, random_state=1).reset_index(drop=True)],
        schema,
        EX,
        keys=["f", "x"],
        sensitive=["s"],
    )
    text = res.tidy().to_json() + json.dumps(res.to_dict())
    assert "ZZ_PLANTED_LEVEL" not in text and "987654" not in text
    assert res.original.risk["n1"] >= 2  # the planted records are sample uniques, counted


def test_dask_file_gives_the_same_records_as_pandas():
    import dask.dataframe as dd

    rng = np.random.default_rng(5)
    codes = _random_keys(rng, 500, [3, 4, 2], na=0.05)
    levels = {c: tuple(str(v) for v in range(1, 5)) for c in codes.columns}
    frame = pd.DataFrame(
        {
            c: pd.Categorical(codes[c].map(lambda v: None if math.isnan(v) else str(int(v))), categories=levels[c])
            for c in codes.columns
        }
    )
    frame["w"] = rng.uniform(1, 5, len(frame))
    schema = Schema(
        variables=(*(Variable(c, "factor", levels=levels[c]) for c in codes.columns), Variable("w", "numeric"))
    )
    keys = list(codes.columns)
    in_memory = freqCalc(frame, keys, w="w", schema=schema, executor=EX)
    parted = freqCalc(dd.from_pandas(frame, npartitions=3, sort=False), keys, w="w", schema=schema, executor=EX)
    np.testing.assert_array_equal(in_memory.fk, parted.fk)
    np.testing.assert_allclose(in_memory.Fk, parted.Fk, rtol=1e-12)


def test_report_section_from_the_results_rows():
    from pipeline.datasets import load_demo, load_demo_synthetic
    from pipeline.report.markup import blocks_html
    from pipeline.risk.sdcrisk.section import sdc_risk_section

    original = load_demo("sd2011_subset")
    synthetic = load_demo_synthetic("sd2011_cart")[:2]
    res = sdc_risk(original, synthetic, executor=EX, keys=["sex", "agegr", "edu", "marital"], k=[3])
    rows = res.tidy().assign(dataset="sd2011", source="cart", repetition=0, measure_name="sdc_risk")
    parts = [blocks_html([b]) for b in sdc_risk_section(rows)]
    assert len(parts) == 2  # the contributions figure and the table
    assert "which variables drive the risk" in parts[0] and "<img" in parts[0]
    table = parts[1]
    assert "global risk" in table and "k-anonymity violations (k = 3)" in table
    original_risk = f"{res.original.risk['global_risk']:.4g}"[:5]
    assert original_risk in table
