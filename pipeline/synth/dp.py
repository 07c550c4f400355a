"""Differentially private margins (synthpop 1.9-2 ``syn.ipf`` semantics).

What a release with ``dp`` does to every margin, in fitting order (``margin_noise``):

1. the prior: ``priorn / cells`` is added to every cell (as ``syn.ipf`` does before the noise);
2. the budget: the overall ε is split equally between the q margins (``ε_m = ε / q``, syn.ipf)
   or in proportion to user weights;
3. the noise, independent per cell: Laplace with scale ``1 / ε_m`` (sensitivity 1: one record
   changes one cell of a margin by 1), or Gaussian with sd ``sqrt(2 log(2 / δ)) / ε_m``. Like
   R, the Gaussian mechanism refuses ``ε_m >= 1`` (its classical guarantee needs ε < 1) and
   ``δ`` outside (0, 1];
4. R's ``makepos``: the noisy cells sorted by value, largest first; every cell from the one
   where the running sum of absolute values reaches the original total (ground truth +
   prior) on is set to 0, the others take their absolute value. The result is non-negative
   and its total is at most the original total, short of it by less than the first cell set to
   0 (R's "keeps the total": it never exceeds it).

Everything after the noise is post-processing of the noisy margins, so it keeps the guarantee:
rounding and coarsening (``order: noise_then_coarsen``), IPF and the multinomial draws. Noise is
never added after coarsening: a coarsened count moves by L when one record crosses a rounding
boundary, so the sensitivity would be L, not 1.

Reproducibility: the noise of margin j comes from ``SeedSequence([seed, NOISE_TAG],
spawn_key=(j,))`` - a function of the seed and the margin's position only. The margins
themselves are exact integer counts however the data are partitioned, so the noisy margins
are the same on any number of workers and any chunking.

Budget accounting (basic composition): a release spends ``ε`` (the sum of the ``ε_m``) and,
for Gaussian noise, ``δ_total = q · δ`` (each margin is an (ε_m, δ) mechanism); Laplace spends
δ = 0. Every repetition of a synthesiser is a separate release and spends again; the m sets
drawn from one noisy fit are post-processing and do not.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from pipeline.errors import ParameterError
from pipeline.evaluation.base import Row
from pipeline.synth.margins import MarginTable

NoiseType = Literal["laplace", "gaussian"]
DpOrder = Literal["noise_only", "noise_then_coarsen"]
NOISE_TAG = 0x44504E  # "DPN": keeps the noise streams apart from the sampling streams of the same seed


class DpParams(BaseModel):
    """The ``dp`` block of the ``synthesise`` settings.

    Attributes
    ----------
    epsilon : float
        Overall privacy budget ε of one release (> 0), split between the margins.
    delta : float
        δ of the Gaussian mechanism, per margin (syn.ipf default 0.05; must be in (0, 1]).
    noise : {"laplace", "gaussian"}
        syn.ipf ``noisetype``.
    order : {"noise_only", "noise_then_coarsen"}
        "noise_only": the noisy margins are released as they are (``variant`` must be "none");
        "noise_then_coarsen": rounded to integers and then made safe by ``variant`` (V1/V2/V3).
    weights : list of float, optional
        Relative share of ε per margin, in fitting order (default: equal, as syn.ipf).
    """

    model_config = ConfigDict(extra="forbid")

    epsilon: float
    delta: float = 0.05
    noise: NoiseType = "laplace"
    order: DpOrder = "noise_only"
    weights: list[float] | None = None


def split_budget(epsilon: float, n_margins: int, weights: Sequence[float] | None = None) -> np.ndarray:
    """ε_m per margin: ``ε / q`` each (syn.ipf) or ``ε · w_m / sum(w)``.

    Raises
    ------
    ParameterError
        ε not a finite number > 0, or weights of the wrong length, negative, or all zero.
    """
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ParameterError(f"dp.epsilon: must be a finite number > 0, got {epsilon!r}")
    if weights is None:
        return np.full(n_margins, epsilon / n_margins)
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (n_margins,):
        raise ParameterError(f"dp.weights: give one weight per margin ({n_margins}), got {len(w)}")
    if not (np.all(np.isfinite(w)) and np.all(w > 0)):
        raise ParameterError("dp.weights: every weight must be a finite number > 0 (a margin needs some budget)")
    return epsilon * w / w.sum()


def gaussian_sd(eps_m: float, delta: float) -> float:
    """syn.ipf's Gaussian sd ``sqrt(2 log(2 / δ)) / ε_m``."""
    return math.sqrt(2.0 * math.log(2.0 / delta)) / eps_m


