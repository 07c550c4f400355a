"""``utility_gen``: propensity-score utility (synthpop 1.9-2 ``utility.gen``, spec §2).

Each synthetic set is stacked above the original (``t = 1`` / ``t = 0``), a propensity model
(logit or rpart-compatible CART) predicts ``t``, and the scores give pMSE, SPECKS, PO50 and U.
``S_pMSE`` (the pMSE ratio) divides pMSE by its null expectation: analytic for logit,
permutation or pairs-of-syntheses resampling otherwise.

Execution (the executor's policy decides where the data are):

* data in memory, or CART, or ``aggregate``: each model fit (per synthetic set, per null
  resample, per pair) runs in memory, as one task per fit on a cluster
  (:meth:`~pipeline.evaluation.execution.Executor.map_tasks`);
* data on the cluster with ``method="logit"``: every IRLS pass is a kernel per partition and
  an exact combine (:meth:`~pipeline.evaluation.execution.Executor.map_combine`), and the
  passes of all fits (sets and resamples) are computed together, round by round.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from pipeline import notices
from pipeline.errors import ParameterError
from pipeline.evaluation.base import Result, Row
from pipeline.evaluation.data import EvalData
from pipeline.evaluation.execution import Executor
from pipeline.evaluation.public import LevelCounts
from pipeline.rmodels.design import Design, Predictor, n_params
from pipeline.rmodels.glm import (
    IRLS,
    LABEL,
    CodedRecords,
    LogitFit,
    ModelSpec,
    combine_passes,
    logit_pass,
    null_deviance,
    single_threaded_blas,
)
from pipeline.rmodels.rpart import fit_rpart
from pipeline.utility.params import UtilityGenParams, check_incomplete, compared_variables
from pipeline.utility.prepare import GenPlan, build_plan
from pipeline.utility.scores import (
    ScoreSummary,
    ScoreTable,
    propensity_stats,
    rank_bucket,
    score_statistics,
    separated_records,
)

GEN_STATS = ("pMSE", "S_pMSE", "pMSEExp", "df", "SPECKS", "S_SPECKS", "PO50", "S_PO50", "U", "S_U")


# ---------------------------------------------------------------------------------------------
# comparisons and models
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Comparison:
    """One propensity model: data set ``a`` labelled synthetic against ``b`` labelled original.

    Data sets are numbered 0 (original) and 1..m (synthetic).  ``labels`` replaces the
    labels by a seeded random relabelling (permutation null).
    """

    kind: str  # "main", "perm" or "pair"
    a: int
    b: int
    labels: tuple | None = None


@dataclass(frozen=True)
class ModelSettings:
    method: str
    maxorder: int
    cp: float
    minbucket: int
    minsplit: int | None
    maxdepth: int
    maxit: int
    k_syn: bool
    aggregate: bool
    compress: bool = True


def _predictors(plan: GenPlan, a: int, b: int) -> tuple[list[Predictor], list[np.ndarray | None]]:
    preds, lookups = [], []
    for col in plan.columns:
        if col.is_factor:
            levels, lookup, ordered = plan.stacked_levels(col, a, b)
            preds.append(Predictor(col.name, levels, ordered))
            lookups.append(lookup)
        else:
            preds.append(Predictor(col.name))
            lookups.append(None)
    return preds, lookups


def model_spec(plan: GenPlan, a: int, b: int, maxorder: int) -> ModelSpec:
    preds, lookups = _predictors(plan, a, b)
    return ModelSpec(Design.build(preds, maxorder), tuple(plan.names), tuple(lookups))


def _stack(prep_a: pd.DataFrame, prep_b: pd.DataFrame) -> pd.DataFrame:
    t = np.concatenate([np.ones(len(prep_a)), np.zeros(len(prep_b))])
    out = pd.concat([prep_a, prep_b], ignore_index=True)
    out[LABEL] = t
    return out


def _draw_labels(spec: tuple, n: int, t: np.ndarray) -> np.ndarray:
    rng = np.random.default_rng(spec[1])
    if spec[0] == "perm":
        return rng.permutation(t)
    return rng.integers(0, 2, size=n).astype(float)


def _stack_coded(a: CodedRecords, b: CodedRecords, comp: Comparison, settings: ModelSettings) -> CodedRecords:
    """The records of ``a`` (labelled 1) above those of ``b`` (0), relabelled, merged or aggregated."""
    t = np.concatenate([np.ones(len(a)), np.zeros(len(b))])
    if comp.labels is not None:
        t = _draw_labels(comp.labels, len(t), t)
    rec = CodedRecords.concat([a, b]).with_labels(t)
    if settings.aggregate:
        # synthpop's aggregate = TRUE: the distinct records, their counts as prior weights
        merged = rec.compressed(max_ratio=1.0)
        return CodedRecords(merged.codes, merged.values, merged.y, None, merged.freq)
    return rec.compressed() if settings.compress else rec


def fit_comparison_local(
    plan: GenPlan,
    prep_a: pd.DataFrame | CodedRecords,
    prep_b: pd.DataFrame | CodedRecords,
    comp: Comparison,
    settings: ModelSettings,
) -> dict[str, Any]:
    """Fit one propensity model in memory and return its statistics and model summary.

    ``prep_a`` and ``prep_b`` are the data sets as :meth:`GenPlan.coded` (logit) or
    :meth:`GenPlan.encode` (CART) give them.
    """
    n_a, n_total = len(prep_a), len(prep_a) + len(prep_b)
    c = 0.5 if settings.k_syn else n_a / n_total
    if settings.method == "logit":
        spec = model_spec(plan, comp.a, comp.b, settings.maxorder)
        rec = _stack_coded(prep_a, prep_b, comp, settings)
        state = IRLS(spec.design.n_columns, maxit=settings.maxit)
        mu = np.empty(len(rec))
        with single_threaded_blas():
            while True:
                mode, beta, kept = state.request()
                res = logit_pass(rec, spec, mode, beta, kept, mu_out=mu)
                if mode == "scores":
                    break
                state.feed(res)
                if state.finished and "mu" in res:  # the pass that ended the iteration scored its coefficients
                    break
        w = res["w"] if res["w"] is not None else np.ones(len(res["mu"]))
        w1 = float(np.sum(w[res["y"] == 1]))
        fit = _logit_fit(spec, state, res["dev"], null_deviance(w1, float(np.sum(w)) - w1), res["mu_min"],
                         res["mu_max"])  # fmt: skip
        stats = propensity_stats(res["mu"], res["y"], c, res["w"])
        return {"stats": stats, "fit": fit, "n": n_total}
    stacked = _stack(prep_a, prep_b)
    if comp.labels is not None:
        stacked[LABEL] = _draw_labels(comp.labels, n_total, stacked[LABEL].to_numpy())
    x, ncat = _tree_matrix(plan, stacked, comp.a, comp.b)
    tree = fit_rpart(
        x,
        ncat,
        stacked[LABEL].to_numpy(dtype=np.int64),
        cp=settings.cp,
        minbucket=settings.minbucket,
        minsplit=settings.minsplit,
        maxdepth=settings.maxdepth,
    )
    stats = propensity_stats(tree.prob, stacked[LABEL].to_numpy(), c)
    return {"stats": stats, "fit": {"n_nodes": tree.n_nodes, "n_leaves": tree.n_leaves}, "n": n_total}


def _tree_matrix(plan: GenPlan, stacked: pd.DataFrame, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
    preds, lookups = _predictors(plan, a, b)
    cols, ncat = [], []
    for p, lookup in zip(preds, lookups, strict=True):
        values = stacked[p.name].to_numpy()
        if lookup is None:
            cols.append(values.astype(float))
            ncat.append(0)
        else:
            codes = lookup[values] + 1  # rpart codes factor levels 1..K
            cols.append(codes.astype(float))
            ncat.append(0 if p.ordered else len(p.levels or ()))
    return np.column_stack(cols), np.asarray(ncat, dtype=np.int64)


def _logit_fit(spec: ModelSpec, state: IRLS, dev: float, null_dev: float, mu_min: float, mu_max: float) -> LogitFit:
    # R warns only within 10 * eps of 0 or 1; after R's convergence rule a separated model stops
    # around |eta| ~ 25, so any probability within 1e-8 of 0 or 1 is reported as separation
    extreme = 1e-8
    return LogitFit(
        names=spec.design.names,
        coefficients=state.coefficients(),
        deviance=float(dev),
        null_deviance=null_dev,
        iter=state.iteration,
        converged=state.converged,
        rank=len(state.kept),
        fitted_extreme=bool(mu_max > 1 - extreme or mu_min < extreme),
        diverging=state.diverging,
        terms=_term_of_columns(spec),
    )


def _term_of_columns(spec: ModelSpec) -> tuple[str, ...]:
    """The term (its variables joined by ``:``) of every column of the model matrix."""
    design = spec.design
    terms = ["(Intercept)"] * design.n_columns
    for term, (start, stop) in zip(design.terms, design.blocks, strict=True):
        terms[start:stop] = [":".join(design.predictors[i].name for i in term)] * (stop - start)
    return tuple(terms)


# ---------------------------------------------------------------------------------------------
# data on the cluster: IRLS passes as kernels per partition, all fits sharing rounds
# ---------------------------------------------------------------------------------------------
def _partition_labels(comp: Comparison, lengths: np.ndarray, n_a: int) -> list[tuple | None]:
    if comp.labels is None:
        return [None] * len(lengths)
    kind, seed = comp.labels
    children = seed.spawn(len(lengths) + 1)
    if kind == "bernoulli":
        return [("bernoulli", child) for child in children[1:]]
    # a uniformly random permutation of the labels: how many ones fall in each partition is
    # multivariate hypergeometric, which ones within a partition is a uniform choice
    ones = np.random.default_rng(children[0]).multivariate_hypergeometric(lengths, n_a)
    return [("perm", child, int(k)) for child, k in zip(children[1:], ones, strict=True)]


def _coded_part(part: pd.DataFrame, plan: GenPlan, compress: bool) -> CodedRecords:
    """One partition of a data set, coded for the logit kernels, its identical records optionally merged."""
    rec = plan.coded(part)
    return rec.compressed() if compress else rec


def _labelled_pass(
    part: CodedRecords, label_spec: Any, spec: ModelSpec, mode: str, beta: np.ndarray | None, kept: np.ndarray | None
) -> dict[str, Any]:
    """:func:`~pipeline.rmodels.glm.logit_pass` with the partition's labels first (its per-partition argument)."""
    return logit_pass(part, spec, mode, beta, kept, label_spec)


