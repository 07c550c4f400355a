"""Disclosure control of margin tables (Raab's three variants) and how far each total moved.

* ``"V1"`` small counts (1 .. L-1) replaced by a fixed ``small_value`` (default L-1); zeros
  and counts >= L kept.
* ``"V2"`` every count coarsened to a multiple of L: 0 stays 0, 1 .. L-1 become L, larger counts
  are rounded to a multiple of L (``rounding`` "nearest" with ``ties`` "half_even" by default,
  or "up"/"down"). Every non-zero released count is then >= L and a multiple of L.
* ``"V3"`` V2, then each margin adjusted to the original total n: ``adjust="shift"`` subtracts
  the same delta = (sum - n) / K+ from every non-zero cell (zeros stay zero); ``"scale"``
  multiplies by n / sum; ``"none"`` leaves V2 as it is.
* ``"none"`` releases the ground-truth counts unchanged (parity with synthpop ``syn.ipf``;
  not safe, for comparisons only).

Everything reported here (released totals, deltas) is a function of the released margins and
n, so the report can be published with them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from pipeline.errors import ParameterError
from pipeline.evaluation.base import Row
from pipeline.synth.margins import MarginTable

Variant = Literal["none", "V1", "V2", "V3"]
Rounding = Literal["nearest", "up", "down"]
Ties = Literal["half_even", "half_up"]
Adjust = Literal["shift", "scale", "none"]


def _as_counts(counts: np.ndarray, what: str) -> np.ndarray:
    c = np.asarray(counts, dtype=np.float64)
    if np.any(c < 0) or np.any(c != np.round(c)):
        raise ParameterError(f"{what}: ground-truth margin counts must be non-negative integers")
    return c.astype(np.int64)


def check_limit(limit: int) -> int:
    """The disclosure limit L as an int (a ParameterError unless it is a positive integer)."""
    if isinstance(limit, bool) or int(limit) != limit or limit <= 0:
        raise ParameterError(f"limit: the disclosure limit L must be a positive integer, got {limit!r}")
    return int(limit)


def sdc_small(counts: np.ndarray, limit: int, small_value: float | None = None) -> np.ndarray:
    """V1: counts 1 .. L-1 replaced by ``small_value`` (default L-1); others unchanged."""
    limit = check_limit(limit)
    value = float(limit - 1 if small_value is None else small_value)
    if value < 0:
        raise ParameterError(f"small_value: must be >= 0, got {small_value!r}")
    c = _as_counts(counts, "V1")
    return np.where((c > 0) & (c < limit), value, c).astype(np.float64)


def coarsen(counts: np.ndarray, limit: int, rounding: Rounding = "nearest", ties: Ties = "half_even") -> np.ndarray:
    """V2: zeros kept, 1 .. L-1 -> L, larger counts to a multiple of L (exact integer arithmetic)."""
    limit = check_limit(limit)
    c = _as_counts(counts, "V2")
    q, r = np.divmod(c, limit)
    if rounding == "up":
        mult = q + (r > 0)
    elif rounding == "down":
        mult = q
    elif rounding == "nearest":
        if ties == "half_even":
            up = (2 * r > limit) | ((2 * r == limit) & (q % 2 == 1))
        elif ties == "half_up":
            up = 2 * r >= limit
        else:
            raise ParameterError(f"ties: must be 'half_even' or 'half_up', got {ties!r}")
        mult = q + up
    else:
        raise ParameterError(f"rounding: must be 'nearest', 'up' or 'down', got {rounding!r}")
    out = mult * limit
    out = np.where((c > 0) & (c < limit), limit, out)
    return np.where(c == 0, 0, out).astype(np.float64)


def adjust_total(values: np.ndarray, n: float, method: Adjust = "shift") -> tuple[np.ndarray, float]:
    """Adjust a released margin to total ``n``; returns the values and delta (shift) or factor (scale).

    ``"shift"`` subtracts delta = (sum - n) / K+ from each of the K+ non-zero cells.
    """
    v = np.asarray(values, dtype=np.float64)
    total = float(v.sum())
    if method == "none":
        return v.copy(), 0.0
    if method == "scale":
        if total <= 0:
            raise ParameterError("adjust: cannot scale a margin whose released total is 0")
        return v * (n / total), n / total
    if method == "shift":
        nonzero = v > 0
        k = int(nonzero.sum())
        if k == 0:
            raise ParameterError("adjust: cannot shift a margin without non-zero cells")
        delta = (total - n) / k
        out = np.where(nonzero, v - delta, 0.0)
        if np.any(out < 0):
            raise ParameterError(
                "adjust: shifting would make released cells negative (delta larger than a cell); use 'scale'"
            )
        return out, delta
    raise ParameterError(f"adjust: must be 'shift', 'scale' or 'none', got {method!r}")


@dataclass(frozen=True)
class MarginTotal:
    """How the total of one margin moved under disclosure control."""

    margin: str
    n: float
    released_total: float
    moved: float
    adjustment: float

    @property
    def relative_moved(self) -> float:
        return self.moved / self.n if self.n else float("nan")


@dataclass(frozen=True)
class ControlledMargins:
    """Released margins and the record of how they were made safe.

    Attributes
    ----------
    tables : tuple of MarginTable
        The released margins, in fitting order.
    totals : tuple of MarginTotal
        Per margin: released total, how far it moved from n, and the V3 delta (or factor).
    variant, limit, small_value, rounding, ties, adjust
        The rule applied.
    """

    tables: tuple[MarginTable, ...]
    totals: tuple[MarginTotal, ...]
    variant: Variant
    limit: int
    small_value: float | None
    rounding: Rounding
    ties: Ties
    adjust: Adjust
    n: int

    def rule(self) -> dict[str, Any]:
        """The disclosure-control rule as a JSON-ready dict."""
        return {
            "variant": self.variant,
            "limit": self.limit,
            "small_value": self.small_value,
            "rounding": self.rounding,
            "ties": self.ties,
            "adjust": self.adjust,
            "n": self.n,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.rule(),
            "totals": [
                {
                    "margin": t.margin,
                    "released_total": t.released_total,
                    "moved": t.moved,
                    "relative_moved": t.relative_moved,
                    "adjustment": t.adjustment,
                }
                for t in self.totals
            ],
        }

    def rows(self) -> list[Row]:
        """How far each margin's total moved, as tidy rows with ``{"margin": name}``."""
        out = []
        for t in self.totals:
            p = {"margin": t.margin}
            out += [
                Row("original", "margin_total_released", t.released_total, p),
                Row("original", "margin_total_moved", t.moved, p),
                Row("original", "margin_total_moved_rel", t.relative_moved, p),
            ]
            if self.variant == "V3" and self.adjust != "none":
                out.append(Row("original", f"margin_adjust_{self.adjust}", t.adjustment, p))
        return out


