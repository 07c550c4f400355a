"""The disclosure computation of one key set, composed from pure kernels and executor primitives.

Flow:

1. value counts of every key and target in every data set (:func:`gather_stats`: one
   :func:`~pipeline.risk.disclosure.coding.value_counts` per partition, merged exactly) —
   once for all key sets;
2. a category coder per key and target, shared by the original and all synthetic sets
   (grouping break points are computed here, from the pooled values), and a
   :class:`~pipeline.risk.disclosure.kernel.KernelPlan` per target (options in codes);
3. every partition of records is encoded and reduced to the (q, target) cell counts of every
   target (:func:`count_records`);
4. the cell counts, not the records, are co-partitioned into key blocks
   (:meth:`~pipeline.evaluation.execution.Executor.derived_key_blocks`; in memory the whole
   data are one block) and every target's block statistics are computed
   (:func:`~pipeline.risk.disclosure.kernel.block_summary`: exact integers; with several
   targets the blocks are persisted once and shared);
5. the statistics are summed and turned into the measures
   (:func:`~pipeline.risk.disclosure.measures.build_result`).

Whether the data are in memory or on the cluster, and how many blocks there are, is the
executor's decision; because step 4 only produces exact integers, every choice gives
identical results.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from pipeline.errors import ParameterError
from pipeline.evaluation.data import EvalData
from pipeline.evaluation.execution import Executor
from pipeline.risk.disclosure.coding import (
    MISSING,
    Coder,
    ColumnStats,
    build_coders,
    column_stats,
    encode_frame,
    encoded_meta,
    merge_value_counts,
    value_counts,
)
from pipeline.risk.disclosure.kernel import (
    KernelPlan,
    block_summary,
    cell_counts,
    cell_counts_meta,
    combine,
    summary_meta,
)
from pipeline.risk.disclosure.measures import build_result
from pipeline.risk.disclosure.options import DisclosureOptions
from pipeline.risk.disclosure.result import DisclosureResult

Stats = list[dict[str, ColumnStats]]


def gather_stats(data: EvalData, executor: Executor, variables: Sequence[str]) -> Stats:
    """Value counts of ``variables`` in every data set (one kernel per partition, one computation)."""
    variables = list(variables)
    factors = [v for v in variables if data.schema[v].is_factor]
    merged = executor.compute(
        *[executor.map_reduce(f, value_counts, merge_value_counts, variables, factors) for f in data.frames]
    )
    return [{v: column_stats(counts[v], data.schema[v]) for v in variables} for counts in merged]


def count_records(
    frame: pd.DataFrame,
    coders: Mapping[str, Coder],
    keys: tuple[str, ...],
    key_sizes: tuple[int, ...],
    targets: tuple[str, ...],
    target_sizes: tuple[int, ...],
) -> pd.DataFrame:
    """Cell counts of one partition of records (codes first, then a hash group-by)."""
    return cell_counts(encode_frame(frame, coders), keys, key_sizes, targets, target_sizes)


def key_set_results(
    data: EvalData, executor: Executor, stats: Stats, keys: Sequence[str], options: Sequence[DisclosureOptions]
) -> list[DisclosureResult]:
    """The :class:`DisclosureResult` of every target of one key set.

    Parameters
    ----------
    data : EvalData
        Prepared by the executor (in memory or on the cluster), with the keys and targets.
    stats : list
        :func:`gather_stats` of the keys and targets.
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
    meta = cell_counts_meta(encoded_meta(coders), keys, len(targets))
    blocks = executor.derived_key_blocks(data, keys, count_records, meta, coders, *layout)
    if len(plans) > 1:
        blocks = blocks.persist()  # shared by every target
    summaries = executor.compute(*[blocks.map(block_summary, summary_meta(), plan=p) for p in plans])
    return [build_result(combine([s]), data.m, keys, coders, o) for s, o in zip(summaries, options, strict=True)]


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
            warnings.warn(f"not_targetlev: {level!r} is not a level of {options.target!r}; nothing excluded",
                          stacklevel=5)
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