def _score_part(
    part: CodedRecords, label_spec: Any, spec: ModelSpec, beta: np.ndarray, kept: np.ndarray, c: float
) -> tuple[ScoreTable, float]:
    """The scores of a partition grouped by value (kept on its worker) and its deviance."""
    res = logit_pass(part, spec, "scores", beta, kept, label_spec)
    return ScoreTable.from_scores(res["mu"], res["y"], c, res["w"]), res["dev"]


def _summarise(part: tuple[ScoreTable, float], c: float) -> tuple[ScoreSummary, float, tuple[float, float]]:
    return ScoreSummary.of([part[0]]), part[1], separated_records(part[0], c)


def _merge_summaries(
    parts: Sequence[tuple[ScoreSummary, float, tuple[float, float]]],
) -> tuple[ScoreSummary, float, tuple[float, float]]:
    separated = (float(np.sum([p[2][0] for p in parts])), float(np.sum([p[2][1] for p in parts])))
    return ScoreSummary.merge([p[0] for p in parts]), float(np.sum([p[1] for p in parts])), separated


def _bucket_of(part: tuple[ScoreTable, float], splitters: np.ndarray, b: int) -> ScoreTable:
    return part[0].bucket(splitters, b)


#: records per bucket when the scores are ranked on the workers
BUCKET_RECORDS = 2_000_000


