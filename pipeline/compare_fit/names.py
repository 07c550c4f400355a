"""The written names of a model's coefficients: a level held by fewer than ``MIN_RECORDS``
complete original records shows as ``level <i> (<10 records)`` (the package's rule for written
labels, :mod:`pipeline.evaluation.public`); the result objects keep R's names."""

from __future__ import annotations

from itertools import pairwise

import numpy as np

from pipeline.evaluation.public import coarsened_levels
from pipeline.rmodels.regression import RegressionSpec


def written_names(spec: RegressionSpec, counts: np.ndarray) -> tuple[str, ...]:
    """R's coefficient names of ``spec`` with rare levels coarsened; ``counts`` as
    :func:`~pipeline.rmodels.regression.level_counts` of the original."""
    start = 0

    def shown(levels: tuple[str | None, ...]) -> list[str]:
        nonlocal start
        n = counts[start : start + len(levels)]
        start += len(levels)
        written = coarsened_levels(levels, n)
        return [written.get(str(lv), str(lv)) for lv in levels]

    x_names = ["(Intercept)"]
    for p in spec.design.predictors:
        if not p.is_factor:
            x_names.append(p.name)
            continue
        labels = shown(p.levels)
        _, r_names = p.basis()
        x_names += r_names if p.ordered else [p.name + lab for lab in labels[1:]]
    if spec.kind == "polr":
        x_names = x_names[1:]
    if spec.kind == "multinom":
        levels = shown(spec.response_levels or ())
        return tuple(f"{lev}:{c}" for lev in levels[1:] for c in x_names)
    if spec.kind == "polr":
        levels = shown(spec.response_levels or ())
        return (*x_names, *(f"{lo}|{hi}" for lo, hi in pairwise(levels)))
    return tuple(x_names)
