"""The ``sdc_risk`` computation: one pass of counts per file, then the kernels on the counts.

Flow:

1. one pass over the records of every file (the original and each synthetic set, each a file in
   its own right): the partitions on each worker are reduced together to the distinct
   combinations of the keys, the sensitive variables and the household id, with their record
   count and weight sums (:func:`tally_partitions`:
   :meth:`~pipeline.evaluation.execution.Executor.map_reduce_partials` with ``per_worker``); the
   workers' tables are summed per combination (:func:`merge_tallies`: integer counts, and the
   weights as exact integer pieces, :mod:`~pipeline.risk.sdcrisk.exact_sums`, turned into
   doubles once summed: the same bits whatever the partitioning) — counts move, never records,
   and there is no shuffle;
2. per file, in the driver, the kernels on that table and the tables summed from it:
   frequencies with sdcMicro's missing-value matching
   (:mod:`~pipeline.risk.sdcrisk.frequencies`), individual, global and household risk and
   k-anonymity (:mod:`~pipeline.risk.sdcrisk.individual`), l-diversity
   (:mod:`~pipeline.risk.sdcrisk.diversity`), SUDA2 (:mod:`~pipeline.risk.sdcrisk.suda`) and the
   log-linear risk (:mod:`~pipeline.risk.sdcrisk.modrisk`).

Memory: the driver holds one table per file with at most one row per record (fewer when key
combinations repeat: the table of 5M records with 8 categorical keys has a few hundred thousand
rows); a household id makes it one row per (household, key combination).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from pipeline.data.schema import Schema
from pipeline.errors import DataError
from pipeline.evaluation.data import EvalData
from pipeline.evaluation.execution import Executor
from pipeline.risk.sdcrisk.assemble import FileRisk, file_risk
from pipeline.risk.sdcrisk.exact_sums import aligned, pieces, to_double
from pipeline.risk.sdcrisk.frequencies import group_sum
from pipeline.risk.sdcrisk.params import SdcRiskParams

#: the record count and weight sum columns of a tally
N = "n"
W = "w"
W_INV = "w_inv"


def code_columns(part: pd.DataFrame, schema: Schema, variables: Sequence[str]) -> pd.DataFrame:
    """The variables as sdcMicro reads them: factor level numbers 1..L, numbers as they are,
    missing values NaN; other kinds (a household id) as they are."""
    out = {}
    for v in variables:
        col = part[v]
        if schema[v].is_factor:
            codes = col.cat.codes.to_numpy().astype(float)
            out[v] = np.where(codes < 0, np.nan, codes + 1.0)
        elif schema[v].is_numeric:
            out[v] = col.to_numpy(dtype=float, na_value=np.nan)
        else:
            out[v] = col.to_numpy()
    return pd.DataFrame(out, index=part.index)


def tally(part: pd.DataFrame, schema: Schema, columns: Sequence[str], weights: str | None) -> pd.DataFrame:
    """One partition's distinct combinations of ``columns`` with their record count and weight sum.

    Raises
    ------
    DataError
        A missing or non-positive sampling weight (aggregates only in the message).
    """
    codes = code_columns(part, schema, columns)
    if weights is None:
        w = np.ones(len(part))
    else:
        w = part[weights].to_numpy(dtype=float, na_value=np.nan)
        bad = int(np.sum(~(w > 0)))
        if bad:
            raise DataError(f"weights variable {weights!r} has {bad} missing or non-positive values")
    codes[N] = np.ones(len(part), dtype=np.int64)
    if weights is None:  # sums of 1.0: exact in any order
        codes[W] = w
        codes[W_INV] = w
        return group_sum(codes, columns, [N, W, W_INV])
    # weight sums as exact integer pieces, so that they do not depend on the partitioning
    codes = pd.concat([codes.reset_index(drop=True), pieces(w, W), pieces(1.0 / w, W_INV)], axis=1)
    return group_sum(codes, columns, [c for c in codes.columns if c not in columns])


def tally_partitions(
    parts: Sequence[pd.DataFrame], schema: Schema, columns: Sequence[str], weights: str | None
) -> pd.DataFrame:
    """Several partitions' tally, counted together (the partitions on one worker: one table per
    worker instead of one per partition)."""
    return tally(pd.concat(list(parts)), schema, columns, weights)


def _summed(column: str) -> bool:
    return column in (N, W, W_INV) or "@" in column


def merge_tallies(parts: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Partitions' tallies as one, sorted by the combination (the same table however the file
    was partitioned: counts and weight pieces are integers)."""
    stacked = aligned(parts)
    columns = [c for c in parts[0].columns if not _summed(c)]
    return group_sum(stacked, columns, [c for c in stacked.columns if _summed(c)])


def weight_sums(table: pd.DataFrame) -> pd.DataFrame:
    """A merged tally with its weight sums as doubles (``w``, ``w_inv``) from their exact pieces."""
    if W in table.columns:
        return table
    out = table[[c for c in table.columns if "@" not in c]].copy()
    out[W] = to_double(table, W)
    out[W_INV] = to_double(table, W_INV)
    return out


def file_labels(m: int) -> list[str]:
    """The row label of each file: "original", then the synthetic sets "1".."m"."""
    return ["original", *[str(i) for i in range(1, m + 1)]]


def evaluate_files(data: EvalData, executor: Executor, params: SdcRiskParams) -> list[FileRisk]:
    """Every file's risk measures (original first), from one pass of counts per file."""
    columns = list(dict.fromkeys([*params.keys, *params.sensitive, *([params.household] if params.household else [])]))
    prepared = executor.prepare(data.select(params.variables()))
    # the per-worker tables (the partials) are not needed once summed: dropped here
    _, tables = executor.map_reduce_partials(
        prepared.frames, tally_partitions, merge_tallies, data.schema, columns, params.weights, per_worker=True
    )
    return [file_risk(weight_sums(table), params, data.schema) for table in tables]


__all__ = [
    "W_INV",
    "N",
    "W",
    "code_columns",
    "evaluate_files",
    "file_labels",
    "merge_tallies",
    "tally",
    "tally_partitions",
    "weight_sums",
]
