"""Independent fits as parallel tasks: on small shared inputs, or each on whole data sets assembled on a worker."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import dask
import pandas as pd

from pipeline.evaluation._dask_compat import stored_parts
from pipeline.evaluation.data import Frame


class Tasks:
    """The executor's task primitives (mixed into :class:`~pipeline.evaluation.execution.Executor`)."""

    def map_tasks(self, fn: Callable[..., Any], jobs: Sequence[tuple], shared: Sequence[Any] = ()) -> list[Any]:
        """``[fn(*shared, *job) for job in jobs]``, as parallel tasks when a cluster is there.

        ``shared`` objects (e.g. the prepared data) are sent to the cluster once, not per job.
        """
        if self.client is None or len(jobs) < 2:
            return [fn(*shared, *job) for job in jobs]
        handles = [self._sent(s) for s in shared]
        return self.compute(*[dask.delayed(fn)(*handles, *job) for job in jobs])

    def _sent(self, value: Any) -> Any:
        """``value`` on the cluster (scattered: a graph embedding a data set is slow to send and
        makes Dask warn about its size), else as a delayed value."""
        if self.client is None:
            return dask.delayed(value, traverse=False)
        return self.client.scatter([value], hash=False)[0]

    def map_frame_tasks(
        self, fn: Callable[..., Any], jobs: Sequence[tuple], frames: Sequence[Frame], shared: Sequence[Any] = ()
    ) -> list[Any]:
        """``[fn(*shared, [frames[i] for i in job[0]], *job[1:]) for job in jobs]`` as parallel tasks.

        Each job names the data sets it reads (``job[0]``, indices into ``frames``).  Dask
        frames are assembled into one pandas frame per data set **on a worker** (once, shared
        by every job that reads it), so independent fits over many data sets or pairs of them
        never gather records on the client; pandas frames are sent to the cluster once.
        """
        if self.client is None and not any(dask.is_dask_collection(f) for f in frames):
            return [fn(*shared, [frames[i] for i in job[0]], *job[1:]) for job in jobs]
        whole = [
            dask.delayed(_concat_parts)(*stored_parts(f)) if dask.is_dask_collection(f) else self._sent(f)
            for f in frames
        ]
        handles = [self._sent(s) for s in shared]
        return self.compute(*[dask.delayed(fn)(*handles, [whole[i] for i in job[0]], *job[1:]) for job in jobs])


def _concat_parts(parts: Sequence[pd.DataFrame], columns: list[str] | None = None) -> pd.DataFrame:
    """The partitions of one data set as one pandas frame (index 0..n-1; ``columns`` only if given), on a worker."""
    if not parts:
        return pd.DataFrame()
    return pd.concat([p if columns is None else p[columns] for p in parts], ignore_index=True)