def check_dp(dp: DpParams, n_margins: int) -> np.ndarray:
    """R's refusals, with our own messages; returns ε_m per margin.

    Raises
    ------
    ParameterError
        ε <= 0; for Gaussian noise δ outside (0, 1] or any ε_m >= 1 (R's ``addGaussn``).
    """
    eps = split_budget(dp.epsilon, n_margins, dp.weights)
    if dp.noise == "gaussian":
        if not (0 < dp.delta <= 1):
            raise ParameterError(f"dp.delta: the Gaussian mechanism needs 0 < delta <= 1, got {dp.delta!r}")
        if np.any(eps >= 1):
            raise ParameterError(
                f"dp: Gaussian noise guarantees (epsilon, delta)-DP only for a per-margin epsilon < 1; "
                f"epsilon={dp.epsilon:g} over {n_margins} margin(s) gives up to {eps.max():g} "
                "(lower epsilon, add margins, or use noise: laplace)"
            )
    return eps


def makepos(noisy: np.ndarray, total: float) -> np.ndarray:
    """R's ``makepos``: non-negative values whose total does not exceed ``total``.

    Cells sorted by noisy value (descending, ties in cell order as R's ``order``); those from
    the first whose running sum of absolute values reaches ``total`` are set to 0; the others
    take their absolute value.
    """
    flat = np.asarray(noisy, dtype=np.float64).ravel()
    order = np.argsort(-flat, kind="stable")
    reached = np.cumsum(np.abs(flat[order])) >= total
    out = np.abs(flat)
    out[order[reached]] = 0.0
    return out.reshape(np.shape(noisy))


def noise_stream(seed: int, margin: int) -> np.random.Generator:
    """The generator of margin ``margin``'s noise (independent of partitions and workers)."""
    return np.random.default_rng(np.random.SeedSequence([seed, NOISE_TAG], spawn_key=(margin,)))


def noise_values(rng: np.random.Generator, size: int, noise: NoiseType, eps_m: float, delta: float) -> np.ndarray:
    """``size`` independent draws of the mechanism's noise for one margin."""
    if noise == "laplace":
        return rng.laplace(0.0, 1.0 / eps_m, size)
    return rng.normal(0.0, gaussian_sd(eps_m, delta), size)


@dataclass(frozen=True)
class DpMargin:
    """The noise of one margin: budget share, noise scale and how makepos moved the total."""

    margin: str
    epsilon: float
    scale: float
    total_before: float
    total_after: float
    cells_zeroed: int


@dataclass(frozen=True)
class DpRecord:
    """What one release spent, and the per-margin details (all public with the release)."""

    epsilon: float
    delta: float
    noise: NoiseType
    order: DpOrder
    margins: tuple[DpMargin, ...]

    @property
    def delta_spent(self) -> float:
        """δ under basic composition: q · δ for Gaussian noise, 0 for Laplace."""
        return self.delta * len(self.margins) if self.noise == "gaussian" else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "delta_spent": self.delta_spent,
            "noise": self.noise,
            "order": self.order,
            "composition": "basic",
            "margins": [m.__dict__.copy() for m in self.margins],
        }

    def rows(self) -> list[Row]:
        """``dp_epsilon_spent`` / ``dp_delta_spent`` of the release, and per margin its ε_m and scale."""
        out = [
            Row("original", "dp_epsilon_spent", self.epsilon),
            Row("original", "dp_delta_spent", self.delta_spent),
        ]
        for m in self.margins:
            p = {"margin": m.margin}
            out += [
                Row("original", "dp_margin_epsilon", m.epsilon, p),
                Row("original", "dp_noise_scale", m.scale, p),
                Row("original", "dp_cells_zeroed", float(m.cells_zeroed), p),
            ]
        return out


def margin_noise(
    tables: Sequence[MarginTable], dp: DpParams, priorn: float, seed: int
) -> tuple[list[MarginTable], DpRecord]:
    """Prior, noise and makepos for every margin (steps 1-4 of the module docstring).

    Parameters
    ----------
    tables : sequence of MarginTable
        Ground-truth margin counts, in fitting order.
    dp : DpParams
    priorn : float
        syn.ipf prior mass added to each margin before the noise.
    seed : int
        The release's seed (the noise of margin j is :func:`noise_stream` ``(seed, j)``).

    Returns
    -------
    noisy : list of MarginTable
    record : DpRecord
    """
    eps = check_dp(dp, len(tables))
    noisy, details = [], []
    for j, t in enumerate(tables):
        with_prior = t.counts + priorn / t.counts.size
        total = float(with_prior.sum())
        draws = noise_values(noise_stream(seed, j), t.counts.size, dp.noise, float(eps[j]), dp.delta)
        values = makepos(with_prior + draws.reshape(t.counts.shape), total)
        scale = 1.0 / eps[j] if dp.noise == "laplace" else gaussian_sd(float(eps[j]), dp.delta)
        noisy.append(t.with_counts(values))
        details.append(
            DpMargin(t.name, float(eps[j]), float(scale), total, float(values.sum()), int((values == 0).sum()))
        )
    return noisy, DpRecord(float(dp.epsilon), float(dp.delta), dp.noise, dp.order, tuple(details))
