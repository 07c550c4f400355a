"""The register-shaped benchmark data: not a tiling, deterministic, split-independent, shaped as documented."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pipeline.data.dataset import read_dataset
from pipeline.datasets.register import (
    CHUNK_ROWS,
    KEPT,
    LEVELS,
    SYNTHESISED,
    holdout_rows,
    register_frames,
    register_schema,
    write_register,
    write_register_holdout,
)

KEYS = ["sex", "age", "municipality", "edu"]
ROWS = 2 * CHUNK_ROWS + 4321  # three random streams, the last one short


@pytest.fixture(scope="module")
def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    return register_frames(ROWS)


def assert_same(got: pd.DataFrame, expected: pd.DataFrame) -> None:
    """Equal columns, dtypes and values (categoricals by codes: pandas' frame comparison of
    string categoricals is too slow at this size)."""
    assert list(got.columns) == list(expected.columns)
    assert got.dtypes.to_dict() == expected.dtypes.to_dict()
    for v in got.columns:
        a, b = got[v], expected[v]
        if isinstance(a.dtype, pd.CategoricalDtype):
            a, b = a.cat.codes, b.cat.codes
        assert np.array_equal(a.to_numpy(), b.to_numpy()), v


def key_cells(frame: pd.DataFrame, keys: list[str] = KEYS) -> int:
    return len(frame[keys].drop_duplicates())


def test_records_are_drawn_not_tiled(frames) -> None:
    original, twin = frames
    assert original.duplicated().sum() <= 2 and twin.duplicated().sum() <= 2  # a tiling: most rows repeated
    first, second = original.iloc[:CHUNK_ROWS].reset_index(drop=True), original.iloc[CHUNK_ROWS : 2 * CHUNK_ROWS]
    assert (first.to_numpy() == second.reset_index(drop=True).to_numpy()).all(axis=1).mean() == 0.0
    assert original["income"].nunique() > 0.2 * ROWS


def test_deterministic_for_a_seed(frames) -> None:
    again = register_frames(ROWS)
    for got, expected in zip(again, frames, strict=True):
        assert_same(got, expected)
    other = register_frames(ROWS, seed=7)[0]
    assert (other["income"] != frames[0]["income"]).mean() > 0.99


def test_schema_levels_and_kinds(frames) -> None:
    schema = register_schema()
    assert schema.names == ["sex", "age", "municipality", "region", "edu", "marital", "employment", "hhsize",
                            "tenure", "citizenship", "health", "car", "income", "expenditure"]  # fmt: skip
    assert [schema[v].kind for v in ("age", "income", "expenditure")] == ["integer", "numeric", "numeric"]
    assert len(schema["municipality"].levels) == 300 and len(schema["region"].levels) == 12
    assert schema["edu"].ordered and len(schema["edu"].levels) == 8
    for frame in frames:
        assert_same(schema.apply(frame), frame)  # already in the schema's representation
        assert not frame.isna().any().any()
        age = frame["age"].to_numpy()
        assert age.min() == 0 and age.max() == 100 and np.array_equal(age, np.round(age))
        for money in ("income", "expenditure"):
            v = frame[money].to_numpy()
            assert v.min() > 0 and np.array_equal(v, np.round(v))
        for v, levels in LEVELS.items():
            assert list(frame[v].cat.categories) == list(levels)


def test_shape_of_the_population(frames) -> None:
    original, _ = frames
    sizes = original["municipality"].value_counts()
    assert len(sizes) == 300 and sizes.max() > 50 * sizes.min()  # heavy-tailed sizes, every area present
    regions_per_municipality = (pd.crosstab(original["municipality"], original["region"]) > 0).sum(axis=1)
    assert (regions_per_municipality == 1).all()
    assert original.loc[original["age"] < 6, "edu"].eq("none").all()
    assert original.loc[original["age"] < 16, "marital"].eq("single").all()
    old = original["age"] >= 80
    assert (original.loc[old, "sex"] == "female").mean() > 0.6 > (original.loc[~old, "sex"] == "female").mean()
    log_income = np.log(original["income"])
    assert np.corrcoef(log_income, np.log(original["expenditure"]))[0, 1] > 0.7
    by_edu = original.groupby("edu", observed=True)["income"].median()
    assert by_edu.is_monotonic_increasing


def test_twin_is_row_aligned_and_model_based(frames) -> None:
    original, twin = frames
    for v in KEPT:
        assert twin[v].equals(original[v])
    for v in SYNTHESISED:
        same = (twin[v] == original[v]).mean()
        assert same < (0.02 if v in ("income", "expenditure") else 0.97), v
    # the fitted conditional models keep the original's structure
    groups = pd.cut(original["age"], [0, 16, 30, 50, 65, 101], right=False)
    for v in ("edu", "marital", "employment"):
        a = pd.crosstab(groups, original[v], normalize="index")
        b = pd.crosstab(groups, twin[v], normalize="index")
        assert np.abs(a - b).to_numpy().max() < 0.01, v
    for v in ("income", "expenditure"):
        assert abs(np.log(twin[v]).mean() - np.log(original[v]).mean()) < 0.01
        assert abs(np.log(twin[v]).std() / np.log(original[v]).std() - 1) < 0.05
    # sequential: synthetic income follows the synthetic edu, not the original's
    assert twin.groupby("edu", observed=True)["income"].median().is_monotonic_increasing


def test_key_cells_grow_with_the_records(frames) -> None:
    original, _ = frames
    counts = [key_cells(original.iloc[:n]) for n in (10_000, 50_000, ROWS)]
    assert counts[0] < counts[1] < counts[2]
    assert counts[2] > 90_000  # 2 x 101 x 300 x 8 possible; a tiling of a survey has a few thousand
    assert key_cells(original, ["sex", "age", "municipality"]) > 40_000  # of 60,600


@pytest.mark.slow
def test_key_cells_at_register_scale() -> None:
    original, _ = register_frames(3_000_000)
    assert key_cells(original) >= 250_000


def test_written_once_independent_of_files_and_reused(tmp_path: Path, frames) -> None:
    rows = CHUNK_ROWS + 999
    expected = [f.iloc[:rows] for f in register_frames(rows)]
    small = write_register(tmp_path / "a", rows, file_rows=40_000)
    large = write_register(tmp_path / "b", rows, file_rows=100_000)
    assert len(list(small.path("original").glob("*.parquet"))) == 4
    assert small.schema.to_dict() == register_schema().to_dict()
    for i, name in enumerate(["original", "syn1"]):
        for data in (small, large):
            got = read_dataset(data.path(name), schema=data.schema_path).frame.compute().reset_index(drop=True)
            assert_same(got, expected[i])
    stamp = (small.folder / "manifest.json").stat().st_mtime_ns
    parts = sorted(p.stat().st_mtime_ns for p in small.path("original").glob("*.parquet"))
    write_register(tmp_path / "a", rows, file_rows=40_000)
    assert (small.folder / "manifest.json").stat().st_mtime_ns == stamp
    assert sorted(p.stat().st_mtime_ns for p in small.path("original").glob("*.parquet")) == parts
    assert not list((tmp_path / "a").glob(".*tmp"))


@pytest.mark.parametrize("rows", [0, 999, 50_000_001, 1.5e6, True])
def test_rows_out_of_range(tmp_path: Path, rows) -> None:
    with pytest.raises(ValueError, match=r"register: rows must be a whole number in 1,000\.\.50,000,000"):
        write_register(tmp_path, rows)


def test_the_generated_holdout_is_new_records_of_the_same_population(tmp_path: Path, frames) -> None:
    """register_holdout: a quarter as many records (at least 1,000), drawn with random streams of
    their own from the register's population: none of them is a record of the register, and the
    municipality shares are the register's."""
    original, _ = frames
    data = write_register_holdout(tmp_path, ROWS)
    holdout = read_dataset(data.path("holdout"), schema=data.schema).to_pandas()
    assert len(holdout) == holdout_rows(ROWS) == ROWS // 4
    assert holdout_rows(2_000) == 1_000
    assert list(holdout.columns) == list(original.columns)
    key = [*KEYS, "income", "expenditure"]
    common = original[key].merge(holdout[key].drop_duplicates(), on=key, how="inner")
    assert len(common) == 0  # money in cents: a shared record would be a repeated random stream
    share = holdout["municipality"].value_counts(normalize=True)
    expected = original["municipality"].value_counts(normalize=True)
    top = expected.index[:20]
    assert np.abs(share.reindex(top, fill_value=0) - expected[top]).max() < 0.01
    again = read_dataset(write_register_holdout(tmp_path, ROWS).path("holdout"), schema=data.schema).to_pandas()
    assert_same(again, holdout)  # reused as written
