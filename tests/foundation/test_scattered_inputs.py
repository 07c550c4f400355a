"""Issue 36: the data a worker task reads are scattered to the cluster, not embedded in the task
graph (Dask's "Sending large graph of size 12.50 MiB" on the terminal for a 61k-row CSV)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from distributed import Client, LocalCluster

from pipeline.evaluation.execution import Executor


def _rows(frame: pd.DataFrame, k: int) -> int:
    return len(frame) * k


def _first_rows(frames: list[pd.DataFrame], k: int) -> int:
    return len(frames[0]) + k


def test_worker_tasks_read_large_inputs_without_a_large_graph():
    frame = pd.DataFrame(np.random.default_rng(36).normal(size=(400_000, 6)))  # about 19 MiB
    with (
        LocalCluster(n_workers=1, processes=False, dashboard_address=":0") as cluster,
        Client(cluster, set_as_default=False) as client,
        warnings.catch_warnings(record=True) as caught,
    ):
        warnings.simplefilter("always")
        executor = Executor(client)
        assert executor.map_tasks(_rows, [(1,), (2,)], shared=[frame]) == [400_000, 800_000]
        assert executor.map_frame_tasks(_first_rows, [((0,), 1), ((0,), 2)], [frame]) == [400_001, 400_002]
    assert not [w for w in caught if "large graph" in str(w.message).lower()]
