"""``disclosure()`` and ``multi_disclosure()``: synthpop's identity and attribute measures.

Flow (both functions):

1. validate every option (:mod:`~pipeline.risk.disclosure.options`) and the inputs;
2. one pass of value counts per variable and data set -> a category coder per key and
   target, shared by the original and all synthetic sets (grouping break points are
   computed here, from the pooled values);
3. encode every record to integer codes and count the (q, target) cells of every target
   (:func:`~pipeline.risk.disclosure.kernel.cell_counts`, per input partition);
4. reduce the cells to integer statistics per key block
   (:func:`~pipeline.risk.disclosure.kernel.block_summary`): with pandas input on the whole
   data at once, with Dask input on :class:`~pipeline.blocks.KeyBlocks` partitions of the
   cell counts (the key codes define the blocks; the blocks are persisted once and shared by
   all targets, each target being its own set of tasks);
5. sum the statistics and compute the measures (:mod:`~pipeline.risk.disclosure.measures`).

Because step 4 only produces exact integers, the pandas and the Dask path, and any number of
blocks or workers, give identical results.
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import dask
import numpy as np
import pandas as pd

from pipeline.blocks import AlignedBlocks, KeyBlocks
from pipeline.data.schema import Schema
from pipeline.errors import ParameterError
from pipeline.risk.disclosure.coding import MISSING, Coder, build_coders, encode_frame, encoded_meta
from pipeline.risk.disclosure.inputs import IN_MEMORY_ROWS, Engine, Inputs, first_frame, gather_stats, prepare_inputs
from pipeline.risk.disclosure.kernel import (
    KernelPlan,
    block_summary,
    cell_counts,
    cell_counts_meta,
    combine,
    summary_meta,
)
from pipeline.risk.disclosure.measures import build_result
from pipeline.risk.disclosure.options import DisclosureOptions, as_key_list, resolve_options
from pipeline.risk.disclosure.result import DisclosureResult, MultiDisclosureResult

log = logging.getLogger(__name__)
#: largest number of (q, target) cells per key block on the Dask path (bounds a block's memory)
CELLS_PER_BLOCK = 1_000_000
IDENT_MEASURES = {"repU": "repU", "UiOiS": "UiOiS", "UiSiO": "UiOiS", "baseCAPd": "baseCAPd"}
ATTRIB_MEASURES = {"DiSCO": "Dorig", "DiSDiO": "Dorig", "DCAP": "CAPd"}


def disclosure(
    original: Any,
    synthetic: Any,
    keys: str | Sequence[str],
    target: str,
    *,
    schema: Schema | None = None,
    denom_lim: int = 5,
    exclude_ov_denom_lim: bool = False,
    not_targetlev: str | Sequence[str] | None = None,
    usetargetNA: bool = True,
    usekeysNA: bool | Sequence[bool] | Mapping[str, bool] = True,
    exclude_keys: Sequence[str] | None = None,
    exclude_keylevs: Sequence[str] | None = None,
    exclude_targetlevs: Sequence[str] | None = None,
    ngroups_target: int | None = None,
    ngroups_keys: int | Sequence[int] | Mapping[str, int] | None = None,
    thresh_1way: Sequence[float] = (50, 90),
    thresh_2way: Sequence[float] = (4, 80),
    cont_na: Mapping[str, float | Sequence[float]] | None = None,
    style: str = "quantile",
    n_blocks: int | None = None,
    engine: Engine = "auto",
) -> DisclosureResult:
    """Identity and attribute disclosure measures of synthetic data (synthpop ``disclosure``).

    Parameters
    ----------
    original : pandas/Dask DataFrame or Dataset
        The ground truth.
    synthetic : frame, Dataset, or a list of them
        The m synthetic sets (all are used; synthpop may silently keep only the first).
    keys : str or sequence of str
        Quasi-identifiers; re-ordered to the original's column order as in synthpop.
    target : str
        The attribute an intruder wants to learn.
    schema : Schema, optional
        Kinds, levels and special missing codes (default: the Dataset's, else the dtypes).
    denom_lim, exclude_ov_denom_lim
        With ``exclude_ov_denom_lim``, cells with more than ``denom_lim`` records are excluded.
    not_targetlev : str or sequence of str, optional
        Target level(s) excluded everywhere.
    usetargetNA : bool
        False excludes the "Missing" target category (when the original has missing targets).
    usekeysNA : bool, sequence (one per key, in the order of ``keys``) or mapping key -> bool
        False excludes key groups with that key missing.  Bound to key *names*.
    exclude_keys, exclude_keylevs, exclude_targetlevs : sequences of equal length
        (key, key level, target level) triples whose cells are excluded.
    ngroups_target : int, optional
        Group a numeric target into this many quantile groups (>= 2).
    ngroups_keys : int, sequence (in the order of ``keys``) or mapping key -> int, optional
        Groups for numeric keys (0 = do not group).  Bound to key names.
    thresh_1way, thresh_2way : (count, percentage)
        Thresholds of the prior-knowledge flags (spec §9).
    cont_na : mapping variable -> code(s), optional
        Special numeric missing codes (added to / overriding the schema's).
    style : {"quantile", "equal"}
        classInt style of the grouping.
    n_blocks : int, optional
        Number of key blocks on the Dask path (default: one per million (q, target) cells).
    engine : {"auto", "pandas", "dask"}
        Where to compute: in memory, on key blocks, or (auto) on key blocks for Dask input
        with more than a million records in some data set.

    Returns
    -------
    DisclosureResult

    Raises
    ------
    ParameterError
        Invalid options, unknown variables, target among the keys, a key with only missing
        values, a level in an ``exclude_*`` option that the original does not have.
    CompatibilityError
        A variable missing in a synthetic set, or categorical in one set and numeric in another.
    """
    key_list = as_key_list(keys)
    opts = dict(
        denom_lim=denom_lim, exclude_ov_denom_lim=exclude_ov_denom_lim, not_targetlev=not_targetlev,
        usetargetNA=usetargetNA, usekeysNA=usekeysNA, exclude_keys=exclude_keys, exclude_keylevs=exclude_keylevs,
        exclude_targetlevs=exclude_targetlevs, ngroups_target=ngroups_target, ngroups_keys=ngroups_keys,
        thresh_1way=thresh_1way, thresh_2way=thresh_2way, cont_na=cont_na, style=style,
    )
    resolve_options(key_list, target, **opts)  # fail on bad options before touching data
    run = _Run.start(original, synthetic, key_list, [target], schema, n_blocks, engine)
    return run.evaluate([resolve_options(key_list, target, schema_cont_na=run.schema_cont_na, **opts)])[0]


def multi_disclosure(
    original: Any,
    synthetic: Any,
    keys: str | Sequence[str],
    targets: Sequence[str] | None = None,
    *,
    schema: Schema | None = None,
    denom_lim: int = 5,
    exclude_ov_denom_lim: bool = False,
    not_targetslev: Sequence[str] | Mapping[str, str] | None = None,
    usetargetsNA: bool | Sequence[bool] | Mapping[str, bool] = True,
    usekeysNA: bool | Sequence[bool] | Mapping[str, bool] = True,
    exclude_keys: Sequence[Sequence[str]] | Mapping[str, Sequence[str]] | None = None,
    exclude_keylevs: Sequence[Sequence[str]] | Mapping[str, Sequence[str]] | None = None,
    exclude_targetlevs: Sequence[Sequence[str]] | Mapping[str, Sequence[str]] | None = None,
    ngroups_targets: int | Sequence[int | None] | Mapping[str, int] | None = None,
    ngroups_keys: int | Sequence[int] | Mapping[str, int] | None = None,
    ident_meas: str = "repU",
    attrib_meas: str = "DiSCO",
    thresh_1way: Sequence[float] = (50, 90),
    thresh_2way: Sequence[float] = (4, 80),
    cont_na: Mapping[str, float | Sequence[float]] | None = None,
    style: str = "quantile",
    n_blocks: int | None = None,
    engine: Engine = "auto",
) -> MultiDisclosureResult:
    """:func:`disclosure` for several targets with one key set (synthpop ``multi.disclosure``).

    The key blocks are built once and shared; on the Dask path every target is an
    independent set of tasks over the persisted blocks, computed in parallel.

    Parameters
    ----------
    targets : sequence of str, optional
        Default: every variable of the (first) synthetic set that is not a key.
    not_targetslev, usetargetsNA, ngroups_targets
        One value for all targets, a sequence in the order of ``targets``, or a mapping
        target -> value ("" / None = none).
    exclude_keys, exclude_keylevs, exclude_targetlevs
        Per target (sequence in target order, or mapping target -> list), the exclusion
        triples of :func:`disclosure` (synthpop passes the target levels as key levels; here
        each goes where it belongs).
    ident_meas : {"repU", "UiOiS", "baseCAPd"}
        Identity measure summarised (``"UiSiO"`` is accepted for ``UiOiS``).
    attrib_meas : {"DiSCO", "DiSDiO", "DCAP"}
        Attribute measure summarised; compared with ``Dorig`` (``CAPd`` for ``DCAP``).
    Other parameters as in :func:`disclosure`.

    Returns
    -------
    MultiDisclosureResult
        ``ident_syn`` and ``attrib_syn`` are means over **all** m synthetic sets (synthpop's
        ``ident.syn`` is the first set's ``repU`` only).
    """
    if ident_meas not in IDENT_MEASURES:
        raise ParameterError(f"ident_meas must be one of {sorted(IDENT_MEASURES)}, got {ident_meas!r}")
    if attrib_meas not in ATTRIB_MEASURES:
        raise ParameterError(f"attrib_meas must be one of {sorted(ATTRIB_MEASURES)}, got {attrib_meas!r}")
    key_list = as_key_list(keys)
    target_list = _default_targets(synthetic, key_list) if targets is None else \
        list((targets,) if isinstance(targets, str) else targets)
    if not target_list:
        raise ParameterError("targets: no target variable left besides the keys")
    dupes = sorted({t for t in target_list if target_list.count(t) > 1})
    if dupes:
        raise ParameterError(f"targets: duplicated target(s) {dupes}")
    among_keys = [t for t in target_list if t in key_list]
    if among_keys:
        raise ParameterError(f"targets {among_keys} cannot also be keys")
    per_target = {
        "not_targetlev": _per_target(not_targetslev, target_list, "not_targetslev", None),
        "usetargetNA": _per_target(usetargetsNA, target_list, "usetargetsNA", True),
        "ngroups_target": _per_target(ngroups_targets, target_list, "ngroups_targets", None),
        "exclude_keys": _per_target_lists(exclude_keys, target_list, "exclude_keys"),
        "exclude_keylevs": _per_target_lists(exclude_keylevs, target_list, "exclude_keylevs"),
        "exclude_targetlevs": _per_target_lists(exclude_targetlevs, target_list, "exclude_targetlevs"),
    }
    shared = dict(denom_lim=denom_lim, exclude_ov_denom_lim=exclude_ov_denom_lim, usekeysNA=usekeysNA,
                  ngroups_keys=ngroups_keys, thresh_1way=thresh_1way, thresh_2way=thresh_2way, cont_na=cont_na,
                  style=style)

    def options_of(t: str, schema_cont_na: Mapping[str, tuple[float, ...]] | None) -> DisclosureOptions:
        return resolve_options(key_list, t, schema_cont_na=schema_cont_na, **shared,
                               **{name: values[t] for name, values in per_target.items()})

    for t in target_list:
        options_of(t, None)
    run = _Run.start(original, synthetic, key_list, target_list, schema, n_blocks, engine)
    results = run.evaluate([options_of(t, run.schema_cont_na) for t in target_list])
    return _summarise(dict(zip(target_list, results, strict=True)), key_list, ident_meas, attrib_meas, run)


# ---- per-target parameters of multi_disclosure ------------------------------------------------
def _default_targets(synthetic: Any, keys: Sequence[str]) -> list[str]:
    return [str(c) for c in first_frame(synthetic).columns if c not in keys]


def _per_target(value: Any, targets: Sequence[str], name: str, default: Any) -> dict[str, Any]:
    if isinstance(value, Mapping):
        unknown = [t for t in value if t not in targets]
        if unknown:
            raise ParameterError(f"{name}: {unknown} are not among the targets {list(targets)}")
        return {t: value.get(t, default) for t in targets}
    if value is None or isinstance(value, (str, bool, int, float)):
        return dict.fromkeys(targets, default if value is None else value)
    value = list(value)
    if len(value) != len(targets):
        raise ParameterError(f"{name} must have one entry per target ({len(targets)}), got {len(value)}")
    return dict(zip(targets, value, strict=True))


def _per_target_lists(value: Any, targets: Sequence[str], name: str) -> dict[str, Any]:
    if value is None:
        return dict.fromkeys(targets)
    if isinstance(value, Mapping):
        return _per_target(value, targets, name, None)
    value = list(value)
    if len(value) != len(targets) or any(isinstance(v, str) for v in value):
        raise ParameterError(f"{name} must hold one list per target ({len(targets)}) or map target -> list")
    return dict(zip(targets, value, strict=True))


def _summarise(
    results: dict[str, DisclosureResult], keys: Sequence[str], ident_meas: str, attrib_meas: str, run: _Run
) -> MultiDisclosureResult:
    ident_col, orig_col = IDENT_MEASURES[ident_meas], ATTRIB_MEASURES[attrib_meas]

    def mean(values: pd.Series) -> float:
        return math.fsum(values.tolist()) / len(values)

    ident_rows, attrib_rows = [], []
    for t, r in results.items():
        table = r.measures()
        ident_rows.append((t, mean(table["UiO"]), mean(table[ident_col])))
        last_pairs = next((len(c) for c in reversed(r.check_2way) if c is not None), 0)
        attrib_rows.append((t, mean(table[orig_col]), mean(table[attrib_meas]), r.check1, last_pairs, r.check2))
    ident_table = pd.DataFrame(ident_rows, columns=["target", "ident_orig", "ident_syn"]).set_index("target")
    attrib = pd.DataFrame(attrib_rows, columns=["target", "attrib_orig", "attrib_syn", "check1", "Npairs", "check2"])
    attrib = attrib.sort_values("attrib_syn", kind="stable").reset_index(drop=True)
    width = len(str(len(attrib)))
    suffix = np.select(
        [(attrib["check1"] != "") & (attrib["check2"] != ""), attrib["check2"] != "", attrib["check1"] != ""],
        [" 1&2way checks", " 2way checks", " 1way checks"], default="",
    )
    attrib.index = [f"{i + 1:0{width}d} {t}{s}" for i, (t, s) in enumerate(zip(attrib["target"], suffix, strict=True))]
    first = next(iter(results.values()))
    return MultiDisclosureResult(
        keys=first.keys, Norig=first.Norig, m=run.m, ident_meas=ident_col, attrib_meas=attrib_meas,
        ident_table=ident_table, attrib_table=attrib, results=results,
    )


# ---- the shared computation -------------------------------------------------------------------
@dataclass
class _Run:
    """Inputs checked, keys in data order, and the value counts every coder is built from."""

    inputs: Inputs
    keys: tuple[str, ...]
    stats: list
    n_blocks: int | None

    @classmethod
    def start(cls, original: Any, synthetic: Any, keys: Sequence[str], targets: Sequence[str],
              schema: Schema | None, n_blocks: int | None, engine: Engine) -> _Run:
        if n_blocks is not None and (isinstance(n_blocks, bool) or not isinstance(n_blocks, int) or n_blocks < 1):
            raise ParameterError(f"n_blocks must be a whole number >= 1, got {n_blocks!r}")
        t0 = time.perf_counter()
        inputs = prepare_inputs(original, synthetic, [*keys, *targets], schema, engine)
        data_order = tuple(c for c in inputs.columns if c in keys)
        stats = gather_stats(inputs, [*keys, *targets])
        if engine == "auto" and max(s[keys[0]].n for s in stats) <= IN_MEMORY_ROWS:
            inputs = inputs.in_memory()  # the Dask overhead would dominate
        log.debug("inputs and value counts (%s): %.2f s", "dask" if inputs.lazy else "pandas", time.perf_counter() - t0)
        return cls(inputs, data_order, stats, n_blocks)

    @property
    def m(self) -> int:
        return len(self.inputs.synthetic)

    @property
    def schema_cont_na(self) -> dict[str, tuple[float, ...]]:
        return dict(self.inputs.schema.cont_na) if self.inputs.schema is not None else {}

    def evaluate(self, options: Sequence[DisclosureOptions]) -> list[DisclosureResult]:
        """Results for one option set per target (all with this run's keys)."""
        first = options[0]
        bad = [v for v in first.cont_na if v not in self.inputs.columns]
        if bad:
            raise ParameterError(f"cont_na: variable(s) {bad} are not in the original data")
        key_coders = build_coders(self.stats, self.keys, first.ngroups_keys, first.cont_na, first.style)
        target_coders = {
            o.target: build_coders(self.stats, [o.target], {o.target: o.ngroups_target}, o.cont_na, o.style)[o.target]
            for o in options
        }
        coders = {**key_coders, **target_coders}
        plans = [_plan(o, i, self.keys, coders, self._has_missing_label(o.target)) for i, o in enumerate(options)]
        summaries = self._summaries(coders, plans, [o.target for o in options])
        return [build_result(s, self.m, self.keys, coders, o) for s, o in zip(summaries, options, strict=True)]

    def _has_missing_label(self, target: str) -> bool:
        """Whether the original has a record whose target category is "Missing"."""
        st = self.stats[0][target]
        return st.n_missing > 0 or int(st.counts.get(MISSING, 0)) > 0

    def _summaries(self, coders: dict[str, Coder], plans: Sequence[KernelPlan], targets: Sequence[str]) -> list[dict]:
        frames = self.inputs.frames
        layout = (self.keys, tuple(coders[k].size for k in self.keys), tuple(targets),
                  tuple(coders[t].size for t in targets))
        if not self.inputs.lazy:
            counts = [count_records(f, coders, *layout) for f in frames]
            return [combine([block_summary(*counts, plan=p)]) for p in plans]
        meta = cell_counts_meta(encoded_meta(coders), self.keys, len(targets))
        t0 = time.perf_counter()
        counts = [f.map_partitions(count_records, coders, *layout, meta=meta) for f in frames]
        # blocks are sized by cells, not records, so a block's memory is bounded by CELLS_PER_BLOCK;
        # the cells of a target are at most its records and at most its possible cells
        space = math.prod(layout[1])
        bound = sum(min(st[self.keys[0]].n, space * size) for st in self.stats for size in layout[3])
        n_blocks = self.n_blocks or 1
        if self.n_blocks is None and bound > CELLS_PER_BLOCK:  # count them
            counts = list(dask.persist(*counts))
            n_cells = sum(dask.compute(*[c.map_partitions(len).sum() for c in counts]))
            n_blocks = max(1, math.ceil(n_cells / CELLS_PER_BLOCK))
        counts = [c.repartition(npartitions=min(c.npartitions, n_blocks)) for c in counts]
        blocks = KeyBlocks(list(self.keys), n_blocks)
        if n_blocks == 1:  # one block holds every key group: nothing to shuffle
            aligned = AlignedBlocks(blocks, counts[0], counts[1:])
        else:  # the cell counts, not the records, are shuffled: equal key codes meet in one block
            # (cell tables are moderate: the task-based shuffle costs less than p2p's disk round trip)
            with dask.config.set({"dataframe.shuffle.method": "tasks"}):
                aligned = blocks.partition(counts[0], counts[1:])
        if len(plans) > 1:
            aligned = aligned.persist()  # shared by every target
        computed = dask.compute(*[aligned.map(block_summary, summary_meta(), plan=p) for p in plans])
        log.debug("cell counts, %d key blocks, %d target(s): %.2f s", n_blocks, len(plans), time.perf_counter() - t0)
        return [combine([c]) for c in computed]


def count_records(frame: pd.DataFrame, coders: Mapping[str, Coder], keys: tuple[str, ...],
                  key_sizes: tuple[int, ...], targets: tuple[str, ...], target_sizes: tuple[int, ...]) -> pd.DataFrame:
    """Cell counts of one partition of records (codes first, then a hash group-by)."""
    return cell_counts(encode_frame(frame, coders), keys, key_sizes, targets, target_sizes)


def _plan(
    options: DisclosureOptions, index: int, keys: Sequence[str], coders: Mapping[str, Coder], missing_in_gt: bool
) -> KernelPlan:
    """Translate the options into codes, checking every level they name (spec §8).

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
                          stacklevel=4)
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


__all__ = ["disclosure", "multi_disclosure"]
