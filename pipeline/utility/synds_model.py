"""Model data and propensity fits of synthpop 1.2-1's ``utility.synds`` (one comparison, one method).

A comparison stacks the data sets labelled ``t = 0`` (the original, or a synthetic set in the
pairwise null) above those labelled ``t = 1`` and fits one propensity model.  The model data
follow 1.2-1's ``fill.NA(stacked, "zero")`` when the comparison has missing values:

* a factor with a missing value gets an explicit NA level, appended last;
* a numeric column with missing values gets them replaced by 0 and a 0/1 indicator
  ``<name>.NA``;
* column order: factors, then numerics, then the indicators;
* 1.2-1 returns the numeric columns alone when only factors have missing values (its factors
  silently leave the model).  That is reproduced only with ``r_fill_quirk``; by default the
  factors stay, with their NA level.

The fits reuse the package's R ports: the design matrix of ``glm(t ~ .^(maxorder + 1))``
(:mod:`pipeline.rmodels.design`), R's IRLS (:mod:`pipeline.rmodels.glm`, ``maxit = 25`` as in
1.2-1) and rpart (:mod:`pipeline.rmodels.rpart`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from pipeline.rmodels.design import Design, Predictor
from pipeline.rmodels.glm import FREQ, IRLS, LABEL, ModelSpec, logit_pass
from pipeline.rmodels.polyclass import MIN_POLY_RECORDS, PolyclassError, polyclass
from pipeline.rmodels.rpart import fit_rpart
from pipeline.utility.params import Kind

#: glm.control() defaults that 1.2-1 uses (R's glm, not synthpop 1.9-2's maxit = 200)
GLM_MAXIT = 25


@dataclass(frozen=True)
class Column:
    """One column of the model data: factor codes (0-based, into ``levels``) or numeric values."""

    name: str
    values: np.ndarray
    levels: tuple[str | None, ...] | None = None
    ordered: bool = False


@dataclass(frozen=True)
class FitSettings:
    """The model settings of one call (the same for every comparison)."""

    maxorder: int
    cp: float
    minbucket: int | None
    minsplit: int | None
    maxdepth: int
    r_fill_quirk: bool


def _factor_codes(values: pd.Series, levels: tuple[str, ...]) -> np.ndarray:
    if isinstance(values.dtype, pd.CategoricalDtype):
        cat = values.cat.set_categories(list(levels)) if list(values.cat.categories) != list(levels) else values
        return cat.cat.codes.to_numpy(dtype=np.int64)
    # a character column: R's as.factor, levels sorted (C collation)
    codes = pd.Categorical(values.astype("string").to_numpy(dtype=object, na_value=None), categories=list(levels))
    return np.asarray(codes.codes, dtype=np.int64)


def has_missing(frames: Sequence[pd.DataFrame], names: Sequence[str]) -> bool:
    """Whether any of ``names`` has a missing value in any of ``frames``."""
    return any(bool(f[list(names)].isna().to_numpy().any()) for f in frames)


def model_columns(stacked: pd.DataFrame, kinds: Sequence[Kind], fill: bool, r_fill_quirk: bool) -> list[Column]:
    """The columns of 1.2-1's model data for stacked records (``fill``: apply ``fill.NA``)."""
    factors: list[Column] = []
    numerics: list[Column] = []
    indicators: list[Column] = []
    in_order: list[Column] = []
    for k in kinds:
        s = stacked[k.name]
        if k.levels is not None:
            codes = _factor_codes(s, k.levels)
            levels: tuple[str | None, ...] = k.levels
            if fill and (codes < 0).any():
                codes = np.where(codes < 0, len(levels), codes)
                levels = (*levels, None)
            col = Column(k.name, codes, levels, k.ordered)
            factors.append(col)
        else:
            values = s.to_numpy(dtype=float, na_value=np.nan)
            missing = np.isnan(values)
            if fill and missing.any():
                indicators.append(Column(f"{k.name}.NA", missing.astype(float)))
                values = np.where(missing, 0.0, values)
            col = Column(k.name, values)
            numerics.append(col)
        in_order.append(col)
    if not fill:
        return in_order
    if r_fill_quirk and numerics and not indicators:
        return numerics  # 1.2-1's fill.NA: only the model matrix of the numeric columns
    return factors + numerics + indicators