@dataclass
class _RoundsFit:
    """One logit fit driven round by round: its partitions, labels, design and IRLS state."""

    comp: Comparison
    parts: list[Any]
    labels: list[tuple]
    spec: ModelSpec
    state: IRLS
    n_a: int
    n: int


def fit_comparisons_by_rounds(
    plan: GenPlan, data: EvalData, comps: Sequence[Comparison], settings: ModelSettings, executor: Executor
) -> list[dict[str, Any]]:
    """Logit fits of several comparisons on partitioned data, their IRLS passes computed together.

    Every data set is coded once per partition (identical records merged per partition unless
    labels are redrawn) and kept on the cluster; a comparison reads the partitions of set
    ``a`` labelled 1 and those of set ``b`` labelled 0.  Each round asks every unfinished fit
    for its next pass and computes all of them in one go.  The scores never leave the
    workers: the last pass groups them by value per partition, and SPECKS and U are ranked per
    bucket of scores on the workers (:mod:`pipeline.utility.scores`).
    """
    raw = [executor.partitions(f) for f in data.frames]
    coded: dict[tuple[int, bool], list[Any]] = {}
    for comp in comps:
        for j in (comp.a, comp.b):
            key = (j, comp.labels is None and settings.compress)
            if key not in coded:
                coded[key] = executor.map_partitions(raw[j], _coded_part, None, plan, key[1])
    perm_sets = sorted({j for c in comps if c.labels is not None for j in (c.a, c.b)})
    lengths = dict(zip(perm_sets, executor.compute(*[executor.map_combine(coded[(j, False)], len, list)
                                                      for j in perm_sets]), strict=True))  # fmt: skip
    fits = []
    for comp in comps:
        merge = comp.labels is None and settings.compress
        parts = coded[(comp.a, merge)] + coded[(comp.b, merge)]
        n_a, n = plan.n_rows[comp.a], plan.n_rows[comp.a] + plan.n_rows[comp.b]
        if comp.labels is None:
            labels = [(1.0,)] * len(coded[(comp.a, merge)]) + [(0.0,)] * len(coded[(comp.b, merge)])
        else:
            part_lengths = np.asarray(list(lengths[comp.a]) + list(lengths[comp.b]), dtype=np.int64)
            labels = [(lab,) for lab in _partition_labels(comp, part_lengths, n_a)]
        spec = model_spec(plan, comp.a, comp.b, settings.maxorder)
        fits.append(_RoundsFit(comp, parts, labels, spec, IRLS(spec.design.n_columns, maxit=settings.maxit), n_a, n))
    while active := [f for f in fits if not f.state.finished]:
        requests = [f.state.request() for f in active]
        rounds = [
            executor.map_combine(f.parts, _labelled_pass, combine_passes, f.labels, f.spec, *request)
            for f, request in zip(active, requests, strict=True)
        ]
        with single_threaded_blas():
            for f, res in zip(active, executor.compute(*rounds), strict=True):
                f.state.feed(res)
    return _score_by_buckets(fits, settings, executor)


