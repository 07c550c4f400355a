"""Run a pandas kernel on every partition of a frame and combine the results.

For pandas input the kernel runs once on the whole frame (no Dask overhead).  For Dask input
each partition is one task and the partial results are combined by a tree of ``combine``
calls; the measures combine exact integer counts (or small float matrices, see ``glm``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import dask
import dask.dataframe as dd
import pandas as pd


def map_reduce_tasks(
    frame: pd.DataFrame | dd.DataFrame,
    kernel: Callable[..., Any],
    combine: Callable[[Sequence[Any]], Any],
    *args: Any,
    split_every: int = 8,
    **kwargs: Any,
) -> Any:
    """A lazy value (``dask.delayed``) for ``combine(kernel(p, ...) for p in partitions)``.

    For a pandas frame the kernel is applied immediately and the combined value returned.
    """
    if isinstance(frame, pd.DataFrame):
        return combine([kernel(frame, *args, **kwargs)])
    parts = [dask.delayed(kernel)(p, *args, **kwargs) for p in frame.to_delayed()]
    while len(parts) > 1:
        parts = [dask.delayed(combine)(parts[i : i + split_every]) for i in range(0, len(parts), split_every)]
    return parts[0] if parts else combine([])

