"""What the original's value counts tell of a ``utility_gen`` logit model before any fit: a
lower bound of its parameter count, so that ``validate`` refuses a model over ``max_params`` (as
the evaluation would after the other units) without the kernels (numba, SciPy's statistics).

The bound counts the predictor columns :func:`~pipeline.utility.prepare.build_plan` makes from
the original alone: a factor's levels held by the original (and its NA level), a character
variable's values in one partition, a numeric variable as one column (binned: as one level)
with its missing-value indicators; a variable constant in the original as no column (the plan
may drop it). The synthetic sets only add levels, so the model has at least these parameters.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from pipeline.evaluation.data import EvalData
from pipeline.evaluation.execution import Executor
from pipeline.rmodels.design import n_params


def _levels_kernel(part: pd.DataFrame, factors: Sequence[str], others: Sequence[str], numeric: Sequence[str]) -> dict:
    return {
        "counts": {v: np.bincount(part[v].cat.codes.to_numpy() + 1, minlength=len(part[v].cat.categories) + 1)
                   for v in factors},
        "distinct": {v: int(part[v].nunique()) for v in others},
        "na": {v: int(part[v].isna().sum()) for v in (*others, *numeric)},
        "min": {v: float(part[v].min()) if part[v].notna().any() else np.inf for v in numeric},
        "max": {v: float(part[v].max()) if part[v].notna().any() else -np.inf for v in numeric},
    }  # fmt: skip


def _combine(parts: Sequence[dict]) -> dict:
    first, rest = parts[0], parts[1:]
    out: dict[str, Any] = {key: dict(value) for key, value in first.items()}
    for p in rest:
        for v, c in p["counts"].items():
            out["counts"][v] = out["counts"][v] + c
        for v, d in p["distinct"].items():
            out["distinct"][v] = max(out["distinct"][v], d)
        for v, k in p["na"].items():
            out["na"][v] += k
        for v, lo in p["min"].items():
            out["min"][v] = min(out["min"][v], lo)
        for v, hi in p["max"].items():
            out["max"][v] = max(out["max"][v], hi)
    return out


def logit_parameters_at_least(
    data: EvalData, executor: Executor, names: Sequence[str], binned: bool, maxorder: int
) -> int:
    """A lower bound of the parameters of ``utility_gen``'s logit model of ``names`` (``binned``:
    ``ngroups`` is set), from one pass of value counts over the original."""
    schema = data.schema
    factors = [v for v in names if schema[v].is_factor]
    numeric = [v for v in names if schema[v].is_numeric]
    others = [v for v in names if v not in factors and v not in numeric]
    data = executor.prepare(data.with_frames(data.frames[:1]).select(list(names)))
    (seen,) = executor.compute(
        executor.map_reduce(data.frames[0][list(names)], _levels_kernel, _combine, factors, others, numeric)
    )
    levels = []
    for v in names:
        if v in factors:
            counts = seen["counts"][v]  # [NA, level 1, level 2, ...]
            present = int(np.sum(counts[1:] > 0))
            levels.append(present + int(counts[0] > 0) if present > 1 else 1)
        elif v in others:
            present = seen["distinct"][v]
            levels.append(present + int(seen["na"][v] > 0) if present > 1 else 1)
        elif seen["min"][v] < seen["max"][v]:
            levels.append(1 if binned else 2)
            if not binned:
                levels += [2] * (int(seen["na"][v] > 0) + len(schema.cont_na.get(v, ())))
    return n_params(levels, maxorder)