def _score_by_buckets(fits: Sequence[_RoundsFit], settings: ModelSettings, executor: Executor) -> list[dict[str, Any]]:
    """Statistics of the converged fits: scores grouped per partition, ranked per bucket of scores."""
    cs = [0.5 if settings.k_syn else f.n_a / f.n for f in fits]
    tables = [
        executor.map_partitions(f.parts, _score_part, f.labels, f.spec, f.state.beta, f.state.kept, c)
        for f, c in zip(fits, cs, strict=True)
    ]
    summaries = executor.compute(
        *[executor.map_combine(t, _summarise, _merge_summaries, None, c) for t, c in zip(tables, cs, strict=True)]
    )
    jobs, splits = [], []
    for f, t, (summary, _, _) in zip(fits, tables, summaries, strict=True):
        split = summary.splitters(min(len(f.parts), max(1, round(f.n / BUCKET_RECORDS))))
        rank = partial(rank_bucket, nx=summary.nx, ny=summary.ny)
        jobs += [executor.map_combine(t, _bucket_of, rank, None, split, b) for b in range(len(split) + 1)]
        splits.append(len(split) + 1)
    ranked = iter(executor.compute(*jobs))
    out = []
    for f, (summary, dev, (separated, separated_sq)), k in zip(fits, summaries, splits, strict=True):
        buckets = [next(ranked) for _ in range(k)]
        fit = _logit_fit(f.spec, f.state, dev, null_deviance(summary.nx, summary.ny), summary.lo, summary.hi)
        stats = {
            **score_statistics(summary, buckets),
            "separated": separated,
            "separated_sq": separated_sq,
            "total": summary.total,
        }
        out.append({"stats": stats, "fit": fit, "n": f.n})
    return out


def _fit_in_memory(
    plan: GenPlan, prepared: Sequence[pd.DataFrame | CodedRecords], settings: ModelSettings, comp: Comparison
) -> dict[str, Any]:
    return fit_comparison_local(plan, prepared[comp.a], prepared[comp.b], comp, settings)


# ---------------------------------------------------------------------------------------------
# result
# ---------------------------------------------------------------------------------------------
#: a separation is flagged when its records alone raise S_pMSE by at least this much
SEPARATION_SHIFT = 0.5


@dataclass(frozen=True)
class Separation:
    """What a separated logit fit of one synthetic set does to its pMSE.

    The records whose propensity score is numerically 0 or 1 are alone in cells of the design
    the other data set lacks (:func:`~pipeline.utility.scores.separated_records`). Refitting
    without those cells leaves the fitted scores of the other records where the separated fit
    puts them (the separated coefficients only move their own cells' scores), so the pMSE
    without them is the other records' mean of ``(score - c)^2``. A separation *moves* the
    pMSE when more than one record is separated and they raise S_pMSE by at least
    :data:`SEPARATION_SHIFT` (a record alone in its cell, e.g. one with a missing value the
    other set lacks, raises S_pMSE by about ``2 / df``: it is not flagged).
    """

    records: float
    terms: tuple[str, ...]
    S_pMSE: float
    S_pMSE_without: float

    @property
    def moves_pmse(self) -> bool:
        return bool(self.records > 1 and self.S_pMSE - self.S_pMSE_without >= SEPARATION_SHIFT)

    def to_dict(self) -> dict[str, Any]:
        return {
            "separated_records": float(self.records),
            "terms": list(self.terms),
            "S_pMSE_without_separated": float(self.S_pMSE_without),
            "moves_pMSE": self.moves_pmse,
        }