def _logit(cols: Sequence[Column], t: np.ndarray, maxorder: int) -> tuple[np.ndarray, float, int]:
    """Fitted probabilities, residual deviance and rank of ``glm(t ~ .^(maxorder + 1), binomial)``."""
    preds = [Predictor(c.name, c.levels, c.ordered) if c.levels is not None else Predictor(c.name) for c in cols]
    names = [f"v{i}" for i in range(len(cols))]  # positional names: never clash with the label column
    frame = pd.DataFrame({n: c.values for n, c in zip(names, cols, strict=True)})
    frame[LABEL] = t
    # identical records (with their label) have identical scores and IRLS contributions: fit the
    # distinct ones with frequency weights when that saves at least half (exact; the sums' order only)
    group = frame.groupby(list(frame.columns), sort=False).ngroup().to_numpy()
    expand = None
    if group.max(initial=-1) + 1 <= len(frame) / 2:
        first = np.unique(group, return_index=True)[1]
        frame = frame.iloc[first].reset_index(drop=True)
        frame[FREQ] = np.bincount(group).astype(float)
        expand = group
    lookups = tuple(np.arange(len(c.levels)) if c.levels is not None else None for c in cols)
    spec = ModelSpec(Design.build(preds, maxorder), tuple(names), lookups)
    state = IRLS(spec.design.n_columns, maxit=GLM_MAXIT)
    while True:
        mode, beta, kept = state.request()
        res = logit_pass(frame, spec, mode, beta, kept)
        if mode == "scores":
            mu = res["mu"] if expand is None else res["mu"][expand]
            return mu, float(res["dev"]), len(state.kept)
        state.feed(res)


def _cart(cols: Sequence[Column], t: np.ndarray, settings: FitSettings) -> tuple[np.ndarray, int]:
    """Fitted class-1 probabilities and number of nodes of ``rpart(t ~ ., method = "class")``."""
    x = np.column_stack([c.values + 1.0 if c.levels is not None else c.values for c in cols])
    ncat = np.array([len(c.levels) if c.levels is not None and not c.ordered else 0 for c in cols], dtype=np.int64)
    tree = fit_rpart(
        x, ncat, t.astype(np.int64), cp=settings.cp, minbucket=settings.minbucket, minsplit=settings.minsplit,
        maxdepth=settings.maxdepth,
    )  # fmt: skip
    return tree.prob, tree.n_nodes


def _poly(cols: Sequence[Column], t: np.ndarray, c: float) -> tuple[np.ndarray, int, tuple[str, ...]]:
    """Class-1 probabilities, ``ndim`` and console messages of ``polyclass(t, cov, penalty = 0)``.

    Covariates as 1.2-1 passes them: factor level codes (1..K, the NA level last), numerics,
    0/1 indicators.  Where polyclass stops with an error (fewer than 25 records, one class),
    1.2-1 uses ``p = c`` for every record and DF 0.
    """
    x = np.column_stack([col.values + 1.0 if col.levels is not None else col.values for col in cols])
    if len(t) < MIN_POLY_RECORDS or len(np.unique(t)) < 2:
        return np.full(len(t), c), 0, ()
    try:
        fit = polyclass(t, x)
    except PolyclassError:
        return np.full(len(t), c), 0, ()
    return fit.prob1(x), fit.ndim, fit.messages


def fit_comparison(
    kinds: Sequence[Kind],
    settings: FitSettings,
    frames: Sequence[pd.DataFrame],
    n_original: int,
    fill: bool,
    method: str,
    want_scores: bool,
) -> dict[str, Any]:
    """One propensity fit: the first ``n_original`` frames labelled 0, the rest 1.

    Returns ``pMSE``, the deviance statistic ``stat`` (deviance / N) and its ``df``, the
    model-data columns, the fit's console ``messages`` (polyclass) and, when ``want_scores``,
    the per-record propensities.
    """
    names = [k.name for k in kinds]
    stacked = pd.concat([f[names] for f in frames], ignore_index=True)
    n0 = sum(len(f) for f in frames[:n_original])
    t = np.concatenate([np.zeros(n0), np.ones(len(stacked) - n0)])
    c = (len(stacked) - n0) / len(stacked)
    cols = model_columns(stacked, kinds, fill, settings.r_fill_quirk)
    messages: tuple[str, ...] = ()
    if method == "logit":
        p, dev, rank = _logit(cols, t, settings.maxorder)
        stat, df = dev / len(t), rank - 1
    else:
        if method == "cart":
            p, n_nodes = _cart(cols, t, settings)
            df = 2 * n_nodes - 1
        else:
            p, df, messages = _poly(cols, t, c)
        with np.errstate(divide="ignore"):
            stat = float(-2 * (np.sum(np.log(1 - p[t == 0])) + np.sum(np.log(p[t == 1]))) / len(t))
    ok = ~np.isnan(p)
    return {
        "pMSE": float(np.sum((p[ok] - c) ** 2) / len(t)),
        "stat": stat,
        "df": int(df),
        "columns": [col.name for col in cols],
        "messages": messages,
        "scores": p if want_scores else None,
    }
