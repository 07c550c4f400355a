"""Data-set profiles and key-block statistics: aggregate facts about the inputs.

Only aggregates are reported (counts, shares, numbers of levels), never record values.
Both measures follow the measure contract (:mod:`pipeline.evaluation.base`) and are the
smallest examples of it: a pure per-partition (or per-block) kernel, an exact combine, and
rows with structured params.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from pydantic import Field

from pipeline.evaluation.base import Measure, Params, Result, Row
from pipeline.evaluation.reporting import ReportSection

if TYPE_CHECKING:  # loading a task validates its params with this module: no Dask
    from pipeline.evaluation.data import EvalData
    from pipeline.evaluation.execution import Executor

SIZE_BUCKETS = [(1, 1), (2, 2), (3, 5), (6, 10), (11, 100), (101, np.inf)]


@dataclass(frozen=True)
class RowsResult(Result):
    """A result that is already a list of rows, plus a JSON-able summary."""

    row_list: tuple[Row, ...]
    summary: dict[str, Any] = field(default_factory=dict)

    def rows(self) -> list[Row]:
        return list(self.row_list)

    def to_dict(self) -> dict[str, Any]:
        return self.summary


class ProfileParams(Params):
    """The ``profile`` measure has no parameters."""


def _partition_profile(part: pd.DataFrame, codes: dict[str, list[float]]) -> dict[str, Any]:
    """Records, missing values, special codes and the distinct values of one partition."""
    return {
        "records": len(part),
        "missing": part.isna().sum().to_dict(),
        "special": {v: int(part[v].isin(c).sum()) for v, c in codes.items()},
        "distinct": {v: pd.unique(part[v].dropna().to_numpy()) for v in part.columns},
    }


def _combine_profiles(parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    first = parts[0]
    return {
        "records": sum(p["records"] for p in parts),
        "missing": {v: sum(p["missing"][v] for p in parts) for v in first["missing"]},
        "special": {v: sum(p["special"][v] for p in parts) for v in first["special"]},
        "distinct": {v: pd.unique(np.concatenate([p["distinct"][v] for p in parts])) for v in first["distinct"]},
    }


#: the profile family's section (pipeline/profile_section.py)
PROFILE_SECTION = ReportSection("Data profiles and key blocks", "pipeline.profile_section:profile_section")


class Profile(Measure):
    """Records, missing share, special-missing counts and levels of every variable of the original."""

    type = "profile"
    family = "profile"
    params_model = ProfileParams
    needs_synthetic = False
    description = "per-variable counts, missing values and special codes"
    report_section = PROFILE_SECTION
    row_measures = frozenset({"records", "missing_pct", "special_missing", "levels", "levels_observed", "distinct"})

    def evaluate(self, data: EvalData, executor: Executor) -> RowsResult:
        schema = data.schema
        wanted = [v.name for v in schema if v.is_factor or v.is_numeric]
        codes = {v.name: list(v.missing_codes) for v in schema if v.missing_codes}
        frame = data.original
        (got,) = executor.compute(executor.map_reduce(frame, _partition_profile, _combine_profiles, codes))
        n = int(got["records"])
        rows = [Row("original", "records", float(n))]
        for v in schema:
            p = {"variable": v.name}
            rows.append(Row("original", "missing_pct", 100.0 * got["missing"][v.name] / n if n else np.nan, p))
            if v.missing_codes:
                rows.append(Row("original", "special_missing", float(got["special"][v.name]), p))
            if v.name in wanted and v.is_factor:
                rows.append(Row("original", "levels", float(len(v.levels or ())), p))
                rows.append(Row("original", "levels_observed", float(len(got["distinct"][v.name])), p))
            elif v.name in wanted:
                rows.append(Row("original", "distinct", float(len(got["distinct"][v.name])), p))
        summary = {"records": n, "variables": {v.name: v.kind for v in schema}}
        return RowsResult(tuple(rows), summary)


class KeyBlockParams(Params):
    """Parameters of ``key_blocks``: the keys and (on the cluster) the number of blocks."""

    keys: list[str] = Field(min_length=1)
    n_blocks: int | None = Field(None, ge=1)

    def variables(self) -> list[str]:
        return list(self.keys)


def _combination_sizes(*frames: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per block (whole key combinations): the size of every key combination of every data set."""
    parts = []
    for i, f in enumerate(frames):
        sizes = f.groupby(keys, observed=True, dropna=False).size().to_numpy(dtype=np.int64)
        parts.append(pd.DataFrame({"set": np.full(len(sizes), i, dtype=np.int64), "size": sizes}))
    return pd.concat(parts, ignore_index=True)


def _size_rows(sizes: np.ndarray, label: str) -> list[Row]:
    n = float(sizes.sum())
    rows = [
        Row(label, "combinations", float(len(sizes))),
        Row(label, "unique_records_pct", 100.0 * float((sizes == 1).sum()) / n if n else np.nan),
        Row(label, "max_combination_size", float(sizes.max()) if len(sizes) else 0.0),
        Row(label, "mean_combination_size", n / len(sizes) if len(sizes) else np.nan),
    ]
    for lo, hi in SIZE_BUCKETS:
        rows.append(
            Row(
                label,
                "combinations",
                float(((sizes >= lo) & (sizes <= hi)).sum()),
                {"size_from": lo, "size_to": None if not np.isfinite(hi) else int(hi)},
            )
        )
    return rows


class KeyBlockSizes(Measure):
    """Key-combination size distribution of the original and each synthetic set, on key blocks."""

    type = "key_blocks"
    family = "profile"
    params_model = KeyBlockParams
    description = "distribution of key-combination sizes, computed on key blocks"
    report_section = PROFILE_SECTION
    row_measures = frozenset({"combinations", "unique_records_pct", "max_combination_size", "mean_combination_size"})

    def evaluate(self, data: EvalData, executor: Executor) -> RowsResult:
        keys = list(self.params.keys)
        blocks = executor.key_blocks(executor.prepare(data.select(keys)), keys, self.params.n_blocks)
        meta = pd.DataFrame({"set": pd.Series(dtype="int64"), "size": pd.Series(dtype="int64")})
        (sizes,) = executor.compute(blocks.map(_combination_sizes, meta, keys=keys))
        rows: list[Row] = []
        for i in range(len(data.frames)):
            label = "original" if i == 0 else str(i)
            rows += _size_rows(np.sort(sizes.loc[sizes["set"] == i, "size"].to_numpy()), label)
        return RowsResult(tuple(rows), {"keys": keys, "n_blocks": self.params.n_blocks})
