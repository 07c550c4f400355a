"""The benchmarks cannot flatter: their data are not exact copies, and timing waits for the data."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from pipeline.datasets.scaled import scaled_frames, write_scaled

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from harness import Bench, NotReady, on_workers

COPY = 5000  # records of the bundled SD2011 subset


def copies(frame: pd.DataFrame, size: int) -> list[pd.DataFrame]:
    return [frame.iloc[i : i + size].reset_index(drop=True) for i in range(0, len(frame), size)]


def test_sd2011_copies_are_nudged_not_tiled() -> None:
    original, synthetic = scaled_frames("sd2011", 4 * COPY, n_synthetic=1)
    first, *others = copies(original, COPY)
    for other in others:
        # factors unchanged, so the key combinations stay realistic
        for v in ["sex", "agegr", "edu", "marital", "ls", "smoke"]:
            assert other[v].equals(first[v])
        same_rows = (other.eq(first) | (other.isna() & first.isna())).all(axis=1).mean()
        assert same_rows < 0.1  # a tiling would give 1.0
        for v, moved in [("age", 0.95), ("depress", 0.6)]:  # one step, within the range (depress is often 0)
            a, b = first[v].to_numpy(), other[v].to_numpy()
            ok = ~np.isnan(a)
            assert np.array_equal(np.isnan(a), np.isnan(b))
            step = np.abs(b[ok] - a[ok])
            assert set(np.unique(step)) <= {0.0, 1.0} and step.mean() > moved
            assert b[ok].min() >= a[ok].min() and b[ok].max() <= a[ok].max()
        a, b = first["income"].to_numpy(), other["income"].to_numpy()
        special = (a == -8) | np.isnan(a)
        assert special.sum() > 0 and np.array_equal(a[special], b[special], equal_nan=True)
        money = ~special & (a > 100)
        ratio = b[money] / a[money]
        assert np.all(np.abs(ratio - 1) <= 0.02 + 0.5 / a[money]) and np.mean(ratio != 1) > 0.9
        assert np.array_equal(b[~special], np.round(b[~special]))
    assert original.duplicated().mean() < 0.1 and synthetic.duplicated().mean() < 0.1
    assert not original.iloc[COPY:].reset_index(drop=True).equals(synthetic.iloc[COPY:].reset_index(drop=True))


def test_cedata_pairs_stay_row_aligned() -> None:
    original, synthetic = scaled_frames("cedata", 3 * 5571, n_synthetic=1)
    for v in ["Age", "Urban", "Marital", "Tenure", "Educ"]:
        assert original[v].equals(synthetic[v])
    assert (original["Income"] != synthetic["Income"]).mean() > 0.5
    assert original.duplicated().mean() < 0.01


def test_written_once_independent_of_files_and_reused(tmp_path: Path) -> None:
    rows = 2 * COPY + 1234
    data = write_scaled(tmp_path / "a", "sd2011", rows, n_synthetic=2, file_rows=3000)
    other = write_scaled(tmp_path / "b", "sd2011", rows, n_synthetic=2, file_rows=7000)
    assert len(list(data.path("original").glob("*.parquet"))) == 4
    expected = scaled_frames("sd2011", rows, n_synthetic=2)
    for i, name in enumerate(["original", "syn1", "syn2"]):
        got = data.schema.apply(pd.read_parquet(data.path(name)), name)
        again = other.schema.apply(pd.read_parquet(other.path(name)), name)
        pd.testing.assert_frame_equal(got, expected[i], check_dtype=False)
        pd.testing.assert_frame_equal(got, again)
    assert data.schema.cont_na == {"income": (-8.0,)}
    stamp = (data.folder / "manifest.json").stat().st_mtime_ns
    parts = sorted(p.stat().st_mtime_ns for p in data.path("original").glob("*.parquet"))
    write_scaled(tmp_path / "a", "sd2011", rows, n_synthetic=2, file_rows=3000)
    assert (data.folder / "manifest.json").stat().st_mtime_ns == stamp
    assert sorted(p.stat().st_mtime_ns for p in data.path("original").glob("*.parquet")) == parts


def _slow_part(i: int) -> pd.DataFrame:
    time.sleep(0.4)
    return pd.DataFrame({"x": np.arange(10) + 10 * i})


@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster

    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster,
        Client(cluster, set_as_default=False) as client,
    ):
        yield client


def slow_frame() -> dd.DataFrame:
    return dd.from_delayed([dask.delayed(_slow_part)(i) for i in range(4)], meta=pd.DataFrame({"x": np.array([], int)}))


def test_timer_refuses_inputs_not_on_the_workers(client) -> None:
    bench = Bench(client)
    frame = slow_frame()
    with pytest.raises(NotReady):
        bench.time(lambda: 1, inputs=[frame])  # never persisted
    (pending,) = client.persist([frame])  # returns at once: the parts are still being made
    assert not on_workers(pending)
    with pytest.raises(NotReady):
        bench.time(lambda: 1, inputs=[pending])
    client.cancel(pending)


def test_timer_starts_after_the_data_are_on_the_workers(client) -> None:
    bench = Bench(client)
    t0 = time.perf_counter()
    (frame,) = bench.ready(slow_frame())
    # four 0.4 s parts on two single-threaded workers: ready() returns only when they exist
    assert time.perf_counter() - t0 >= 0.75
    assert on_workers(frame)
    m, total = bench.time(lambda: int(client.compute(frame.x.sum(), sync=True)), inputs=[frame], repeat=2)
    assert total == sum(range(40))
    assert m.wall < 0.4  # the generation is not in the timing
    assert m.repeat == 2 and len(m.walls) == 2 and m.wall == min(m.walls)
    assert m.cpu >= 0 and m.load_before >= 0
