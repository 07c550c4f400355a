"""Where ``policy: auto`` evaluates a measure: in memory or on the cluster, by predicted cost.

A pure function of sizes and measured costs (no Dask, no data): :func:`choose_path` compares the
predicted wall time of the two paths for the records a measure reads,

* in memory (one thread on the driver, the records collected from the workers first)::

      T_memory  = (memory + collect) * n

* on the cluster (``w`` worker threads; the driver's share is serial: workers wait for it)::

      T_cluster = driver_fixed + driver * n + (workers_fixed + workers * n) / w

with ``n`` the records in millions (every data set the measure reads: original, synthetic sets,
holdout) and the coefficients of the measure's :class:`PathCost` (CPU-seconds, from
``benchmarks/bench_policy.py``).  In memory is chosen when it is predicted no slower and its
working memory (``memory_bytes`` per record) fits in one worker's memory — a worker's share of
the machine bounds what one process may hold.  A measure without a measured cost is decided by
the records of its largest data set against ``in_memory_rows`` (the executor's threshold).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Path = Literal["memory", "blocks"]


@dataclass(frozen=True)
class PathCost:
    """A measure kind's measured cost per million records (every data set it reads counted).

    Attributes
    ----------
    memory : float
        CPU-seconds in memory, one thread.
    driver_fixed, driver : float
        On the cluster, the driver's (and in-process scheduler's) CPU-seconds per call and per
        million records: graph building, scheduling, result assembly — serial time.
    workers_fixed, workers : float
        On the cluster, the workers' CPU-seconds per call and per million records (on the task's
        layout), split evenly over the worker threads.
    memory_bytes : float
        Peak working memory of the in-memory path per record (bytes), the records included.
    """

    memory: float
    driver_fixed: float
    driver: float
    workers_fixed: float
    workers: float
    memory_bytes: float


#: CPU-seconds per million records of collecting persisted records to the driver (the in-memory
#: path's transfer from the workers; shared by the units on the same inputs, charged to each)
COLLECT = 0.30  # 0.24 at 200k, 0.36 at 1M

#: measured costs by measure type (CPU-seconds per million records of every data set a unit reads,
#: its holdout baselines included), fitted over ``benchmarks/bench_policy.py --rows 200000`` and
#: ``--rows 1000000`` (register_holdout's units, 2 workers x 1 thread, fresh workers, repeat 1),
#: 2026-12-07 23:02-00:03 UTC at load 17-27 (seven other jobs), before the layout's blocks were
#: placed on their workers.  ``memory_bytes``: the driver's peak growth per record, at least 100
#: (a process that grew before shows none).  Re-measure idle and replace (docs/scaling.md).
COSTS: dict[str, PathCost] = {
    "disclosure": PathCost(
        3.183, driver_fixed=2.885, driver=1.122, workers_fixed=8.702, workers=4.217, memory_bytes=440
    ),
    "identification_risk": PathCost(
        6.7, driver_fixed=0.455, driver=3.189, workers_fixed=0.0, workers=10.313, memory_bytes=164
    ),
    "utility_gen": PathCost(
        0.292, driver_fixed=0.252, driver=0.306, workers_fixed=0.477, workers=0.828, memory_bytes=100
    ),
    "dcr": PathCost(62.386, driver_fixed=0.0, driver=64.233, workers_fixed=7.607, workers=43.961, memory_bytes=1024),
    "linkability": PathCost(1.774, driver_fixed=0.375, driver=0.256, workers_fixed=0.27, workers=2.0, memory_bytes=100),
    "inference": PathCost(1.029, driver_fixed=0.35, driver=0.111, workers_fixed=0.397, workers=0.917, memory_bytes=100),
    "singling_out": PathCost(
        0.959, driver_fixed=0.265, driver=0.789, workers_fixed=0.37, workers=0.556, memory_bytes=100
    ),
    "sdc_risk": PathCost(0.89, driver_fixed=0.832, driver=0.144, workers_fixed=0.515, workers=0.287, memory_bytes=100),
}


def predicted_seconds(cost: PathCost, records: int, threads: int, collect: float = COLLECT) -> dict[Path, float]:
    """Predicted wall seconds of each path for ``records`` records on ``threads`` worker threads."""
    n = records / 1e6
    return {
        "memory": (cost.memory + collect) * n,
        "blocks": cost.driver_fixed + cost.driver * n + (cost.workers_fixed + cost.workers * n) / max(1, threads),
    }


def choose_path(records: int, threads: int, memory_per_worker: float, cost: PathCost, collect: float = COLLECT) -> Path:
    """In memory or on the cluster (``"blocks"``) for ``records`` records, by predicted wall time.

    Parameters
    ----------
    records : int
        Records of every data set the measure reads.
    threads : int
        Worker threads of the cluster (0: no cluster: always in memory).
    memory_per_worker : float
        Bytes one worker may hold (its memory limit): the in-memory path must fit in it.
    cost : PathCost
    collect : float
        CPU-seconds per million records to bring persisted records to the driver.
    """
    if threads < 1:
        return "memory"
    if records * cost.memory_bytes > memory_per_worker:
        return "blocks"
    seconds = predicted_seconds(cost, records, threads, collect)
    return "memory" if seconds["memory"] <= seconds["blocks"] else "blocks"
