"""The disclosure computation of one key set, composed from pure kernels and executor primitives.

Flow:

1. one pass over the records of every data set (:func:`gather_stats`): each partition is
   reduced to the counts of its distinct combinations of key and target values
   (:func:`~pipeline.risk.disclosure.kernel.joint_counts`, integer codes throughout); these
   partial counts stay where they were computed and are merged exactly to the driver while
   the merged counts of every data set are small (:data:`ONE_BLOCK_CELLS`; in memory always),
   else only their value counts are — once for all key sets;
2. a category coder per key and target, shared by the original and all synthetic sets
   (grouping break points are computed here, from the pooled values), and a
   :class:`~pipeline.risk.disclosure.kernel.KernelPlan` per target (options in codes);
3. the (q, target) cell counts of every target (:func:`count_records`): from the merged
   counts when they were kept — the whole data are then one block, with no key hashing —
   else from each partition's counts, cut into key buckets by a hash of the key codes and
   merged per bucket on the workers
   (:meth:`~pipeline.evaluation.execution.Executor.merge_buckets`: counts, not records,
   move; no second pass over the records);
4. every target's statistics per block or bucket
   (:func:`~pipeline.risk.disclosure.kernel.block_summary`: exact integers);
5. the statistics are summed and turned into the measures
   (:func:`~pipeline.risk.disclosure.assemble.build_result`).

Whether the data are in memory or on the cluster, and how many buckets there are, is decided
by the executor and the size of the counts; because step 4 only produces exact integers, every
choice gives identical results.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from pipeline.errors import ParameterError
from pipeline.evaluation.data import EvalData
from pipeline.evaluation.execution import Executor
from pipeline.risk.disclosure.assemble import build_result
from pipeline.risk.disclosure.checks import value_stats
from pipeline.risk.disclosure.coding import (
    MISSING,
    Coder,
    ColumnStats,
    build_coders,
    column_stats,
    encode_frame,
    merge_value_counts,
    value_counts,
)
from pipeline.risk.disclosure.kernel import (
    COUNT,
    TARGET_CODE,
    TARGET_INDEX,
    KernelPlan,
    block_summary,
    cell_counts,
    combine,
    joint_counts,
    split_by_bucket,
)
from pipeline.risk.disclosure.params import DisclosureOptions
from pipeline.risk.disclosure.result import DisclosureResult

#: on the cluster, merged counts of at most this many rows per data set are brought to the driver
#: and evaluated there as one block; larger ones are merged and evaluated per key bucket on the
#: workers (both give identical results; this decides only where the work runs)
ONE_BLOCK_CELLS = 250_000
#: key buckets at least (independent of the workers: enough to balance the merges of a few)
MIN_BUCKETS = 4


@dataclass(frozen=True)
class Tally:
    """The counts of (some partitions of) one data set: the joint counts of the variables while
    they stay within the limit, else only the value counts of each variable; ``rows``: the
    rows of the joint counts of its partitions, summed."""

    joint: pd.DataFrame | None = None
    values: dict[str, pd.Series] | None = None
    rows: int = 0


def tally_records(frame: pd.DataFrame, variables: Sequence[str], factors: Sequence[str], limit: int | None) -> Tally:
    """The :class:`Tally` of one partition of records (the map step of :func:`gather_stats`)."""
    return _bounded(joint_counts(frame, variables, factors), variables, factors, limit)


def merge_tallies(parts: Sequence[Tally], variables: Sequence[str], factors: Sequence[str], limit: int | None) -> Tally:
    """The tallies of several partitions as one (integer sums: exact, in any grouping).

    Joint counts are merged a batch of at most about ``limit`` rows at a time, so a merge holds
    at most about twice ``limit`` rows; once the merged counts outgrow ``limit`` only value
    counts are merged.
    """
    if len(parts) == 1:
        return parts[0]
    rows = sum(p.rows for p in parts)
    # merged counts are at least as long as the longest part: past the limit, only value counts
    if any(p.joint is None or (limit is not None and len(p.joint) > limit) for p in parts):
        return Tally(values=merge_value_counts([_value_counts(p, variables, factors) for p in parts]), rows=rows)
    batch = [parts[0].joint]
    for i, part in enumerate(parts[1:], start=1):
        batch.append(part.joint)
        if i + 1 < len(parts) and (limit is None or sum(map(len, batch)) + len(parts[i + 1].joint) <= limit):
            continue
        stacked = pd.concat(batch, ignore_index=True)
        merged = _bounded(joint_counts(stacked, variables, factors, stacked[COUNT].to_numpy()), variables, factors,
                          limit)  # fmt: skip
        if merged.joint is None:
            rest = [_value_counts(p, variables, factors) for p in parts[i + 1 :]]
            return Tally(values=merge_value_counts([merged.values, *rest]), rows=rows)
        batch = [merged.joint]
    return Tally(joint=batch[0], rows=rows)


def _bounded(joint: pd.DataFrame, variables: Sequence[str], factors: Sequence[str], limit: int | None) -> Tally:
    if limit is None or len(joint) <= limit:
        return Tally(joint=joint, rows=len(joint))
    return Tally(values=value_counts(joint, variables, factors, joint[COUNT].to_numpy()), rows=len(joint))


def _value_counts(tally: Tally, variables: Sequence[str], factors: Sequence[str]) -> dict[str, pd.Series]:
    if tally.values is not None:
        return tally.values
    assert tally.joint is not None
    return value_counts(tally.joint, variables, factors, tally.joint[COUNT].to_numpy())


@dataclass(frozen=True)
class Stats(Sequence[dict[str, ColumnStats]]):
    """What one pass over the records tells, per data set (0 = original): ``stats[i][variable]``.

    Attributes
    ----------
    columns : tuple of dict
        Per data set, the :class:`~pipeline.risk.disclosure.coding.ColumnStats` of every variable.
    joint : tuple of DataFrame or None
        Per data set, the counts of its distinct combinations of values of the variables
        (:func:`~pipeline.risk.disclosure.kernel.joint_counts`), when those of every data set
        are small enough to be one block; None otherwise (or when not asked for).
    partials : tuple of list or None
        When the joint counts are not kept: per data set, the :class:`Tally` of
        every partition (its joint counts), kept where it was computed (handles on the
        cluster) for :func:`key_set_results` to merge by key bucket; None otherwise.
    partial_rows : int
        Rows of those per-partition counts in the data set that has most.
    """

    columns: tuple[dict[str, ColumnStats], ...]
    joint: tuple[pd.DataFrame, ...] | None = None
    partials: tuple[list[Any], ...] | None = None
    partial_rows: int = 0

    def __getitem__(self, index: Any) -> Any:  # an int gives one data set's dict, a slice a tuple
        return self.columns[index]

    def __len__(self) -> int:
        return len(self.columns)

    def __iter__(self) -> Iterator[dict[str, ColumnStats]]:
        return iter(self.columns)


def gather_stats(data: EvalData, executor: Executor, variables: Sequence[str], joint: bool = True) -> Stats:
    """Value counts of ``variables`` in every data set, and their joint counts (one pass, one computation).

    With ``joint`` every partition is reduced to the counts of its combinations of values
    (:func:`tally_records`), kept where computed, and these are merged; the merged counts are
    kept when, for every data set, they have at most ``min(block_rows, ONE_BLOCK_CELLS)`` rows
    (in memory always), else the per-partition counts are (:attr:`Stats.partials`, for
    :func:`key_set_results` to merge per key bucket); the value counts are their margins.
    Without ``joint``, only the value counts are computed.
    """
    variables = list(variables)
    factors = [v for v in variables if data.schema[v].is_factor]
    if not joint:
        return Stats(value_stats(data, executor, variables))
    limit = min(executor.block_rows, ONE_BLOCK_CELLS) if executor.is_lazy(data) else None
    merge = partial(merge_tallies, variables=variables, factors=factors, limit=limit)
    # every partition's counts stay where they were computed; their merge comes to the driver
    partials, tallies = executor.map_reduce_partials(data.frames, tally_records, merge, variables, factors, None)
    counts = [_value_counts(t, variables, factors) for t in tallies]
    columns = tuple({v: column_stats(c[v], data.schema[v]) for v in variables} for c in counts)
    if all(t.joint is not None for t in tallies):
        return Stats(columns, tuple(t.joint for t in tallies))
    return Stats(columns, partials=tuple(partials), partial_rows=max(t.rows for t in tallies))


def count_records(
    frame: pd.DataFrame,
    coders: Mapping[str, Coder],
    keys: tuple[str, ...],
    key_sizes: tuple[int, ...],
    targets: tuple[str, ...],
    target_sizes: tuple[int, ...],
    weights: np.ndarray | None = None,
) -> pd.DataFrame:
    """Cell counts of one partition of records, or of joint counts with ``weights`` (codes first,
    then a dense count or a hash group-by)."""
    return cell_counts(encode_frame(frame, coders), keys, key_sizes, targets, target_sizes, weights)


def key_set_results(
    data: EvalData, executor: Executor, stats: Stats, keys: Sequence[str], options: Sequence[DisclosureOptions]
) -> list[DisclosureResult]:
    """The :class:`DisclosureResult` of every target of one key set.

    Parameters
    ----------
    data : EvalData
        Prepared by the executor (in memory or on the cluster), with the keys and targets.
    stats : Stats
        :func:`gather_stats` of the keys and targets (with their merged joint counts, or the
        counts of every partition).
    keys : sequence of str
        The key set in the data's column order.
    options : sequence of DisclosureOptions
        One per target (all with this key set).
    """
    keys = tuple(keys)
    first = options[0]
    coders = build_coders(stats, keys, first.ngroups_keys, first.cont_na, first.style)
    for o in options:
        coders[o.target] = build_coders(stats, [o.target], {o.target: o.ngroups_target}, o.cont_na, o.style)[o.target]
    plans = [_plan(o, i, keys, coders, _has_missing_label(stats, o.target)) for i, o in enumerate(options)]
    targets = tuple(o.target for o in options)
    layout = (keys, tuple(coders[k].size for k in keys), targets, tuple(coders[t].size for t in targets))
    if stats.joint is not None:  # the whole data are one block: no key hashing, no shuffle
        cells = [count_records(j, coders, *layout, j[COUNT].to_numpy()) for j in stats.joint]
        per_bucket = [[block_summary(*cells, plan=p) for p in plans]]
    else:  # the counts of every partition, in key buckets merged in parallel (no pass over the records)
        assert stats.partials is not None, "gather_stats(joint=True) keeps the partials when the counts are large"
        n_buckets = max(MIN_BUCKETS, math.ceil(stats.partial_rows / executor.block_rows))
        split = partial(bucket_cells, coders=coders, layout=layout, n_buckets=n_buckets)
        per_bucket = executor.merge_buckets(stats.partials, split, n_buckets, partial(bucket_summaries, plans=plans))
    return [build_result(combine([b[i] for b in per_bucket]), data.m, keys, coders, o) for i, o in enumerate(options)]


def bucket_cells(tally: Tally, coders: Mapping[str, Coder], layout: tuple, n_buckets: int) -> list[pd.DataFrame]:
    """The cell counts of one partition's :class:`Tally` in key buckets (the split of
    :meth:`~pipeline.evaluation.execution.Executor.merge_buckets`)."""
    assert tally.joint is not None
    joint = tally.joint
    keys, _, targets, _ = layout
    if len(targets) == 1:  # the joint counts are already the cells (merged in the bucket, if grouped)
        cells = encode_frame(joint, {v: coders[v] for v in (*keys, *targets)}).rename(columns={targets[0]: TARGET_CODE})
        cells[TARGET_CODE] = cells[TARGET_CODE].astype(np.int32)
        cells.insert(len(keys), TARGET_INDEX, np.zeros(len(cells), dtype=np.int8))
        cells[COUNT] = joint[COUNT].to_numpy()
    else:  # count each target's cells: fewer rows than the joint counts of all targets
        cells = count_records(joint, coders, *layout, joint[COUNT].to_numpy())
    return split_by_bucket(cells, keys, n_buckets)


def bucket_summaries(*pieces: Sequence[pd.DataFrame], plans: Sequence[KernelPlan]) -> list[pd.DataFrame]:
    """Every target's block statistics of one key bucket from the cell counts of its pieces
    (``pieces[i]``: those of data set ``i``; a key group may have rows in several pieces,
    which the block kernel merges)."""
    frames = [pd.concat(p, ignore_index=True) if len(p) > 1 else p[0] for p in pieces]
    return [block_summary(*frames, plan=p) for p in plans]


def _has_missing_label(stats: Stats, target: str) -> bool:
    """Whether the original has a record whose target category is "Missing"."""
    st = stats[0][target]
    return st.n_missing > 0 or int(st.counts.get(MISSING, 0)) > 0


def _plan(
    options: DisclosureOptions, index: int, keys: Sequence[str], coders: Mapping[str, Coder], missing_in_gt: bool
) -> KernelPlan:
    """Translate the options into codes, checking every level they name against the original (spec §8).

    ``missing_in_gt``: synthpop drops the Missing target row only when the original has a
    record in it.
    """
    target = coders[options.target]
    gt_target_levels = {target.labels[c] for c in target.r_levels[0]}
    not_target = []
    for level in options.not_targetlev:
        code = target.code_of(level)
        if code is None:
            warnings.warn(
                f"not_targetlev: {level!r} is not a level of {options.target!r}; nothing excluded", stacklevel=5
            )
        else:
            not_target.append(code)
    triples = []
    for key, key_level, target_level in options.exclude:
        if target_level not in gt_target_levels:
            raise ParameterError(
                f"exclude_targetlevs: {target_level!r} is not a level of the target {options.target!r} in the original"
            )
        kc = coders[key]
        if key_level not in {kc.labels[c] for c in kc.r_levels[0]}:
            raise ParameterError(f"exclude_keylevs: {key_level!r} is not a level of the key {key!r} in the original")
        triples.append((keys.index(key), kc.code_of(key_level), target.code_of(target_level)))
    single = ()
    if len(keys) == 1:
        kc = coders[keys[0]]
        single = tuple(np.isin(np.arange(kc.size), levels) for levels in kc.r_levels[1:])
    return KernelPlan(
        keys=tuple(keys),
        target_index=index,
        key_sizes=tuple(coders[k].size for k in keys),
        target_size=target.size,
        not_target=tuple(not_target),
        missing_target=target.missing if (not options.usetargetNA and missing_in_gt) else None,
        keys_missing=tuple((i, coders[k].missing) for i, k in enumerate(keys) if not options.usekeysNA[k]),
        exclude=tuple(triples),
        denom_lim=options.denom_lim if options.exclude_ov_denom_lim else None,
        thresh_2way=options.thresh_2way[0],
        single_key_levels=single,
    )