def control_margins(
    tables: Sequence[MarginTable],
    n: int,
    variant: Variant = "V3",
    limit: int = 10,
    small_value: float | None = None,
    rounding: Rounding = "nearest",
    ties: Ties = "half_even",
    adjust: Adjust = "shift",
) -> ControlledMargins:
    """Apply one of the paper's margin disclosure-control variants to ground-truth margins.

    Parameters
    ----------
    tables : sequence of MarginTable
        Ground-truth margin counts (non-negative integers).
    n : int
        Number of ground-truth records (the V3 target total).
    variant : {"V1", "V2", "V3", "none"}
    limit : int
        Disclosure limit L (> 0).
    small_value : float, optional
        V1 replacement of counts 1 .. L-1 (default L-1).
    rounding, ties
        V2/V3 rounding of counts >= L.
    adjust : {"shift", "scale", "none"}
        V3 adjustment to total n.

    Raises
    ------
    ParameterError
        Non-positive or non-integer L, negative small value, unknown rule.
    """
    limit = check_limit(limit)
    if variant not in ("none", "V1", "V2", "V3"):
        raise ParameterError(f"variant: must be 'V1', 'V2', 'V3' or 'none', got {variant!r}")
    released, totals = [], []
    for t in tables:
        adjustment = 0.0
        if variant == "none":
            vals = _as_counts(t.counts, "margins").astype(np.float64)
        elif variant == "V1":
            vals = sdc_small(t.counts, limit, small_value)
        else:
            vals = coarsen(t.counts, limit, rounding, ties)
            if variant == "V3":
                vals, adjustment = adjust_total(vals, float(n), adjust)
        total = float(vals.sum())
        released.append(t.with_counts(vals))
        totals.append(MarginTotal(t.name, float(n), total, total - n, adjustment))
    return ControlledMargins(
        tuple(released),
        tuple(totals),
        variant,
        limit,
        (float(limit - 1 if small_value is None else small_value) if variant == "V1" else None),
        rounding,
        ties,
        adjust,
        int(n),
    )
