"""Records selected by position (flags found on key blocks or drawn for a footing), joined one after
another, or brought whole to the driver; lazy data stay lazy until then."""

from __future__ import annotations

from collections.abc import Sequence

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd

from pipeline.evaluation._dask_compat import as_dask
from pipeline.evaluation.data import Frame


class Records:
    """The executor's record-selection primitives (mixed into :class:`~pipeline.evaluation.execution.Executor`)."""

    def keep_rows(self, frame: Frame, keep: np.ndarray) -> Frame:
        """The records of ``frame`` at the positions where ``keep`` is True (lazy stays lazy).

        ``keep`` is a boolean array over all records of ``frame`` in order (e.g. flags found on
        key blocks with ``__row__``); a Dask frame is filtered partition by partition, each
        partition receiving only its own slice of ``keep`` (its records are counted once, on
        this executor's cluster).
        """
        if isinstance(frame, pd.DataFrame):
            return frame[keep]
        bounds = np.concatenate([[0], np.cumsum(self.partition_rows(frame)[0])]).astype(np.int64)
        parts = [
            dask.delayed(_keep_part)(part, keep[a:b])
            for part, a, b in zip(frame.to_delayed(), bounds[:-1], bounds[1:], strict=True)
        ]
        return dd.from_delayed(parts, meta=frame._meta, verify_meta=False)

    def concat_rows(self, frames: Sequence[Frame]) -> Frame:
        """The records of ``frames`` one after another (in memory with index 0..n-1; lazy if any is lazy)."""
        if all(isinstance(f, pd.DataFrame) for f in frames):
            return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0].reset_index(drop=True)
        if len(frames) == 1:
            return frames[0]
        return dd.concat([as_dask(f) for f in frames])

    def whole(self, *frames: Frame) -> list[pd.DataFrame]:
        """Frames as pandas frames, index 0..n-1, computed together (not kept by the executor, unlike
        :meth:`~pipeline.evaluation.execution.Executor.collect`: for frames built once on the driver)."""
        lazy = [f for f in frames if isinstance(f, dd.DataFrame)]
        got = iter(self.compute(*lazy))
        return [(next(got) if isinstance(f, dd.DataFrame) else f).reset_index(drop=True) for f in frames]


def _keep_part(part: pd.DataFrame, keep: np.ndarray) -> pd.DataFrame:
    """The records of one partition where its slice of the keep flags is True."""
    return part[keep]