@dataclass(frozen=True)
class UtilityGenResult(Result):
    """Output of :func:`~pipeline.utility.api.utility_gen` (synthpop's ``utility.gen``).

    Per-set statistics are arrays of length m (set ``i`` is ``synthetic[i - 1]``):
    ``pMSE``; ``S_pMSE``, the pMSE ratio ``pMSE / pMSEExp`` (synthpop prints it as
    ``S_pMSE``); ``pMSEExp``, the null expectation of pMSE (analytic ``km1 (1-c)^2 c / N`` for
    logit, half the mean resampled pMSE for ``perm``/``pairs``); ``df`` (``km1``, logit only);
    ``SPECKS``, ``PO50`` (threshold 0.5), ``U`` and, with ``pairs``, ``S_SPECKS``,
    ``S_PO50``, ``S_U``. A logit model's ``fits`` say whether it separated the sets.
    ``not_synthesised``: the compared variables the synthesis kept (``incomplete`` when any).
    """

    method: str
    resamp_method: str | None
    maxorder: int
    vars: tuple[str, ...]
    predictors: tuple[str, ...]
    dropped: tuple[str, ...]
    incomplete: bool
    k_syn: bool
    stats: pd.DataFrame
    null_pMSE: dict[str, np.ndarray]
    nnosplits: dict[str, tuple[int, int]]
    fits: tuple[Any, ...]
    notes: tuple[str, ...] = ()
    settings: dict[str, Any] = field(default_factory=dict)
    #: the factor-like predictors' levels with their original counts (coarsened when written)
    original_levels: tuple[LevelCounts, ...] = ()
    #: per set, what its separated logit fit does to the pMSE (None: not separated)
    separations: tuple[Separation | None, ...] = ()
    #: the compared variables the synthesis kept unchanged (given, or read from a partial synthesis)
    not_synthesised: tuple[str, ...] = ()

    @property
    def m(self) -> int:
        return len(self.stats)

    def level_counts(self) -> tuple[LevelCounts, ...]:
        return self.original_levels

    def __getitem__(self, stat: str) -> np.ndarray:
        return self.stats[stat].to_numpy()

    def summary(self) -> pd.Series:
        """Means over the m syntheses (synthpop prints the means of the rounded values)."""
        return self.stats.mean()

    def rows(self) -> list[Row]:
        """Every statistic per set ("1".."m") and the means over the sets ("mean"); no inner params.

        When a logit model separates some set from the original
        (:attr:`~pipeline.rmodels.glm.LogitFit.separated`; R's ``glm`` may break down on such
        sets, docs/utility.md), ``separation`` per set (1 such a set, else 0) and its "mean", the
        share of such sets."""
        rows = [Row(str(i), str(name), float(v)) for i, row in self.stats.iterrows() for name, v in row.items()]
        rows += [Row("mean", str(name), float(v)) for name, v in self.summary().items()]
        if any(s is not None for s in self.separations):
            flags = [float(s is not None and s.moves_pmse) for s in self.separations]
            rows += [Row(str(i + 1), "separation", v) for i, v in enumerate(flags)]
            rows.append(Row("mean", "separation", float(np.mean(flags))))
            for i, s in enumerate(self.separations):
                without = self.stats["S_pMSE"].iloc[i] if s is None else s.S_pMSE_without
                rows.append(Row(str(i + 1), "separated_records", 0.0 if s is None else s.records))
                rows.append(Row(str(i + 1), "S_pMSE_without_separated", float(without)))
        return rows

    def to_dict(self) -> dict[str, Any]:
        fits = []
        for f in self.fits:
            fits.append(f.to_dict() if isinstance(f, LogitFit) else dict(f))
        return {
            "measure": "utility.gen",
            "method": self.method,
            "resamp_method": self.resamp_method,
            "maxorder": self.maxorder,
            "vars": list(self.vars),
            "predictors": list(self.predictors),
            "dropped": list(self.dropped),
            "incomplete": self.incomplete,
            "not_synthesised": list(self.not_synthesised),
            "k_syn": self.k_syn,
            "m": self.m,
            "stats": {c: [float(v) for v in self.stats[c]] for c in self.stats.columns},
            "mean": {k: float(v) for k, v in self.summary().items()},
            "null_pMSE": {k: [float(x) for x in v] for k, v in self.null_pMSE.items()},
            "nnosplits": {k: list(v) for k, v in self.nnosplits.items()},
            "fits": fits,
            "notes": list(self.notes),
            "settings": self.settings,
            "separations": [None if s is None else s.to_dict() for s in self.separations],
        }


