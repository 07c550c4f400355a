"""``policy: auto`` by cost (:mod:`pipeline.evaluation.cost`): a pure function of sizes and measured
costs, and the executor deciding with the cost of the measure it serves."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pipeline.data.schema import Schema
from pipeline.evaluation.cost import COSTS, PathCost, choose_path, predicted_seconds
from pipeline.evaluation.data import as_eval_data
from pipeline.evaluation.execution import Executor

#: 1 CPU-s per million in memory; on the cluster 0.5 s per call and 1.2 CPU-s per million on the workers
COST = PathCost(memory=0.9, driver_fixed=0.5, driver=0.02, workers_fixed=0.0, workers=1.2, memory_bytes=100)
GIB = 2**30


def test_predicted_seconds_follow_the_formula():
    got = predicted_seconds(COST, 3_000_000, threads=4, collect=0.1)
    assert got["memory"] == pytest.approx((0.9 + 0.1) * 3)
    assert got["blocks"] == pytest.approx(0.5 + 0.02 * 3 + 1.2 * 3 / 4)
    fixed = PathCost(memory=0.9, driver_fixed=0.5, driver=0.02, workers_fixed=2.0, workers=1.2, memory_bytes=100)
    assert predicted_seconds(fixed, 3_000_000, threads=4, collect=0.1)["blocks"] == pytest.approx(
        0.5 + 0.02 * 3 + (2.0 + 1.2 * 3) / 4
    )


def test_small_data_in_memory_large_on_the_cluster_at_the_break_even():
    # 2 threads: memory 1.0 n, cluster 0.5 + 0.62 n: equal at n = 0.5 / 0.38 million records
    even = 0.5 / (1.0 - 0.02 - 0.6) * 1e6
    assert choose_path(int(even * 0.99), 2, 8 * GIB, COST, collect=0.1) == "memory"
    assert choose_path(int(even * 1.01), 2, 8 * GIB, COST, collect=0.1) == "blocks"
    assert choose_path(1_000, 2, 8 * GIB, COST, collect=0.1) == "memory"
    assert choose_path(50_000_000, 2, 8 * GIB, COST, collect=0.1) == "blocks"


def test_more_threads_move_the_break_even_down():
    n = 1_000_000  # memory 1.0 s; 2 threads 1.12 s; 8 threads 0.67 s
    assert choose_path(n, 2, 8 * GIB, COST, collect=0.1) == "memory"
    assert choose_path(n, 8, 8 * GIB, COST, collect=0.1) == "blocks"


def test_a_cluster_that_never_pays_keeps_memory_while_it_fits():
    # on 2 threads the cluster costs 0.6 s per million records, more than memory's 0.5
    dear = PathCost(memory=0.5, driver_fixed=0.1, driver=0.1, workers_fixed=0.2, workers=1.0, memory_bytes=100)
    assert choose_path(40_000_000, 2, 8 * GIB, dear, collect=0.0) == "memory"
    # ... but not when one process cannot hold the records' working memory
    assert choose_path(100_000_000, 2, 8 * GIB, dear, collect=0.0) == "blocks"
    assert choose_path(1_000_000, 2, 50_000_000, dear, collect=0.0) == "blocks"


def test_no_cluster_is_memory():
    assert choose_path(10**9, 0, 0, COST) == "memory"


class _Client:
    """What the executor's decision asks a client: worker threads and memory limits."""

    def __init__(self, threads: int, memory_limit: int) -> None:
        self._threads, self._limit = threads, memory_limit

    def nthreads(self) -> dict[str, int]:
        return {f"w{i}": 1 for i in range(self._threads)}

    def scheduler_info(self) -> dict:
        return {"workers": {f"w{i}": {"memory_limit": self._limit} for i in range(self._threads)}}


def _data(n: int, holdout: int = 0):
    frame = pd.DataFrame({"a": np.arange(n, dtype=float)})
    hold = pd.DataFrame({"a": np.arange(holdout, dtype=float)}) if holdout else None
    return as_eval_data(frame, [frame.copy()], Schema.infer(frame), holdout=hold)


def test_the_executor_decides_by_the_measure_cost(monkeypatch):
    monkeypatch.setitem(COSTS, "test_measure", COST)
    executor = Executor(_Client(threads=8, memory_limit=8 * GIB), in_memory_rows=10**9)
    costed = executor.for_measure("test_measure")
    assert costed.cost is COST and executor.cost is None
    # shared state: one cache of counts and collected inputs, one list of layouts
    assert costed._lengths is executor._lengths and costed._layouts is executor._layouts
    assert costed.for_measure("test_measure") is costed
    # 2 x 200k records: in memory (0.9 + collect) x 0.4 s against 0.5 + 0.008 + 0.06 s on 8 threads;
    # 2 x 1M: (0.9 + collect) x 2 s against 0.84 s
    small, large = _data(200_000), _data(1_000_000)
    assert [choose_path(n, 8, 8 * GIB, COST) for n in (400_000, 2_000_000)] == ["memory", "blocks"]
    assert costed.in_memory(small)
    assert not costed.in_memory(large)
    assert executor.in_memory(large)  # no cost: the row threshold (10^9 here)
    # the holdout is read too: counted in the records
    assert costed.in_memory(_data(200_000))
    assert not costed.in_memory(_data(200_000, holdout=1_000_000))
    assert Executor(_Client(8, 8 * GIB), policy="memory").for_measure("test_measure").in_memory(large)


def test_unmeasured_measures_keep_the_row_threshold():
    executor = Executor(_Client(threads=2, memory_limit=8 * GIB), in_memory_rows=500)
    assert executor.for_measure("no_such_measure").cost is None
    assert executor.for_measure("no_such_measure").in_memory(_data(500))
    assert not executor.for_measure("no_such_measure").in_memory(_data(501))


def test_measured_costs_are_positive_and_name_measures():
    from pipeline.measures import REGISTRY

    assert set(COSTS) <= set(REGISTRY)
    for cost in COSTS.values():
        assert min(cost.memory, cost.workers, cost.memory_bytes) > 0
        assert min(cost.driver_fixed, cost.driver, cost.workers_fixed) >= 0
