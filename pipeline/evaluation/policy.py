"""The executor's settings a task file can give (``execution: {policy, in_memory_rows, block_rows}``),
apart from :mod:`pipeline.evaluation.execution` so that loading a task imports no Dask."""

from __future__ import annotations

from typing import Literal

#: largest data set (records) evaluated in memory when the policy is "auto" and the measure has no
#: measured cost (:mod:`pipeline.evaluation.cost` decides the others)
IN_MEMORY_ROWS = 1_000_000
#: records per key block (bounds a block's memory on a worker)
BLOCK_ROWS = 1_000_000

Policy = Literal["auto", "memory", "blocks"]
