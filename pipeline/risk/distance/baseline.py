"""The random-data baseline of DCRBaselineProtection: records drawn independently per variable.

As SDMetrics 0.32 draws them: integer variables uniformly among the integers from the
original's minimum to its maximum, other numeric variables uniformly between them, factors
uniformly among the levels the original holds; each variable missing with the original's
missing share.  Pure functions over one partition and its exact combine, plus the draw.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from pipeline.data.schema import Schema
from pipeline.risk.nearest.compute import DistanceSpace
from pipeline.risk.nearest.kernel import encode


def summarise_part(part: pd.DataFrame, space: DistanceSpace) -> dict[str, Any]:
    """Records, missing values, minimum/maximum and level counts of one partition."""
    out: dict[str, Any] = {"records": len(part), "missing": {}, "min": {}, "max": {}, "levels": {}}
    _, numbers = encode(part, [], space.numerics, space.missing_codes)
    for j, v in enumerate(space.numerics):
        x = numbers[:, j]
        present = x[~np.isnan(x)]
        out["missing"][v] = int(len(x) - len(present))
        out["min"][v] = float(present.min()) if len(present) else np.inf
        out["max"][v] = float(present.max()) if len(present) else -np.inf
    for v in space.factors:
        codes = part[v].cat.codes.to_numpy()
        out["missing"][v] = int((codes < 0).sum())
        out["levels"][v] = np.bincount(codes[codes >= 0], minlength=len(part[v].cat.categories))
    return out


def combine_summaries(parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    first = parts[0]
    return {
        "records": sum(p["records"] for p in parts),
        "missing": {v: sum(p["missing"][v] for p in parts) for v in first["missing"]},
        "min": {v: min(p["min"][v] for p in parts) for v in first["min"]},
        "max": {v: max(p["max"][v] for p in parts) for v in first["max"]},
        "levels": {v: np.sum([p["levels"][v] for p in parts], axis=0) for v in first["levels"]},
    }


def random_records(summary: dict[str, Any], schema: Schema, n: int, seed: int) -> pd.DataFrame:
    """``n`` random records like SDMetrics' baseline, cast to ``schema`` (variables of ``summary``)."""
    rng = np.random.default_rng(seed)
    total = max(summary["records"], 1)
    columns: dict[str, Any] = {}
    for v in [*summary["levels"], *summary["min"]]:
        var = schema[v]
        if var.is_factor:
            observed = np.flatnonzero(summary["levels"][v])
            codes = rng.choice(observed, size=n) if len(observed) else np.full(n, -1)
            values = pd.Categorical.from_codes(codes, categories=list(var.levels), ordered=var.ordered)
            values = pd.Series(values)
        else:
            lo, hi = summary["min"][v], summary["max"][v]
            if not np.isfinite(lo):
                values = pd.Series(np.full(n, np.nan))
            elif var.kind == "integer":
                values = pd.Series(rng.integers(int(lo), int(hi) + 1, size=n).astype(np.float64))
            else:
                values = pd.Series(rng.uniform(lo, hi, size=n))
        missing = rng.random(n) < summary["missing"][v] / total
        columns[v] = values.mask(missing)
    return pd.DataFrame(columns)[[v for v in schema.names if v in columns]]
