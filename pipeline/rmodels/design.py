"""The design matrix of R's ``glm(t ~ .^(maxorder + 1))`` (``model.matrix`` semantics).

* Terms: all main effects and interactions up to ``maxorder + 1`` variables, in the order R's
  formula code produces them (``PowerTerms`` expansion, then a stable sort by order).
* Factors use R's default contrasts: treatment (dummy columns for levels 2..K, the first
  level is the reference) for unordered factors, orthonormal polynomials (``contr.poly``) for
  ordered ones.  Because every lower-order margin is in the model, every factor is coded by
  contrasts in every term.
* The columns of a term are the row-wise products of its variables' columns, the first
  variable varying fastest; names are joined by ``:`` (``sexFEMALE:age``).

The matrix is built chunk by chunk from integer level codes and numeric columns, in Fortran
order, so a kernel never holds more than one chunk of the design.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations, product
from math import prod

import numpy as np


def r_power_terms(n_vars: int, order: int) -> list[tuple[int, ...]]:
    """Terms of ``(v1 + ... + vn)^order`` in R's order (tuples of 0-based variable indices).

    Mirrors R's ``PowerTerms`` (repeated products with duplicates trimmed, keeping first
    occurrences) followed by the stable reordering of terms by their number of variables.
    """
    base = [1 << i for i in range(n_vars)]
    terms = list(base)
    for _ in range(1, order):
        seen: dict[int, None] = {}
        for left in base:
            for right in terms:
                seen.setdefault(left | right, None)
        terms = list(seen)
    as_tuples = [tuple(i for i in range(n_vars) if bits >> i & 1) for bits in terms]
    return sorted(as_tuples, key=len)  # sorted() is stable


def n_params(levels: Sequence[int], maxorder: int) -> int:
    """synthpop's parameter count: ``1 + sum over subsets S, |S| <= maxorder+1, of prod(L_v - 1)``.

    ``levels`` holds the number of levels of each predictor (2 for numeric columns).
    """
    total = 1
    for k in range(1, min(maxorder + 1, len(levels)) + 1):
        total += sum(prod(levels[i] - 1 for i in sub) for sub in combinations(range(len(levels)), k))
    return total


def contr_poly(n: int) -> np.ndarray:
    """R's ``contr.poly(n)``: orthonormal polynomial contrasts (n x (n-1))."""
    scores = np.arange(1, n + 1, dtype=float)
    y = scores - scores.mean()
    x = np.vander(y, n, increasing=True)
    q, r = np.linalg.qr(x)
    raw = q * np.diag(r)  # sign-invariant: each column is Q_j * R_jj
    z = raw / np.sqrt((raw**2).sum(axis=0))
    return z[:, 1:]


def poly_names(n: int) -> list[str]:
    """Column suffixes of ``contr.poly``: ``.L``, ``.Q``, ``.C``, ``^4``, ..."""
    names = [".L", ".Q", ".C"] + [f"^{i}" for i in range(4, n)]
    return names[: n - 1]


@dataclass(frozen=True)
class Predictor:
    """One prepared predictor of the propensity model.

    ``levels`` is ``None`` for a numeric column; otherwise the labels of the factor's levels
    in the stacked data (``None`` = the NA level, printed ``NA``).
    """

    name: str
    levels: tuple[str | None, ...] | None = None
    ordered: bool = False

    @property
    def is_factor(self) -> bool:
        return self.levels is not None

    def basis(self) -> tuple[np.ndarray | None, list[str]]:
        """Contrast matrix (levels x columns) and column names; ``None`` for a numeric column."""
        if self.levels is None:
            return None, [self.name]
        k = len(self.levels)
        labels = ["NA" if lv is None else lv for lv in self.levels]
        if self.ordered:
            return contr_poly(k), [self.name + s for s in poly_names(k)]
        return np.eye(k)[:, 1:], [self.name + lab for lab in labels[1:]]


@dataclass(frozen=True)
class Design:
    """Columns of the model matrix for a list of predictors and an interaction order."""

    predictors: tuple[Predictor, ...]
    terms: tuple[tuple[int, ...], ...]
    names: tuple[str, ...]
    blocks: tuple[tuple[int, int], ...]  # (start, stop) column range of each term

    @classmethod
    def build(cls, predictors: Sequence[Predictor], maxorder: int) -> Design:
        preds = tuple(predictors)
        terms = r_power_terms(len(preds), maxorder + 1) if maxorder >= 1 else [(i,) for i in range(len(preds))]
        names = ["(Intercept)"]
        blocks = []
        bases = [p.basis() for p in preds]
        for term in terms:
            start = len(names)
            # product(...) varies the last factor fastest; R varies the first fastest
            for combo in product(*[range(len(bases[v][1])) for v in reversed(term)]):
                idx = list(reversed(combo))
                names.append(":".join(bases[v][1][i] for v, i in zip(term, idx, strict=True)))
            blocks.append((start, len(names)))
        return cls(preds, tuple(terms), tuple(names), tuple(blocks))

    @property
    def n_columns(self) -> int:
        return len(self.names)

    def matrix(self, columns: Sequence[np.ndarray]) -> np.ndarray:
        """The model matrix (Fortran order) of one chunk.

        ``columns[i]`` holds the stacked level codes (int, 0-based) of a factor predictor or
        the values of a numeric one.
        """
        n = len(columns[0]) if columns else 0
        x = np.empty((n, self.n_columns), dtype=float, order="F")
        x[:, 0] = 1.0
        per_var = []
        for p, col in zip(self.predictors, columns, strict=True):
            contrast, _ = p.basis()
            if contrast is None:
                per_var.append(np.asarray(col, dtype=float)[:, None])
            else:
                per_var.append(contrast[np.asarray(col, dtype=np.int64)])
        for term, (start, stop) in zip(self.terms, self.blocks, strict=True):
            block = per_var[term[0]]
            for v in term[1:]:
                other = per_var[v]
                # first variable fastest: column (i, j) -> i + n_i * j
                block = (block[:, :, None] * other[:, None, :]).reshape(n, -1, order="F")
            x[:, start:stop] = block
        return x
