"""The disclosure computation of one key set, composed from pure kernels and executor primitives.

Flow:

1. one pass over the records of every data set (:func:`gather_stats`): the partitions on each
   worker are reduced together to the counts of the distinct combinations of each key set's
   keys with each of its targets, in integer codes local to that table
   (:func:`~pipeline.risk.disclosure.kernel.joint_counts_by_target`); these
   partial counts stay where they were computed and only their value counts (and sizes) are
   combined and come to the driver — once for all key sets; partial counts that are small
   (:data:`ONE_BLOCK_CELLS`; in memory always) come too;
2. a category coder per key and target, shared by the original and all synthetic sets
   (grouping break points are computed here, from the pooled values), and a
   :class:`~pipeline.risk.disclosure.kernel.KernelPlan` per target (options in codes);
3. the (q, target) cell counts of every target (:func:`joint_cells`: the partition's codes
   mapped to the coders' codes through a table of the values it has): in the driver when the
   partial counts are there — the whole data are then one block, with no key hashing — else on
   the worker of each partition's counts, cut into key buckets by a hash of the key codes and
   merged per bucket on the workers
   (:meth:`~pipeline.evaluation.execution.Executor.merge_buckets`: counts, not records,
   move; no second pass over the records and no round trip through the driver);
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
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from pipeline import notices
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
    joint_codes,
    merge_value_counts,
)
from pipeline.risk.disclosure.kernel import (
    COUNT,
    TARGET_CODE,
    TARGET_INDEX,
    JointCounts,
    JointTables,
    KernelPlan,
    block_summary,
    cell_counts,
    combine,
    joint_counts,
    joint_counts_by_target,
    split_by_bucket,
)
from pipeline.risk.disclosure.params import DisclosureOptions
from pipeline.risk.disclosure.result import DisclosureResult

#: on the cluster, per-partition counts of at most this many rows per data set (summed over its
#: partitions) are brought to the driver and evaluated there as one block; larger ones are merged
#: and evaluated per key bucket on the workers (both give identical results; this decides only
#: where the work runs)
ONE_BLOCK_CELLS = 250_000
#: key buckets at least; more when the cluster has more worker threads (one bucket each: every
#: bucket has fixed costs, so fewer and larger ones are cheaper) or the counts more rows than
#: ``block_rows`` per bucket.  The number never changes the results (exact integer statistics).
MIN_BUCKETS = 2


#: key sets and their targets: ``((keys, targets), ...)``
KeySets = Sequence[tuple[Sequence[str], Sequence[str]]]


def tally_records(
    frames: Sequence[pd.DataFrame], variables: Sequence[str], factors: Sequence[str], key_sets: KeySets | None = None
) -> JointCounts | JointTables:
    """The counts of some partitions' combinations of values, counted together (the map step of
    :func:`gather_stats`: the partitions on one worker): of all ``variables``, or with
    ``key_sets`` of each key set with each of its targets (one pass over the records)."""
    if key_sets is None:
        return joint_counts(frames, variables, factors)
    return JointTables(
        tuple(t for keys, targets in key_sets for t in joint_counts_by_target(frames, keys, targets, factors))
    )


def tally_summary(joint: JointCounts | JointTables) -> tuple[dict[str, pd.Series], int]:
    """What the driver needs of one partition's counts: its value counts and its number of rows
    (taken where the counts are; the counts themselves stay there)."""
    return joint.value_counts(), len(joint)


def merge_summaries(parts: Sequence[tuple[dict[str, pd.Series], int]]) -> tuple[dict[str, pd.Series], int]:
    """Summaries of several partitions as one (integer sums: exact, in any grouping)."""
    return merge_value_counts([p[0] for p in parts]), sum(p[1] for p in parts)


@dataclass(frozen=True)
class Stats(Sequence[dict[str, ColumnStats]]):
    """What one pass over the records tells, per data set (0 = original): ``stats[i][variable]``.

    Attributes
    ----------
    columns : tuple of dict
        Per data set, the :class:`~pipeline.risk.disclosure.coding.ColumnStats` of every variable.
    partials : tuple of list or None
        Per data set, the :class:`~pipeline.risk.disclosure.kernel.JointCounts` (with key sets:
        :class:`~pipeline.risk.disclosure.kernel.JointTables`) of every partition (None when
        not asked for): values in this process when ``local``, else handles on the cluster
        (where they were computed) for :func:`key_set_results` to merge by key bucket.
    local : bool
        Whether the partials are in this process (in memory always; on the cluster when they
        are small, :data:`ONE_BLOCK_CELLS`): the whole data are then one block.
    partial_rows : int
        Rows of the per-partition counts in the data set that has most.
    tables : int
        Tables of counts in each partial (one per key set and target with key sets, else 1).
    aligned : bool
        Whether the partials are of data laid out in aligned key blocks (one per partition, the
        same key cells in partition ``b`` of every data set): they are then merged block by block.
    """

    columns: tuple[dict[str, ColumnStats], ...]
    partials: tuple[list[Any], ...] | None = None
    local: bool = True
    partial_rows: int = 0
    tables: int = 1
    aligned: bool = False

    def __getitem__(self, index: Any) -> Any:  # an int gives one data set's dict, a slice a tuple
        return self.columns[index]

    def __len__(self) -> int:
        return len(self.columns)

    def __iter__(self) -> Iterator[dict[str, ColumnStats]]:
        return iter(self.columns)


def gather_stats(
    data: EvalData,
    executor: Executor,
    variables: Sequence[str],
    joint: bool = True,
    key_sets: KeySets | None = None,
    aligned: bool = False,
) -> Stats:
    """Value counts of ``variables`` in every data set, and their joint counts (one pass, one computation).

    The joint counts are of all ``variables``, or with ``key_sets`` of the keys of each key set
    with each of its targets.  With ``joint`` the partitions of a data set on each worker (in memory: the data set) are
    reduced to the counts of their combinations of values (:func:`tally_records`), kept where
    computed; only their value counts and sizes are
    combined and come to the driver.  Per-partition counts of at most ``min(block_rows,
    ONE_BLOCK_CELLS)`` rows per data set are then brought to the driver too (the data are one
    block); larger ones stay on the workers (:attr:`Stats.partials`, for
    :func:`key_set_results` to merge per key bucket).  Without ``joint``, only the value counts
    are computed.  ``aligned``: ``data`` are laid out in aligned key blocks
    (:meth:`~pipeline.evaluation.execution.Executor.laid_out`) whose key every key set contains;
    the counts are then one partial per partition (block), merged block by block.
    """
    variables = list(variables)
    factors = [v for v in variables if data.schema[v].is_factor]
    if not joint:
        return Stats(value_stats(data, executor, variables))
    key_sets = None if key_sets is None else tuple((tuple(k), tuple(t)) for k, t in key_sets)
    partials, summaries = executor.map_reduce_partials(
        data.frames, tally_records, merge_summaries, variables, factors, key_sets,
        summary=tally_summary, per_worker=not aligned,
    )  # fmt: skip
    columns = tuple({v: column_stats(c[v], data.schema[v]) for v in variables} for c, _ in summaries)
    rows = max(r for _, r in summaries)
    tables = 1 if key_sets is None else sum(len(t) for _, t in key_sets)
    if executor.is_lazy(data) and rows > min(executor.block_rows, ONE_BLOCK_CELLS):
        return Stats(columns, tuple(partials), local=False, partial_rows=rows, tables=tables, aligned=aligned)
    return Stats(columns, tuple(executor.gather(partials)), partial_rows=rows, tables=tables)


def joint_cells(joint: JointCounts, coders: Mapping[str, Coder], layout: tuple) -> dict[str, np.ndarray]:
    """The (key codes, target) cell counts, as columns, of one partition's :class:`JointCounts`
    of the keys with one target (``layout``: keys, their sizes, the target and its size, each
    target in a 1-tuple).

    The combinations are the cells already (a key group may have several rows when the coders
    merge values, e.g. a level into missing: the block kernel merges them), unless a coder
    groups numbers into intervals: then many combinations share a cell and the cells are counted.
    """
    keys, key_sizes, targets, target_sizes = layout
    (target,) = targets
    codes = joint_codes(joint, {v: coders[v] for v in (*keys, target)})
    if any(coders[v].mode == "bins" for v in (*keys, target)):
        counted = cell_counts(pd.DataFrame(codes), keys, key_sizes, targets, target_sizes, joint.counts)
        return {c: counted[c].to_numpy() for c in counted.columns}
    cells = {k: codes[k] for k in keys}
    cells[TARGET_INDEX] = np.zeros(len(joint), dtype=np.int8)
    cells[TARGET_CODE] = codes[target].astype(np.int32)
    cells[COUNT] = joint.counts
    return cells


def target_cells(
    partial: JointTables, coders: Mapping[str, Coder], layouts: Sequence[tuple]
) -> list[dict[str, np.ndarray]]:
    """The cell counts (as columns) of one partition's tables for each target (``layouts``: one
    per target, :func:`joint_cells`' layout, ``__target__`` its index), each from the table of the
    keys with that target."""
    out = []
    for index, layout in enumerate(layouts):
        keys, _, (target,), _ = layout
        cells = joint_cells(partial.table((*keys, target)), coders, layout)
        cells[TARGET_INDEX] = np.full(len(cells[COUNT]), index, dtype=np.int8 if index < 128 else np.int16)
        out.append(cells)
    return out


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
    key_sizes = tuple(coders[k].size for k in keys)
    layouts = [(keys, key_sizes, (o.target,), (coders[o.target].size,)) for o in options]
    assert stats.partials is not None, "key_set_results needs gather_stats(joint=True)"
    if stats.local:  # the whole data are one block: no key hashing, no shuffle
        cells = [
            [[pd.DataFrame(c) for c in target_cells(j, coders, layouts)] for j in parts] for parts in stats.partials
        ]
        per_bucket = [bucket_summaries(*cells, plans=plans)]
    elif stats.aligned:  # laid-out data: the counts of block b of every data set merged where they are
        summaries = partial(block_summaries, coders=coders, layouts=layouts, plans=plans)
        per_bucket = executor.map_aligned(stats.partials, summaries)
    else:  # the counts of every partition, in key buckets merged in parallel (no pass over the records)
        # each bucket holds about block_rows rows of one table of counts (the kernel takes one at a time)
        rows = math.ceil(stats.partial_rows / (stats.tables * executor.block_rows))
        n_buckets = max(MIN_BUCKETS, executor.threads(), rows)
        split = partial(bucket_cells, coders=coders, layouts=layouts, n_buckets=n_buckets)
        per_bucket = executor.merge_buckets(stats.partials, split, n_buckets, partial(bucket_summaries, plans=plans))
    return [build_result(combine([b[i] for b in per_bucket]), data.m, keys, coders, o) for i, o in enumerate(options)]


def bucket_cells(
    partial: JointTables, coders: Mapping[str, Coder], layouts: Sequence[tuple], n_buckets: int
) -> list[list[pd.DataFrame]]:
    """The cell counts of one partition's counts for each target (:func:`target_cells`) in key
    buckets (the split of :meth:`~pipeline.evaluation.execution.Executor.merge_buckets`):
    bucket ``b`` is the list of every target's ``b``-th piece."""
    keys = layouts[0][0]
    per_target = [split_by_bucket(cells, keys, n_buckets) for cells in target_cells(partial, coders, layouts)]
    return [[pieces[b] for pieces in per_target] for b in range(n_buckets)]


def block_summaries(
    *partials: JointTables, coders: Mapping[str, Coder], layouts: Sequence[tuple], plans: Sequence[KernelPlan]
) -> list[pd.DataFrame]:
    """Every target's statistics of one key block of laid-out data from the counts of its
    partition in each data set (``partials[i]``: data set ``i``)."""
    cells = [[[pd.DataFrame(c) for c in target_cells(p, coders, layouts)]] for p in partials]
    return bucket_summaries(*cells, plans=plans)


def bucket_summaries(*pieces: Sequence[Sequence[pd.DataFrame]], plans: Sequence[KernelPlan]) -> list[pd.DataFrame]:
    """Every target's block statistics of one key bucket from the cell counts of its pieces
    (``pieces[i][j][k]``: data set ``i``, its table of counts ``j``, target ``k``; a key group
    may have rows in several tables, which the block kernel merges)."""
    return [block_summary(*[[p[k] for p in per_set] for per_set in pieces], plan=plan) for k, plan in enumerate(plans)]


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
            notices.warn(
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
