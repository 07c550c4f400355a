"""The timing harness every benchmark uses: inputs on the workers first, then best-of-N.

With a distributed client ``persist`` returns at once, before the data exist on the workers;
a clock started then times the data generation or reading too.  :class:`Bench` therefore

* puts the inputs on the workers with :meth:`Bench.ready` — as a run reads its inputs
  (``Executor.persist``: persisted, small partitions merged, and ``distributed.wait`` on the
  persisted futures) — and
* refuses to start the clock (:class:`NotReady`) while any future of any Dask input of
  :meth:`Bench.time` is not finished — or when a Dask input was never persisted at all;

and reports, for the best of ``repeat`` runs (by wall time): wall seconds, CPU seconds of this
process (the driver, with the in-process scheduler of a LocalCluster) and of every worker
process (psutil over the worker processes: the load-independent cost), the peak resident
memory of each worker (sampled every 50 ms) and the 1-minute load average before and after.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import dask
import psutil
from distributed import futures_of


class NotReady(RuntimeError):
    """A benchmark input is not (yet) on the workers, so the clock must not start."""


@dataclass
class Measurement:
    """One timed call: the best of ``repeat`` runs by wall time."""

    wall: float
    cpu: float
    cpu_driver: float
    cpu_workers: float
    peak_rss_mib: dict[str, float]
    load_before: float
    load_after: float
    repeat: int
    walls: list[float] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        peaks = ", ".join(f"{v:,.0f}" for v in self.peak_rss_mib.values()) or "-"
        return (f"wall {self.wall:7.2f} s  CPU {self.cpu:7.2f} s (driver {self.cpu_driver:.2f} + workers "
                f"{self.cpu_workers:.2f})  peak RSS/worker [{peaks}] MiB  load {self.load_before:.2f}->"
                f"{self.load_after:.2f}  best of {self.repeat}")  # fmt: skip


def on_workers(value: Any) -> bool:
    """Whether a Dask collection's data are all on the workers (persisted and finished).

    Non-Dask values (pandas frames, numbers) are always ready.
    """
    if not dask.is_dask_collection(value):
        return True
    futures = futures_of(value)
    return bool(futures) and all(f.status == "finished" for f in futures)


def _cpu(process: psutil.Process) -> float:
    t = process.cpu_times()
    return t.user + t.system


class PeakSampler:
    """Largest RSS of each worker process while a block runs (sampled from the driver)."""

    def __init__(self, workers: dict[str, psutil.Process], every: float = 0.05) -> None:
        self.workers, self.every = workers, every
        self.peak = dict.fromkeys(workers, 0)
        self._stop = threading.Event()

    def _sample(self) -> None:
        while True:
            for name, proc in self.workers.items():
                with contextlib.suppress(psutil.Error):  # a worker restarting: keep sampling the others
                    self.peak[name] = max(self.peak[name], proc.memory_info().rss)
            if self._stop.wait(self.every):
                return

    def __enter__(self) -> PeakSampler:
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


class Bench:
    """Times calls on a Dask client honestly (see the module docstring).

    Parameters
    ----------
    client : distributed.Client, optional
        None times in-process work only (no workers).
    """

    def __init__(self, client: Any = None) -> None:
        self.client = client
        pids = client.run(os.getpid) if client is not None else {}
        me = os.getpid()
        # a worker inside this process (processes=False) is already counted as the driver
        self.workers = {addr: psutil.Process(pid) for addr, pid in pids.items() if pid != me}
        self.driver = psutil.Process(me)
        self.ready_seconds = 0.0

    def ready(self, *collections: Any, merge: bool = True) -> list[Any]:
        """Persist Dask collections as a run does and return them once their data are on the workers.

        ``Executor.persist`` (what the runner does with a task's inputs): persisted, waited for
        and, with ``merge``, small partitions merged to about ``block_rows`` records.  The
        seconds it took are kept in :attr:`ready_seconds` (reported beside the timings).
        """
        from pipeline.evaluation.execution import Executor

        t0 = time.perf_counter()
        out = Executor(self.client).persist(*collections, merge=merge)
        self.ready_seconds = time.perf_counter() - t0
        return out

    def cpu(self) -> tuple[float, float]:
        """CPU seconds used so far by the driver and by all worker processes."""
        workers = 0.0
        for proc in self.workers.values():
            with contextlib.suppress(psutil.Error):
                workers += _cpu(proc)
        return _cpu(self.driver), workers

    def time(self, fn: Callable[[], Any], inputs: Sequence[Any] = (), repeat: int = 3) -> tuple[Measurement, Any]:
        """Best of ``repeat`` runs of ``fn()``; returns the measurement and the last result.

        Raises
        ------
        NotReady
            If a Dask input is not persisted or any of its futures is not finished.
        """
        waiting = [i for i, v in enumerate(inputs) if not on_workers(v)]
        if waiting:
            raise NotReady(f"input(s) {waiting} are not on the workers: call Bench.ready() on them first")
        load_before = os.getloadavg()[0]
        runs, result = [], None
        with PeakSampler(self.workers) as sampler:
            for _ in range(repeat):
                (d0, w0), t0 = self.cpu(), time.perf_counter()
                result = fn()
                wall = time.perf_counter() - t0
                d1, w1 = self.cpu()
                runs.append((wall, d1 - d0, w1 - w0))
        wall, cpu_d, cpu_w = min(runs)
        peaks = {name: rss / 2**20 for name, rss in sampler.peak.items()}
        return Measurement(wall, cpu_d + cpu_w, cpu_d, cpu_w, peaks, load_before, os.getloadavg()[0], repeat,
                           [r[0] for r in runs]), result  # fmt: skip


#: entries the workers keep of their transfers (Dask's default, 1,000, would drop the older ones
#: of a pass; :func:`bytes_sent` sums them)
TRANSFER_LOG = 1_000_000


def bytes_sent(client: Any) -> int:
    """Bytes every worker has written so far answering data requests (to other workers and to the
    driver): the frames on the wire of each transfer in Dask's transfer log (compressed where Dask
    compresses), not Dask's ``sizeof`` estimate of the objects (which counts a custom object as a
    few dozen bytes whatever it holds)."""

    def written(dask_worker: Any) -> int:
        log = dask_worker.transfer_outgoing_log
        if log.maxlen is not None and len(log) == log.maxlen:
            raise RuntimeError("the worker's transfer log is full: raise distributed.admin.low-level-log-length")
        return int(sum(entry["compressed"] for entry in log))

    return int(sum(client.run(written).values()))


@contextlib.contextmanager
def bench_client(workers: int, memory_limit: str) -> Iterator[Any]:
    """The benchmarks' cluster: ``workers`` single-threaded worker processes with a memory limit each,
    a free dashboard port, quiet logs (p2p shuffles log two warnings each), and the worker malloc
    settings of the pipeline's local cluster (:func:`pipeline.cluster.worker_malloc_config`)."""
    import dask
    from distributed import Client, LocalCluster

    from pipeline.cluster import worker_malloc_config

    with (
        dask.config.set(worker_malloc_config()),  # the workers' malloc settings of a run's local cluster
        dask.config.set({"distributed.admin.low-level-log-length": TRANSFER_LOG}),
        LocalCluster(n_workers=workers, threads_per_worker=1, memory_limit=memory_limit,
                     dashboard_address=":0", silence_logs=logging.ERROR) as cluster,
        Client(cluster) as client,
    ):  # fmt: skip
        logging.getLogger("distributed.shuffle._scheduler_plugin").setLevel(logging.ERROR)
        yield client
