"""Identification risk over an executor: the counts of one scenario (the data checks are in
:mod:`pipeline.risk.idrisk.checks`).

The per-block kernels wrap :func:`~pipeline.risk.idrisk.matching.partition_counts`; they are
composed with :meth:`Executor.key_blocks` (one block per combination of the categorical
compared variables, ``__row__`` giving each record's own synthetic row) and
:meth:`Blocks.map`.  In memory the whole data are one block; on the cluster the blocks are
aligned partitions.  Blocks return exact integers (c and T per record, or (c, T) histograms for
sweeps), so the results do not depend on the partitioning.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from pipeline.blocks import ROW_COLUMN
from pipeline.errors import DataError
from pipeline.evaluation.data import EvalData
from pipeline.evaluation.execution import Blocks, Deferred, Executor
from pipeline.risk.idrisk.matching import histogram, partition_counts
from pipeline.risk.idrisk.plan import MatchPlan
from pipeline.risk.idrisk.result import SetStatistics

# ---- kernels, one call per block ----------------------------------------------------------


def _records_kernel(original: pd.DataFrame, *synthetic: pd.DataFrame, plan: MatchPlan, combos: np.ndarray):
    """c and T of every original record of the block for every radius combination, with its row id."""
    results = partition_counts(original, synthetic, plan, combos)
    out = {ROW_COLUMN: original[ROW_COLUMN].to_numpy(dtype=np.int64)}
    for s, (c, t) in enumerate(results):
        for k in range(len(combos)):
            out[f"c_{k}_{s}"] = c[k]
            out[f"t_{k}_{s}"] = t[k]
    return pd.DataFrame(out)


def _records_meta(m: int, n_combos: int) -> pd.DataFrame:
    cols: dict[str, pd.Series] = {ROW_COLUMN: pd.Series(dtype=np.int64)}
    for s in range(m):
        for k in range(n_combos):
            cols[f"c_{k}_{s}"] = pd.Series(dtype=np.int64)
            cols[f"t_{k}_{s}"] = pd.Series(dtype=bool)
    return pd.DataFrame(cols)


_HIST_META = pd.DataFrame(
    {
        "set": pd.Series(dtype=np.int64),
        "combo": pd.Series(dtype=np.int64),
        "c": pd.Series(dtype=np.int64),
        "t": pd.Series(dtype=bool),
        "count": pd.Series(dtype=np.int64),
    }
)


def _histogram_kernel(original: pd.DataFrame, *synthetic: pd.DataFrame, plan: MatchPlan, combos: np.ndarray):
    """(set, combination, c, T) -> number of records of the block; summed over blocks."""
    results = partition_counts(original, synthetic, plan, combos)
    parts = []
    for s, (c, t) in enumerate(results):
        for k in range(c.shape[0]):
            cv, tv, cnt = histogram(c[k], t[k])
            n = len(cv)
            parts.append(pd.DataFrame({"set": np.full(n, s), "combo": np.full(n, k), "c": cv, "t": tv, "count": cnt}))
    return pd.concat(parts, ignore_index=True) if parts else _HIST_META.copy()


# ---- one scenario -------------------------------------------------------------------------


def combo_matrix(plan: MatchPlan, combos: Sequence[Mapping[str, float]]) -> np.ndarray:
    """Radius combinations as rows of a matrix, columns in ``plan.continuous`` order."""
    return np.array([[combo[v] for v in plan.continuous] for combo in combos], dtype=np.float64).reshape(
        len(combos), len(plan.continuous)
    )


def scenario_blocks(
    data: EvalData, executor: Executor, plans: Sequence[MatchPlan], along: Sequence[Deferred] = ()
) -> list[Blocks]:
    """Balanced key blocks for each of the scenarios ``plans`` (scenarios that share blocks get
    the same object).

    When one scenario's categorical variables are compared by every other scenario too (the
    register task: sex, municipality; and sex, municipality, edu), the scenarios share one set
    of blocks keyed on them (a scenario that compares more matches those inside its blocks):
    the records are hashed, counted, cut and moved once for all scenarios, radii and sets, and
    no block is coarser than that scenario's own.  Otherwise (keys that diverge, e.g. sex and
    region against sex and municipality, whose common part would make a few large blocks; or a
    scenario without categorical variables, one block, beside one with them) each scenario
    gets blocks of its own.  ``along`` is computed with the first scenario's blocks' counting
    pass (:meth:`Executor.key_blocks`; their :attr:`Blocks.along`).
    """
    shared = [v for v in plans[0].categorical if all(v in p.categorical for p in plans[1:])]
    if not any(p.categorical for p in plans) or (shared and any(set(p.categorical) == set(shared) for p in plans)):
        groups = [(shared, list(range(len(plans))))]
    else:
        groups = [(list(p.categorical), [k]) for k, p in enumerate(plans)]
    out: list[Blocks] = [None] * len(plans)  # type: ignore[list-item]
    for g, (keys, members) in enumerate(groups):
        columns = list(dict.fromkeys(c for k in members for c in plans[k].columns))
        blocks = executor.key_blocks(
            data.select(columns), keys, with_row_id=True, balanced=True, along=along if g == 0 else ()
        )
        for k in members:
            out[k] = blocks
    return out


def count_records(blocks: Blocks, m: int, plan: MatchPlan, combos: Sequence[Mapping[str, float]]) -> Deferred:
    """Deferred frame of c and T per original record and radius combination (columns
    ``__row__``, ``c_k_s``, ``t_k_s`` for combination k and set s) on ``blocks``
    (:func:`scenario_blocks`)."""
    return blocks.map(_records_kernel, _records_meta(m, len(combos)), plan=plan, combos=combo_matrix(plan, combos))


def records_matrices(frame: pd.DataFrame, n: int, m: int, n_combos: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """c (int64) and T (bool), shape (n_combos, n, m), from the computed frame of :func:`count_records`.

    Each block's rows are put at their records' positions (no sort); every record must come
    exactly once.
    """
    rows = frame[ROW_COLUMN].to_numpy(dtype=np.int64)
    inside = (rows >= 0) & (rows < n)
    seen = np.zeros(n, dtype=bool)
    seen[rows[inside]] = True
    if len(rows) != n or not inside.all() or not seen.all():
        raise DataError("internal error: the key blocks did not return every original record exactly once")
    c = np.empty((n_combos, n, m), dtype=np.int64)
    t = np.empty((n_combos, n, m), dtype=bool)
    for k in range(n_combos):
        for s in range(m):
            c[k, rows, s] = frame[f"c_{k}_{s}"].to_numpy(dtype=np.int64)
            t[k, rows, s] = frame[f"t_{k}_{s}"].to_numpy(dtype=bool)
    return c, t


def records_statistics(c: np.ndarray, t: np.ndarray) -> list[SetStatistics]:
    """One :class:`SetStatistics` per radius combination from c and T per record (shape
    (n_combos, n, m)): the same histograms as :func:`sweep_statistics` gets from the blocks."""
    n, m = c.shape[1:]
    return [
        SetStatistics.from_histograms(n, [histogram(ck[:, s], tk[:, s]) for s in range(m)])
        for ck, tk in zip(c, t, strict=True)
    ]


def count_histograms(blocks: Blocks, plan: MatchPlan, combos: Sequence[Mapping[str, float]]) -> Deferred:
    """Deferred (set, combination, c, T, count) histogram of every radius combination on
    ``blocks`` (:func:`scenario_blocks`)."""
    return blocks.map(_histogram_kernel, _HIST_META, plan=plan, combos=combo_matrix(plan, combos))


def sweep_statistics(hist: pd.DataFrame, n: int, m: int, n_combos: int) -> list[SetStatistics]:
    """One :class:`SetStatistics` per radius combination from the computed histograms."""
    totals = hist.groupby(["combo", "set", "c", "t"], sort=True)["count"].sum().reset_index()
    stats = []
    for k in range(n_combos):
        per_set = []
        for s in range(m):
            h = totals[(totals["combo"] == k) & (totals["set"] == s)]
            per_set.append((h["c"].to_numpy(np.int64), h["t"].to_numpy(bool), h["count"].to_numpy(np.int64)))
        stats.append(SetStatistics.from_histograms(n, per_set))
    return stats