def utility_by_set(result: Any) -> pd.DataFrame:
    """Per-set ``pMSE`` and ``S_pMSE`` of a utility result, for utility–risk plots.

    Works for :class:`UtilityGenResult` and :class:`~pipeline.utility.tab.UtilityTabResult`;
    returns a frame with columns ``synthetic`` ("1".."m"), ``pMSE``, ``S_pMSE``.
    """
    stats = result.stats
    return pd.DataFrame(
        {
            "synthetic": [str(i) for i in stats.index],
            "pMSE": stats["pMSE"].to_numpy(dtype=float),
            "S_pMSE": stats["S_pMSE"].to_numpy(dtype=float),
        }
    )


# ---------------------------------------------------------------------------------------------
# the evaluation
# ---------------------------------------------------------------------------------------------
def _check_model_size(plan: GenPlan, params: UtilityGenParams, notes: list[str]) -> None:
    """synthpop's limits on the logit model: ``maxorder`` below the predictors, ``max_params``."""
    n_pred = len(plan.columns)
    if params.maxorder >= n_pred:
        raise ParameterError(
            f"utility_gen: maxorder = {params.maxorder} must be smaller than the number of predictor columns ({n_pred})"
        )
    levels = []
    for col in plan.columns:
        if col.is_factor:
            counts = plan.level_counts[0][col.name]
            has_na_level = bool(col.labels and col.labels[-1] is None)
            levels.append(int(np.sum(counts[:-1] > 0) if has_na_level else np.sum(counts > 0)) + has_na_level)
        else:
            levels.append(2)
    nparams = n_params(levels, params.maxorder)
    if nparams > params.max_params:
        raise ParameterError(
            f"utility_gen: the logit model would have {nparams} parameters, more than max_params = "
            f"{params.max_params}; select variables with vars, lower maxorder or raise max_params"
        )
    n1 = plan.n_rows[0]
    if nparams > n1 / 5:
        notes.append(f"utility_gen: a large model ({nparams} parameters) for only {n1} original records")


def _comparisons(params: UtilityGenParams, m: int) -> list[Comparison]:
    """The models to fit: each set against the original, then the null resamples."""
    comps = [Comparison("main", j, 0) for j in range(1, m + 1)]
    if params.null_method == "perm":
        kind = "bernoulli" if params.k_syn else "perm"
        children = np.random.SeedSequence(params.seed).spawn(m * params.nperms)
        comps += [
            Comparison("perm", j, 0, (kind, children[(j - 1) * params.nperms + i]))
            for j in range(1, m + 1)
            for i in range(params.nperms)
        ]
    elif params.null_method == "pairs":
        comps += [Comparison("pair", j, jj) for j in range(1, m + 1) for jj in range(j + 1, m + 1)]
    return comps


def evaluate_gen(params: UtilityGenParams, data: EvalData, executor: Executor) -> UtilityGenResult:
    """Propensity-score utility of the synthetic sets of ``data`` (``cont_na`` merged into its schema).

    One pass over every data set for the preparation plan, then the model fits: in memory
    (one task per fit on a cluster) for data in memory, CART and ``aggregate``; else logit
    fits by rounds of IRLS passes over the partitions.
    """
    names = compared_variables(params.vars, data)
    kept = data.kept(names, params.not_synthesised)
    check_incomplete(params, names, kept, data.m)
    # from here on the kept variables are known: synthpop's default resampling follows them
    params = params.model_copy(update={"not_synthesised": kept})
    cna = {k: v for k, v in data.schema.cont_na.items() if k in names}
    data = executor.prepare(data.select(names))
    plan = build_plan(data, executor, names, params.ngroups, cna)
    notes = list(plan.notes)
    if params.method == "logit":
        _check_model_size(plan, params, notes)
    settings = _settings(params)
    comps = _comparisons(params, data.m)
    if executor.is_lazy(data) and params.method == "logit" and not params.aggregate:
        results = fit_comparisons_by_rounds(plan, data, comps, settings, executor)
    else:
        code = plan.coded if params.method == "logit" else plan.encode
        prepared = [code(f) for f in executor.collect(data).frames]
        results = executor.map_tasks(_fit_in_memory, [(c,) for c in comps], (plan, prepared, settings))
    return _assemble(plan, comps, results, params, notes)


