"""Data-set profiles and key-block statistics: aggregate facts about the inputs.

Only aggregates are reported (counts, shares, numbers of levels), never record values.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from pipeline.blocks import BLOCK_COLUMN, KeyBlocks
from pipeline.data.dataset import Dataset
from pipeline.results import TableResult, tidy_frame

SIZE_BUCKETS = [(1, 1), (2, 2), (3, 5), (6, 10), (11, 100), (101, np.inf)]


class ProfileParams(BaseModel):
    model_config = ConfigDict(extra="forbid")


class KeyBlockParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    keys: list[str] = Field(min_length=1)
    n_blocks: int = Field(16, ge=1)


def evaluate_profile(original: Dataset, synthetic: list[Dataset], params: ProfileParams) -> TableResult:
    """Records, missing share, special-missing counts and levels of every variable of the original.

    Computed as Dask reductions over the partitions (nothing is gathered on the client).
    """
    import dask

    frame = original.frame
    wanted: dict[str, object] = {"records": frame.shape[0], "missing": frame.isna().sum()}
    for v in original.schema:
        if v.missing_codes:
            wanted[f"special:{v.name}"] = frame[v.name].isin(list(v.missing_codes)).sum()
        if v.is_factor or v.is_numeric:
            wanted[f"distinct:{v.name}"] = frame[v.name].dropna().nunique()
    (got,) = dask.compute(wanted)
    n = int(got["records"])
    label = "original"
    rows: list[tuple[str, str, str, float]] = [(label, "", "records", float(n))]
    for v in original.schema:
        st = f"variable={v.name}"
        rows.append((label, st, "missing_pct", 100.0 * float(got["missing"][v.name]) / n if n else np.nan))
        if v.missing_codes:
            rows.append((label, st, "special_missing", float(got[f"special:{v.name}"])))
        if v.is_factor:
            rows.append((label, st, "levels", float(len(v.levels or ()))))
            rows.append((label, st, "levels_observed", float(got[f"distinct:{v.name}"])))
        elif v.is_numeric:
            rows.append((label, st, "distinct", float(got[f"distinct:{v.name}"])))
    summary = {"records": n, "variables": {v.name: v.kind for v in original.schema}}
    return TableResult(tidy_frame(rows), summary)


def _combination_sizes(part: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per partition (whole key blocks): the size of every key combination."""
    sizes = part.groupby(keys, observed=True, dropna=False).size()
    return pd.DataFrame(
        {
            "size": sizes.to_numpy(dtype=np.int64),
            "block": np.int64(part[BLOCK_COLUMN].iloc[0]) if len(part) else np.int64(-1),
        }
    )


def _size_rows(sizes: np.ndarray, label: str) -> list[tuple[str, str, str, float]]:
    n = float(sizes.sum())
    rows = [
        (label, "", "combinations", float(len(sizes))),
        (label, "", "unique_records_pct", 100.0 * float((sizes == 1).sum()) / n if n else np.nan),
        (label, "", "max_combination_size", float(sizes.max()) if len(sizes) else 0.0),
        (label, "", "mean_combination_size", n / len(sizes) if len(sizes) else np.nan),
    ]
    for lo, hi in SIZE_BUCKETS:
        name = f"size={lo}" if lo == hi else (f"size={lo}-{int(hi)}" if np.isfinite(hi) else f"size>={lo}")
        rows.append((label, name, "combinations", float(((sizes >= lo) & (sizes <= hi)).sum())))
    return rows


def evaluate_key_blocks(original: Dataset, synthetic: list[Dataset], params: KeyBlockParams) -> TableResult:
    """Key-combination size distribution of the original and each synthetic set, on key blocks."""
    import dask

    kb = KeyBlocks(params.keys, params.n_blocks)
    cols = list(params.keys)
    aligned = kb.partition(original.frame[cols], [s.frame[cols] for s in synthetic])
    meta = pd.DataFrame({"size": pd.Series(dtype="int64"), "block": pd.Series(dtype="int64")})
    frames = [aligned.original, *aligned.synthetic]
    sized = [f.map_partitions(_combination_sizes, cols, meta=meta) for f in frames]
    part_records = [f.map_partitions(len) for f in frames]
    computed = dask.compute(*sized, *part_records)
    sizes, records = computed[: len(frames)], computed[len(frames) :]
    rows: list[tuple[str, str, str, float]] = []
    labels = ["original"] + [str(i + 1) for i in range(len(synthetic))]
    for label, sz, rec in zip(labels, sizes, records, strict=True):
        rows += _size_rows(np.sort(sz["size"].to_numpy()), label)
        rows.append((label, "", "largest_partition_records", float(np.max(rec))))
    summary = {"keys": cols, "n_blocks": params.n_blocks}
    return TableResult(tidy_frame(rows), summary)
