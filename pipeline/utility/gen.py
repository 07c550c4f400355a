"""``utility_gen``: propensity-score utility (synthpop 1.9-2 ``utility.gen``, spec §2).

Each synthetic set is stacked above the original (``t = 1`` / ``t = 0``), a propensity model
(logit or rpart-compatible CART) predicts ``t``, and the scores give pMSE, SPECKS, PO50 and U.
``S_pMSE`` (the pMSE ratio) divides pMSE by its null expectation: analytic for logit,
permutation or pairs-of-syntheses resampling otherwise.

Execution:

* pandas input (or Dask input small enough, or CART, or ``aggregate``): the model fits run in
  memory; when a Dask client is active each fit (per synthetic set, per null resample, per
  pair) is a separate ``dask.delayed`` task;
* Dask input with ``method="logit"``: every IRLS pass is a reduction over partitions, and the
  passes of all fits (sets and resamples) share Dask rounds.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd

from pipeline.data.schema import Schema
from pipeline.errors import ParameterError
from pipeline.utility.design import Design, Predictor, n_params
from pipeline.utility.glm import (
    FREQ,
    IRLS,
    LABEL,
    WEIGHT,
    LogitFit,
    ModelSpec,
    combine_passes,
    compress_records,
    logit_pass,
    null_deviance,
)
from pipeline.utility.inputs import collect_inputs, resolve_vars
from pipeline.utility.prepare import GenPlan, build_plan
from pipeline.utility.rpart import fit_rpart
from pipeline.utility.scores import propensity_stats

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


def _aggregate(stacked: pd.DataFrame) -> pd.DataFrame:
    """Unique records with their counts in ``__w__`` (synthpop's ``aggregate = TRUE``)."""
    cols = list(stacked.columns)
    grouped = stacked.groupby(cols, sort=True, dropna=False).size()
    out = grouped.reset_index(name=WEIGHT)
    return out


def fit_comparison_local(
    plan: GenPlan,
    prep_a: pd.DataFrame,
    prep_b: pd.DataFrame,
    comp: Comparison,
    settings: ModelSettings,
) -> dict[str, Any]:
    """Fit one propensity model in memory and return its statistics and model summary."""
    stacked = _stack(prep_a, prep_b)
    n_a, n_total = len(prep_a), len(stacked)
    c = 0.5 if settings.k_syn else n_a / n_total
    if comp.labels is not None:
        stacked[LABEL] = _draw_labels(comp.labels, n_total, stacked[LABEL].to_numpy())
    if settings.method == "logit":
        spec = model_spec(plan, comp.a, comp.b, settings.maxorder)
        if settings.aggregate:
            frame = _aggregate(stacked)
        elif settings.compress:
            frame = compress_records(stacked)
        else:
            frame = stacked
        state = IRLS(spec.design.n_columns, maxit=settings.maxit)
        while True:
            mode, beta, kept = state.request()
            res = logit_pass(frame, spec, mode, beta, kept)
            if mode == "scores":
                break
            state.feed(res)
        fit = _logit_fit(spec, state, res)
        stats = propensity_stats(res["mu"], res["y"], c, res["w"])
        return {"stats": stats, "fit": fit, "n": n_total}
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


def _logit_fit(spec: ModelSpec, state: IRLS, scores: dict[str, Any]) -> LogitFit:
    w = scores["w"] if scores["w"] is not None else np.ones(len(scores["mu"]))
    # R warns only within 10 * eps of 0 or 1; after R's convergence rule a separated model stops
    # around |eta| ~ 25, so any probability within 1e-8 of 0 or 1 is reported as separation
    extreme = 1e-8
    return LogitFit(
        names=spec.design.names,
        coefficients=state.coefficients(),
        deviance=float(scores["dev"]),
        null_deviance=null_deviance(scores["y"].astype(float), w),
        iter=state.iteration,
        converged=state.converged,
        rank=len(state.kept),
        fitted_extreme=bool(scores["mu_max"] > 1 - extreme or scores["mu_min"] < extreme),
    )


# ---------------------------------------------------------------------------------------------
# Dask: IRLS passes as reductions over partitions, all fits sharing rounds
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


def fit_comparisons_dask(
    plan: GenPlan,
    prepared: Sequence[dd.DataFrame],
    comps: Sequence[Comparison],
    settings: ModelSettings,
) -> list[dict[str, Any]]:
    """Logit fits of several comparisons on Dask data, their IRLS passes computed together."""
    stacked_frames: dict[tuple[int, int, bool], dd.DataFrame] = {}
    for comp in comps:
        key = (comp.a, comp.b, comp.labels is None and settings.compress)
        if key not in stacked_frames:
            stacked = dd.concat(
                [prepared[comp.a].assign(**{LABEL: 1.0}), prepared[comp.b].assign(**{LABEL: 0.0})],
                interleave_partitions=False,
            )
            if key[2]:
                meta = stacked._meta.assign(**{FREQ: 1.0})
                stacked = stacked.map_partitions(compress_records, meta=meta, enforce_metadata=False)
            stacked_frames[key] = stacked
    keys = list(stacked_frames)
    persisted = dict(zip(keys, dask.persist(*[stacked_frames[k] for k in keys]), strict=True))
    parts_by_key = {k: v.to_delayed() for k, v in persisted.items()}
    lengths_lazy = [[dask.delayed(len)(p) for p in parts_by_key[k]] for k in keys]
    lengths = dict(zip(keys, dask.compute(*lengths_lazy), strict=True))
    states = []
    for comp in comps:
        key = (comp.a, comp.b, comp.labels is None and settings.compress)
        parts = parts_by_key[key]
        lens = np.asarray(lengths[key], dtype=np.int64)
        n_a = plan.n_rows[comp.a]
        spec = model_spec(plan, comp.a, comp.b, settings.maxorder)
        states.append(
            {
                "comp": comp,
                "parts": parts,
                "labels": _partition_labels(comp, lens, n_a),
                "spec": spec,
                "state": IRLS(spec.design.n_columns, maxit=settings.maxit),
                "scores": None,
                "n_a": n_a,
            }
        )
    while True:
        active = [s for s in states if s["scores"] is None]
        if not active:
            break
        lazy = []
        modes = []
        for job in active:
            mode, beta, kept = job["state"].request()
            modes.append(mode)
            tasks = [
                dask.delayed(logit_pass)(part, job["spec"], mode, beta, kept, lab)
                for part, lab in zip(job["parts"], job["labels"], strict=True)
            ]
            lazy.append(dask.delayed(combine_passes)(tasks))
        results = dask.compute(*lazy)
        for job, mode, res in zip(active, modes, results, strict=True):
            if mode == "scores":
                job["scores"] = res
            else:
                job["state"].feed(res)
    out = []
    for job in states:
        res = job["scores"]
        n = round(res["n"])
        c = 0.5 if settings.k_syn else job["n_a"] / n
        out.append(
            {
                "stats": propensity_stats(res["mu"], res["y"], c, res["w"]),
                "fit": _logit_fit(job["spec"], job["state"], res),
                "n": n,
            }
        )
    return out


# ---------------------------------------------------------------------------------------------
# result
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class UtilityGenResult:
    """Output of :func:`utility_gen` (synthpop's ``utility.gen``).

    Per-set statistics are arrays of length m (set ``i`` is ``synthetic[i - 1]``):
    ``pMSE``; ``S_pMSE``, the pMSE ratio ``pMSE / pMSEExp`` (synthpop prints it as
    ``S_pMSE``); ``pMSEExp``, the null expectation of pMSE (analytic ``km1 (1-c)^2 c / N`` for
    logit, half the mean resampled pMSE for ``perm``/``pairs``); ``df`` (``km1``, logit only);
    ``SPECKS``, ``PO50`` (threshold 0.5), ``U`` and, with ``pairs``, ``S_SPECKS``,
    ``S_PO50``, ``S_U``.
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

    @property
    def m(self) -> int:
        return len(self.stats)

    def __getitem__(self, stat: str) -> np.ndarray:
        return self.stats[stat].to_numpy()

    def summary(self) -> pd.Series:
        """Means over the m syntheses (synthpop prints the means of the rounded values)."""
        return self.stats.mean()

    def tidy(self) -> pd.DataFrame:
        rows = []
        for i, row in self.stats.iterrows():
            for name, value in row.items():
                rows.append((str(i), "", name, float(value)))
        for name, value in self.summary().items():
            rows.append(("mean", "", name, float(value)))
        return pd.DataFrame(rows, columns=["synthetic", "setting", "measure", "value"])

    def to_dict(self) -> dict[str, Any]:
        def js(v: float) -> float | None:
            return None if v is None or not np.isfinite(v) else float(v)

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
            "k_syn": self.k_syn,
            "m": self.m,
            "stats": {c: [js(v) for v in self.stats[c]] for c in self.stats.columns},
            "mean": {k: js(v) for k, v in self.summary().items()},
            "null_pMSE": {k: [js(x) for x in v] for k, v in self.null_pMSE.items()},
            "nnosplits": {k: list(v) for k, v in self.nnosplits.items()},
            "fits": fits,
            "notes": list(self.notes),
            "settings": self.settings,
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
# the public function
# ---------------------------------------------------------------------------------------------
def _validate(method: str, resamp_method: str | None, maxorder: int, aggregate: bool, nperms: int, **kw: Any) -> None:
    if method not in ("cart", "logit"):
        raise ParameterError(f"method must be 'cart' or 'logit', got {method!r}")
    if resamp_method not in (None, "perm", "pairs", "none"):
        raise ParameterError(f"resamp_method must be None, 'perm', 'pairs' or 'none', got {resamp_method!r}")
    if int(maxorder) < 0:
        raise ParameterError(f"maxorder must be >= 0, got {maxorder}")
    if aggregate and method != "logit":
        raise ParameterError("aggregate=True only works with method='logit'")
    if int(nperms) < 1:
        raise ParameterError(f"nperms must be >= 1, got {nperms}")
    if kw["cp"] < 0 and method == "cart":
        warnings.warn("cp < 0 keeps every split rpart finds", stacklevel=3)
    if int(kw["minbucket"]) < 1:
        raise ParameterError(f"minbucket must be >= 1, got {kw['minbucket']}")
    if int(kw["maxit"]) < 1:
        raise ParameterError(f"maxit must be >= 1, got {kw['maxit']}")
    if not 1 <= int(kw["maxdepth"]) <= 30:
        raise ParameterError(f"maxdepth must be between 1 and 30, got {kw['maxdepth']}")


def _client_active() -> bool:
    try:
        from distributed import get_client

        get_client()
        return True
    except (ImportError, ValueError):
        return False


def utility_gen(
    original: Any,
    synthetic: Any,
    method: str = "cart",
    vars: Sequence[str | int] | str | None = None,
    maxorder: int = 1,
    cont_na: Mapping[str, Any] | None = None,
    ngroups: int | None = None,
    cp: float = 1e-3,
    minbucket: int = 5,
    nperms: int = 50,
    resamp_method: str | None = None,
    k_syn: bool = False,
    aggregate: bool = False,
    maxit: int = 200,
    max_params: int = 400,
    seed: int | None = None,
    schema: Schema | None = None,
    *,
    not_synthesised: Sequence[str] | None = None,
    minsplit: int | None = None,
    maxdepth: int = 30,
    backend: str = "auto",
    max_memory_rows: int = 2_000_000,
    compress: bool = True,
) -> UtilityGenResult:
    """Propensity-score utility of synthetic data (synthpop's ``utility.gen``).

    Parameters
    ----------
    original, synthetic
        The original data and one synthetic set or a list of m sets (pandas/Dask frames or
        Datasets).
    method : {"cart", "logit"}
        Propensity model: an rpart-compatible classification tree or a logistic regression
        with all interactions up to ``maxorder + 1`` variables.
    vars : sequence of str, optional
        Variables to compare (default: all variables of the synthetic data).
    maxorder : int
        Highest interaction order beyond main effects (logit).
    cont_na : mapping, optional
        Special missing codes of numeric variables (added to the schema's).  Each code must
        occur in the original data.
    ngroups : int, optional
        Bin every numeric variable into this many quantile groups first.
    cp, minbucket, minsplit, maxdepth
        ``rpart.control`` (CART); ``minsplit`` defaults to ``3 * minbucket`` as in rpart.
    nperms : int
        Number of permutations for ``resamp_method="perm"``.
    resamp_method : {None, "perm", "pairs", "none"}
        Null distribution of pMSE.  ``None`` chooses as synthpop: ``"pairs"`` for incomplete
        syntheses, ``"perm"`` for CART, analytic for logit.
    k_syn : bool
        The synthetic sample size was itself synthesised (``c = 0.5``, one more parameter).
    aggregate : bool
        Logit: fit on the distinct records with frequency weights (in memory).
    maxit : int
        IRLS iteration limit (``glm.control(maxit)``; convergence: ``epsilon = 1e-8``).
    max_params : int
        Logit: refuse models with more parameters than this.
    seed : int, optional
        Seed of the permutation resamples.
    schema : Schema, optional
        Needed for Dask frames not wrapped in Datasets.
    not_synthesised : sequence of str, optional
        Variables copied unchanged from the original (an incomplete synthesis).
    backend : {"auto", "pandas", "dask"}
        ``auto`` fits in memory unless the input is Dask, the method logit without
        ``aggregate`` and the stacked data larger than ``max_memory_rows``.
    compress : bool
        Logit: merge identical stacked records (per partition) and weight them by their
        number.  Exact (identical records have identical contributions); it only changes
        the order of floating-point sums.  Not used for permutation resamples on Dask.
    """
    _validate(method, resamp_method, maxorder, aggregate, nperms, cp=cp, minbucket=minbucket, maxit=maxit,
              maxdepth=maxdepth)  # fmt: skip
    if backend not in ("auto", "pandas", "dask"):
        raise ParameterError(f"backend must be 'auto', 'pandas' or 'dask', got {backend!r}")
    inputs = collect_inputs(original, synthetic, schema, cont_na)
    names = resolve_vars(vars, inputs, "utility_gen")
    m = inputs.m
    cna = {k: v for k, v in inputs.schema.cont_na.items() if k in names}

    # incomplete synthesis (spec §2.2 step 3)
    unsyn = list(dict.fromkeys(not_synthesised or []))
    outside = [v for v in unsyn if v not in names]
    if outside:
        raise ParameterError(f"utility_gen: not_synthesised variable(s) {outside} are not among the compared vars")
    if unsyn and all(v in unsyn for v in names):
        raise ParameterError("utility_gen: utility cannot be measured when every compared variable is unsynthesised")
    incomplete = bool(unsyn)

    # resampling method (spec §2.6)
    if resamp_method is None:
        if incomplete:
            resamp_method = "pairs"
        elif method == "cart":
            resamp_method = "perm"
    elif resamp_method == "perm" and incomplete:
        raise ParameterError("utility_gen: an incomplete synthesis needs resamp_method='pairs'")
    elif resamp_method == "pairs" and (m == 1 or k_syn):
        raise ParameterError("utility_gen: resamp_method='pairs' needs m > 1 synthetic sets and k_syn=False")

    plan = build_plan(inputs, names, ngroups, cna)
    notes = list(plan.notes)
    n1 = plan.n_rows[0]
    if method == "logit":
        n_pred = len(plan.columns)
        if maxorder >= n_pred:
            raise ParameterError(
                f"utility_gen: maxorder = {maxorder} must be smaller than the number of predictor columns ({n_pred})"
            )
        levels = []
        for col in plan.columns:
            if col.is_factor:
                counts = plan.level_counts[0][col.name]
                has_na_level = bool(col.labels and col.labels[-1] is None)
                levels.append(int(np.sum(counts[:-1] > 0) if has_na_level else np.sum(counts > 0)) + has_na_level)
            else:
                levels.append(2)
        nparams = n_params(levels, maxorder)
        if nparams > max_params:
            raise ParameterError(
                f"utility_gen: the logit model would have {nparams} parameters, more than max_params = {max_params}; "
                "select variables with vars, lower maxorder or raise max_params"
            )
        if nparams > n1 / 5:
            notes.append(f"utility_gen: a large model ({nparams} parameters) for only {n1} original records")

    settings = ModelSettings(method, int(maxorder), float(cp), int(minbucket), minsplit, int(maxdepth), int(maxit),
                             bool(k_syn), bool(aggregate), bool(compress))  # fmt: skip
    comps = [Comparison("main", j, 0) for j in range(1, m + 1)]
    seeds = np.random.SeedSequence(seed)
    if resamp_method == "perm":
        kind = "bernoulli" if k_syn else "perm"
        children = seeds.spawn(m * nperms)
        comps += [
            Comparison("perm", j, 0, (kind, children[(j - 1) * nperms + i]))
            for j in range(1, m + 1)
            for i in range(nperms)
        ]
    elif resamp_method == "pairs":
        comps += [Comparison("pair", j, jj) for j in range(1, m + 1) for jj in range(j + 1, m + 1)]

    total_rows = sum(plan.n_rows[1:]) + m * n1
    use_dask = backend == "dask" or (
        backend == "auto" and inputs.is_dask and method == "logit" and not aggregate and total_rows > max_memory_rows
    )
    if use_dask and (method != "logit" or aggregate):
        raise ParameterError("utility_gen: the Dask backend fits logit models without aggregate only")
    results = _run(plan, inputs, comps, settings, use_dask)
    return _assemble(plan, comps, results, settings, resamp_method, incomplete, unsyn, notes, m, n1, nperms, seed)


def _run(plan: GenPlan, inputs: Any, comps: list[Comparison], settings: ModelSettings, use_dask: bool) -> list[dict]:
    frames = [inputs.original, *inputs.synthetic]
    if use_dask:
        meta = plan.encode(frames[0]._meta if isinstance(frames[0], dd.DataFrame) else frames[0].head(0))
        prepared = [
            (f if isinstance(f, dd.DataFrame) else dd.from_pandas(f, npartitions=1, sort=False)).map_partitions(
                plan.encode, meta=meta
            )
            for f in frames
        ]
        prepared = list(dask.persist(*prepared))
        return fit_comparisons_dask(plan, prepared, comps, settings)
    pandas_frames = list(dask.compute(*frames)) if any(isinstance(f, dd.DataFrame) for f in frames) else frames
    prepared = [plan.encode(f) for f in pandas_frames]
    if _client_active() and len(comps) > 1:
        shared = [dask.delayed(p, traverse=False) for p in prepared]
        plan_d = dask.delayed(plan, traverse=False)
        tasks = [dask.delayed(fit_comparison_local)(plan_d, shared[c.a], shared[c.b], c, settings) for c in comps]
        return list(dask.compute(*tasks))
    return [fit_comparison_local(plan, prepared[c.a], prepared[c.b], c, settings) for c in comps]


def _km1(fit: LogitFit, incomplete: bool, synthesised: Sequence[str], k_syn: bool) -> int:
    if not incomplete:
        km1 = fit.rank - 1
    else:
        # synthpop: coefficients whose name contains (regex) a synthesised variable's name
        patterns = [re.compile(re.escape(v)) for v in synthesised]
        km1 = sum(1 for name in fit.names if any(p.search(name) for p in patterns))
    return km1 + (1 if k_syn else 0)


def _assemble(
    plan: GenPlan,
    comps: list[Comparison],
    results: list[dict],
    settings: ModelSettings,
    resamp_method: str | None,
    incomplete: bool,
    unsyn: Sequence[str],
    notes: list[str],
    m: int,
    n1: int,
    nperms: int,
    seed: int | None,
) -> UtilityGenResult:
    main = [r for c, r in zip(comps, results, strict=True) if c.kind == "main"]
    perms = {j: [r["stats"]["pMSE"] for c, r in zip(comps, results, strict=True) if c.kind == "perm" and c.a == j]
             for j in range(1, m + 1)}  # fmt: skip
    pairs = [r["stats"] for c, r in zip(comps, results, strict=True) if c.kind == "pair"]
    cols = {k: np.full(m, np.nan) for k in GEN_STATS}
    synthesised = [v for v in plan.vars if v not in unsyn]
    fits = []
    for j, res in enumerate(main):
        st = res["stats"]
        for k in ("pMSE", "SPECKS", "PO50", "U"):
            cols[k][j] = st[k]
        n_total = res["n"]
        c = 0.5 if settings.k_syn else plan.n_rows[j + 1] / n_total
        fit = res["fit"]
        fits.append(fit)
        if isinstance(fit, LogitFit):
            km1 = _km1(fit, incomplete, synthesised, settings.k_syn)
            cols["df"][j] = km1
            if resamp_method is None:
                cols["pMSEExp"][j] = km1 * (1 - c) ** 2 * c / n_total
            if not fit.converged:
                notes.append(
                    f"utility_gen: the logit model of synthetic set {j + 1} did not converge in {fit.iter} "
                    "iterations (raise maxit)"
                )
            if fit.fitted_extreme:
                notes.append(
                    f"utility_gen: fitted probabilities numerically 0 or 1 for synthetic set {j + 1} "
                    "(complete or quasi-complete separation: the model tells the data sets apart)"
                )
    null_pmse: dict[str, np.ndarray] = {}
    nnosplits: dict[str, tuple[int, int]] = {}
    if resamp_method == "perm":
        for j in range(1, m + 1):
            sims = np.asarray(perms[j]) / 2  # synthpop halves each permutation pMSE
            null_pmse[str(j)] = np.asarray(perms[j])
            nnosplits[str(j)] = (int(np.sum(sims < 1e-8)), len(sims))
            cols["pMSEExp"][j - 1] = float(np.mean(sims))
    elif resamp_method == "pairs":
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
    if resamp_method != "none":
        with np.errstate(divide="ignore", invalid="ignore"):
            cols["S_pMSE"] = cols["pMSE"] / cols["pMSEExp"]
    stats = pd.DataFrame(cols, index=pd.Index(range(1, m + 1), name="synthetic"))
    for n in notes:
        warnings.warn(n, stacklevel=3)
    return UtilityGenResult(
        method=settings.method,
        resamp_method=resamp_method,
        maxorder=settings.maxorder,
        vars=plan.vars,
        predictors=tuple(plan.names),
        dropped=plan.dropped,
        incomplete=incomplete,
        k_syn=settings.k_syn,
        stats=stats,
        null_pMSE=null_pmse,
        nnosplits=nnosplits,
        fits=tuple(fits),
        notes=tuple(notes),
        settings={
            "cp": settings.cp,
            "minbucket": settings.minbucket,
            "minsplit": settings.minsplit,
            "maxdepth": settings.maxdepth,
            "maxit": settings.maxit,
            "aggregate": settings.aggregate,
            "nperms": nperms if resamp_method == "perm" else None,
            "seed": seed,
        },
    )