def _separations(
    separated: dict[int, tuple[LogitFit, float, float, float]], cols: dict[str, np.ndarray], m: int, notes: list[str]
) -> tuple[Separation | None, ...]:
    """Per set, the :class:`Separation` of its separated fit, and a note for each that moves the pMSE."""
    out: list[Separation | None] = [None] * m
    for j, (fit, records, records_sq, total) in separated.items():
        pmse, expected = cols["pMSE"][j], cols["pMSEExp"][j]
        rest = total - records
        without = (pmse * total - records_sq) / rest if rest > 0 else 0.0
        with np.errstate(divide="ignore", invalid="ignore"):  # no null expectation: S_pMSE NaN, no flag
            sep = Separation(records, tuple(fit.separating_terms()), float(pmse / expected), float(without / expected))
        out[j] = sep
        if sep.moves_pmse:
            notes.append(
                f"utility_gen: the logit model separates synthetic set {j + 1} from the original on the term(s) "
                f"{', '.join(sep.terms)}: {records:.0f} records are alone in cells of the design the other data set "
                f"lacks; without them S_pMSE would be {sep.S_pMSE_without:.3g} instead of {sep.S_pMSE:.3g} "
                "(the row 'separation' is 1; R's glm may break down on such a set)"
            )
    return tuple(out)


def _km1(fit: LogitFit, incomplete: bool, synthesised: Sequence[str], k_syn: bool) -> int:
    if not incomplete:
        km1 = fit.rank - 1
    else:
        # synthpop: coefficients whose name contains (regex) a synthesised variable's name
        patterns = [re.compile(re.escape(v)) for v in synthesised]
        km1 = sum(1 for name in fit.names if any(p.search(name) for p in patterns))
    return km1 + (1 if k_syn else 0)


def _settings(params: UtilityGenParams) -> ModelSettings:
    """The model settings every fit of ``params`` uses."""
    return ModelSettings(
        params.method, params.maxorder, params.cp, params.minbucket, params.minsplit, params.maxdepth, params.maxit,
        params.k_syn, params.aggregate, params.compress,
    )  # fmt: skip


@dataclass
class _SetStatistics:
    """The per-set statistics being assembled: :data:`GEN_STATS` columns (length m), the fits,
    and the separated logit fits by set (with their separated records' counts)."""

    cols: dict[str, np.ndarray]
    fits: list[Any]
    separated: dict[int, tuple[LogitFit, float, float, float]]


def _main_statistics(plan: GenPlan, main: list[dict], params: UtilityGenParams, notes: list[str]) -> _SetStatistics:
    """Each set's statistics against the original; for a logit model its degrees of freedom, the
    analytic null expectation (no resampling), a note when it did not converge."""
    m = len(main)
    cols = {k: np.full(m, np.nan) for k in GEN_STATS}
    unsyn = params.not_synthesised or []
    synthesised = [v for v in plan.vars if v not in unsyn]
    out = _SetStatistics(cols, [], {})
    for j, res in enumerate(main):
        st = res["stats"]
        for k in ("pMSE", "SPECKS", "PO50", "U"):
            cols[k][j] = st[k]
        n_total = res["n"]
        c = 0.5 if params.k_syn else plan.n_rows[j + 1] / n_total
        fit = res["fit"]
        out.fits.append(fit)
        if isinstance(fit, LogitFit):
            km1 = _km1(fit, bool(unsyn), synthesised, params.k_syn)
            cols["df"][j] = km1
            if params.null_method is None:
                cols["pMSEExp"][j] = km1 * (1 - c) ** 2 * c / n_total
            if not fit.converged:
                notes.append(
                    f"utility_gen: the logit model of synthetic set {j + 1} did not converge in {fit.iter} "
                    "iterations (raise maxit)"
                )
            if fit.separated:
                out.separated[j] = (fit, st["separated"], st["separated_sq"], st["total"])
    return out


