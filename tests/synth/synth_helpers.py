"""Helpers of the synthesis tests: paths, the worked example's tables, R arrays."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from reference import reference_path

from pipeline.evaluation.execution import Executor
from pipeline.synth import MarginTable
from pipeline.synth.partial.params import PartialParams

DATASETS = Path(__file__).resolve().parents[2] / "pipeline" / "datasets"


def example_tables(example: dict, key: str, order=("AB", "AC", "BC")) -> list[MarginTable]:
    levels = {k: tuple(v) for k, v in example["levels"].items()}
    src = example[key]
    return [
        MarginTable(
            tuple(m), tuple(levels[v] for v in m), np.asarray(src[m], float).reshape([len(levels[v]) for v in m])
        )
        for m in order
    ]


def reference_case(case: str) -> dict:
    return json.loads(reference_path(f"reference/syn_ipf/syn_ipf_{case}.json").read_text(encoding="utf-8"))


def r_array(table: dict) -> np.ndarray:
    """An R array written column-major (reference README) as a C-ordered numpy array."""
    return np.asarray(table["data"], dtype=float).reshape(table["dim"][::-1]).transpose()


#: the in-memory executor of the partial-synthesis tests (no cluster)
MEMORY = Executor(None, policy="memory")


def partial_params(**kw) -> PartialParams:
    """Validated settings of a partial synthesis (``kind: partial`` plus ``kw``)."""
    return PartialParams(kind="partial", **kw)
