"""Log-linear model risk estimates (sdcMicro ``modRisk``), as pure functions over a cell table.

sdcMicro builds a table of every combination of the observed values of the keys (missing
included), with per cell the records ``counts``, the weight sum ``weights`` and the sum of the
inverse weights ``inclProb``; fits the expected population count ``lambda`` of each cell with a
log-linear model of the keys' main effects, then estimates, over the observed cells with a
fitted value (``0 < counts <= bound``), with ``p = inclProb`` and ``v = (1 - p) lambda``:

* ``gr1``: the sample uniques that are population unique, ``sum_{counts = 1} exp(-v) / cells``;
* ``gr2``: their expected correct matches, ``sum_{counts = 1} (1 - exp(-v)) / v / cells``.

(Sums over all cells of ``[counts = 1] * risk``: an infinite risk of another cell makes them NaN,
and weights of 1 give ``v = 0`` and ``gr2 = NaN``, as in sdcMicro.)

Methods, as sdcMicro's:

* ``default``: Poisson GLM ``counts ~ keys``;
* ``CE``: the same with offset ``log(counts / weights + 0.1)`` (0 for empty cells);
* ``PML``: Poisson GLM of ``round(weights * n / sum(weights))`` on the keys;
* ``weightedLLM``: ``counts ~ keys + weights``;
* ``IPF``: the same model as ``default`` fitted by iterative proportional fitting of the keys'
  one-way margins (:func:`pipeline.synth.ipf.fit_ipf`), as MASS ``loglm``.

The GLMs are fitted by R's IRLS (``glm.fit``: start ``mu = y + 0.1``, stop when the relative
change of the deviance is below ``1e-8``) over the cells with no missing key; factors enter with
treatment contrasts (levels without records, whose columns are zero, are left out, as R's
pivoting does), numbers as one slope.  Cells are at most the product of the keys' observed
values: ``max_cells`` guards the table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import product

import numpy as np
import pandas as pd

from pipeline.data.schema import Schema
from pipeline.errors import ParameterError

N = "n"
W = "w"
W_INV = "w_inv"
METHODS = ("default", "CE", "PML", "weightedLLM", "IPF")
#: R's glm.control defaults
EPSILON = 1e-8
MAX_ITER = 25
MAX_CELLS = 10**6


@dataclass(frozen=True)
class ModelRisk:
    """modRisk's estimates for one method.

    Attributes
    ----------
    method : str
    gr1, gr2 : float
        Estimated sample uniques that are population unique, and their expected correct matches
        (shares of the observed cells with a fitted value; sdcMicro's ``gr1``/``gr2``).
    cells : int
        Those cells.
    converged : bool
        Whether the fit converged (IRLS or IPF).
    """

    method: str
    gr1: float
    gr2: float
    cells: int
    converged: bool


def model_table(cells: pd.DataFrame, keys: Sequence[str], max_cells: int = MAX_CELLS) -> pd.DataFrame:
    """Every combination of the keys' observed values (missing included), sorted with missing
    first as data.table sorts, with ``counts``, ``weights`` and ``inclProb`` (0 where unobserved).

    Raises
    ------
    ParameterError
        More than ``max_cells`` combinations.
    """
    keys = list(keys)
    observed = [np.unique(cells[k].to_numpy(dtype=float)) for k in keys]  # NaN sorts last
    observed = [np.concatenate([v[np.isnan(v)][:1], v[~np.isnan(v)]]) for v in observed]
    size = int(np.prod([len(v) for v in observed], dtype=float))
    if size > max_cells:
        raise ParameterError(
            f"modRisk: the table of the keys' observed values has {size:,} cells, more than {max_cells:,}"
        )
    grid = pd.DataFrame(list(product(*observed)), columns=keys) if keys else pd.DataFrame()
    # merged on columns: pandas matches missing with missing there (not on an index with NaN levels)
    sums = cells.groupby(keys, dropna=False, sort=False)[[N, W, W_INV]].sum().reset_index()
    got = grid.merge(sums, on=keys, how="left", sort=False).fillna({N: 0.0, W: 0.0, W_INV: 0.0})
    return got.rename(columns={N: "counts", W: "weights", W_INV: "inclProb"}).reset_index(drop=True)


def _design(table: pd.DataFrame, keys: Sequence[str], schema: Schema) -> np.ndarray:
    """Treatment-contrast design of the keys' main effects (zero columns left out)."""
    columns = [np.ones(len(table))]
    for k in keys:
        x = table[k].to_numpy(dtype=float)
        if schema[k].is_factor:
            n_levels = len(schema[k].levels or ())
            columns += [(x == level).astype(float) for level in range(2, n_levels + 1)]
        else:
            columns.append(x)
    design = np.column_stack(columns)
    return design[:, np.any(design != 0, axis=0) | (np.arange(design.shape[1]) == 0)]


def _deviance(y: np.ndarray, mu: np.ndarray) -> float:
    with np.errstate(divide="ignore", invalid="ignore"):
        ylogy = np.where(y > 0, y * np.log(y / mu), 0.0)
    return float(np.sum(2.0 * (ylogy - (y - mu))))


def poisson_irls(design: np.ndarray, y: np.ndarray, offset: np.ndarray | None = None) -> tuple[np.ndarray, bool]:
    """Fitted means of a Poisson log-linear GLM by R's ``glm.fit`` iteration; and whether it converged."""
    offset = np.zeros(len(y)) if offset is None else offset
    tiny = np.finfo(float).eps
    mu = y + 0.1
    eta = np.log(mu)
    dev_old = _deviance(y, mu)
    for _ in range(MAX_ITER):
        z = (eta - offset) + (y - mu) / mu
        w = np.sqrt(mu)
        coef, *_ = np.linalg.lstsq(design * w[:, None], z * w, rcond=None)
        eta = design @ coef + offset
        mu = np.maximum(np.exp(eta), tiny)
        dev = _deviance(y, mu)
        if abs(dev - dev_old) / (abs(dev) + 0.1) < EPSILON:
            return mu, True
        dev_old = dev
    return mu, False


def _ipf_fit(table: pd.DataFrame, keys: Sequence[str], schema: Schema) -> tuple[np.ndarray, bool]:
    """Fitted counts of the main-effects model by IPF of the one-way margins (cells with no
    missing key; the margins over every factor level, as ``xtabs``)."""
    from pipeline.synth.ipf import fit_ipf
    from pipeline.synth.margins import MarginTable

    complete = ~table[list(keys)].isna().any(axis=1).to_numpy()
    rows = table[complete]
    margins, positions = [], []
    for k in keys:
        x = rows[k].to_numpy(dtype=float)
        # xtabs: every level of a factor, the observed values of a number
        levels = np.arange(1.0, len(schema[k].levels or ()) + 1) if schema[k].is_factor else np.unique(x)
        position = np.searchsorted(levels, x)
        margins.append(
            MarginTable(
                (k,),
                (tuple(str(v) for v in levels),),
                np.bincount(position, weights=rows["counts"], minlength=len(levels)),
            )
        )
        positions.append(position)
    total = float(rows["counts"].sum())
    fit = fit_ipf(margins, total, priorn=0.0, tol=1e-12, tol_type="relative", engine="dense")
    fitted = np.zeros(len(table))
    fitted[complete] = total * fit.probabilities()[tuple(positions)]
    return fitted, bool(fit.report.converged)


def fit_model(table: pd.DataFrame, keys: Sequence[str], method: str, schema: Schema) -> tuple[np.ndarray, bool]:
    """The fitted ``lambda`` of every cell of the model table (0 where a key is missing)."""
    if method == "IPF":
        return _ipf_fit(table, keys, schema)
    complete = ~table[list(keys)].isna().any(axis=1).to_numpy()
    rows = table[complete]
    design = _design(rows, keys, schema)
    counts, weights = rows["counts"].to_numpy(), rows["weights"].to_numpy()
    offset = None
    y = counts
    if method == "CE":
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = counts / weights
        offset = np.log(np.where(np.isnan(ratio), 0.0, ratio) + 0.1)
    elif method == "PML":
        y = np.round(weights * (table["counts"].sum() / table["weights"].sum()))
    elif method == "weightedLLM":
        design = np.column_stack([design, weights])
    fitted, converged = poisson_irls(design, y.astype(float), offset)
    out = np.zeros(len(table))
    out[complete] = fitted
    return out, converged


def model_risk(
    table: pd.DataFrame, fitted: np.ndarray, method: str, converged: bool, bound: float = np.inf
) -> ModelRisk:
    """``gr1`` and ``gr2`` from the model table and the fitted values (see the module docstring)."""
    counts = table["counts"].to_numpy()
    keep = (counts > 0) & (counts <= bound) & ~((fitted == 0) & (counts > 0))
    lam, p, c = fitted[keep], table["inclProb"].to_numpy()[keep], counts[keep]
    cells = int(keep.sum())
    v = (1.0 - p) * lam
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        r1 = np.exp(-v) / cells
        r2 = (1.0 - np.exp(-v)) / v / cells
        unique = (c == 1).astype(float)
        return ModelRisk(method, float(np.sum(unique * r1)), float(np.sum(unique * r2)), cells, converged)


def model_risks(
    cells: pd.DataFrame, keys: Sequence[str], methods: Sequence[str], schema: Schema, bound: float = np.inf
) -> tuple[ModelRisk, ...]:
    """modRisk's estimates for each method, from the file's cells (keys, ``n``, ``w``, ``w_inv``)."""
    table = model_table(cells, keys)
    out = []
    for method in methods:
        fitted, converged = fit_model(table, keys, method, schema)
        out.append(model_risk(table, fitted, method, converged, bound))
    return tuple(out)


__all__ = ["METHODS", "ModelRisk", "fit_model", "model_risk", "model_risks", "model_table", "poisson_irls"]