def _resampled_null(
    cols: dict[str, np.ndarray], comps: list[Comparison], results: list[dict], method: str | None, notes: list[str]
) -> tuple[dict[str, np.ndarray], dict[str, tuple[int, int]]]:
    """The resampled null (``perm``: per set; ``pairs``: the pairs of sets) into ``cols``'s
    ``pMSEExp`` (and the pairs' standardised scores); the null pMSEs and the counts of resamples
    without a split."""
    m = len(cols["pMSE"])
    null_pmse: dict[str, np.ndarray] = {}
    nnosplits: dict[str, tuple[int, int]] = {}
    if method == "perm":
        for j in range(1, m + 1):
            perms = np.asarray([r["stats"]["pMSE"] for c, r in zip(comps, results, strict=True)
                                if c.kind == "perm" and c.a == j])  # fmt: skip
            sims = perms / 2  # synthpop halves each permutation pMSE
            null_pmse[str(j)] = perms
            nnosplits[str(j)] = (int(np.sum(sims < 1e-8)), len(sims))
            cols["pMSEExp"][j - 1] = float(np.mean(sims))
    elif method == "pairs" and m == 1:
        # synthpop's default for an incomplete synthesis; with one set there is no pair: S_pMSE NA
        notes.append(
            "utility_gen: an incomplete synthesis with one synthetic set has no pair for the null: S_pMSE is NaN"
        )
    elif method == "pairs":
        pairs = [r["stats"] for c, r in zip(comps, results, strict=True) if c.kind == "pair"]
        pm = np.array([p["pMSE"] for p in pairs])
        null_pmse["pairs"] = pm
        nnosplits["pairs"] = (int(np.sum(pm < 1e-8)), len(pm))
        cols["pMSEExp"][:] = float(np.mean(pm)) / 2
        for k in ("SPECKS", "PO50", "U"):
            # synthpop 1.9-2 divides S_PO50 by the pairs' SPECKS; we use the pairs' PO50 (spec §5.3.5)
            mean_pair = float(np.mean([p[k] for p in pairs]))
            cols[f"S_{k}"] = 2 * cols[k] / mean_pair
        if len(pm) < 6:
            notes.append(f"utility_gen: only {len(pm)} pair(s) of syntheses for the null; m >= 4 is suggested")
    return null_pmse, nnosplits


def _original_levels(plan: GenPlan) -> tuple[LevelCounts, ...]:
    """The factor-like predictors' levels with their original counts (coarsened when written)."""
    return tuple(
        LevelCounts(
            c.source,
            tuple(c.labels or ()),
            tuple(plan.level_counts[0][c.name].tolist()),
            c.binning.breaks if c.role == "binned" else None,
        )
        for c in plan.columns
        if c.is_factor
    )


def _assemble(
    plan: GenPlan, comps: list[Comparison], results: list[dict], params: UtilityGenParams, notes: list[str]
) -> UtilityGenResult:
    """The result of the fits ``results`` of the comparisons ``comps``: each set's statistics, the
    null expectation (analytic or resampled), the standardised pMSE, the separations; the
    ``notes`` told as warnings."""
    main = [r for c, r in zip(comps, results, strict=True) if c.kind == "main"]
    sets = _main_statistics(plan, main, params, notes)
    cols, method = sets.cols, params.null_method
    null_pmse, nnosplits = _resampled_null(cols, comps, results, method, notes)
    if method != "none":
        with np.errstate(divide="ignore", invalid="ignore"):
            cols["S_pMSE"] = cols["pMSE"] / cols["pMSEExp"]
    separations = _separations(sets.separated, cols, len(main), notes)
    stats = pd.DataFrame(cols, index=pd.Index(range(1, len(main) + 1), name="synthetic"))
    for n in notes:
        notices.warn(n, stacklevel=3)
    return UtilityGenResult(
        method=params.method,
        resamp_method=method,
        maxorder=params.maxorder,
        vars=plan.vars,
        predictors=tuple(plan.names),
        dropped=plan.dropped,
        incomplete=bool(params.not_synthesised),
        not_synthesised=tuple(params.not_synthesised or ()),
        k_syn=params.k_syn,
        stats=stats,
        null_pMSE=null_pmse,
        nnosplits=nnosplits,
        fits=tuple(sets.fits),
        notes=tuple(notes),
        separations=separations,
        original_levels=_original_levels(plan),
        settings={
            "cp": params.cp,
            "minbucket": params.minbucket,
            "minsplit": params.minsplit,
            "maxdepth": params.maxdepth,
            "maxit": params.maxit,
            "aggregate": params.aggregate,
            "nperms": params.nperms if method == "perm" else None,
            "seed": params.seed,
        },
    )
