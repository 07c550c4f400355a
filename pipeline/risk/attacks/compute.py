"""Attack orchestration: draw the targets, search their nearest synthetic records, count successes.

anonymeter 1.1.0's attacks, on the executor:

* targets: ``n_attacks`` records drawn without replacement (seeded) from the training records
  (main attack) and from the holdout (control attack), kept where they are
  (:meth:`~pipeline.evaluation.execution.Executor.keep_rows`);
* distances: the mixed distance of :mod:`pipeline.risk.nearest` with each numeric variable
  scaled by its range over the synthetic set and the targets together (anonymeter scales by
  the range of the two data frames it compares);
* nearest synthetic records: exact (:func:`~pipeline.risk.nearest.compute.nearest_neighbours`),
  one search per target set and column set, all of a synthetic set's searches in one pass.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from pipeline.evaluation.data import EvalData, Frame
from pipeline.evaluation.execution import Deferred, Executor
from pipeline.risk.nearest.checks import split_kinds
from pipeline.risk.nearest.compute import (
    DistanceSpace,
    gather,
    nearest_neighbours,
    reported_values,
    space_from_ranges,
    value_ranges,
)

#: roles of the random streams drawn from the seed (singling.py uses 4-6)
MAIN, CONTROL, BASELINE_TARGETS, BASELINE_GUESSES, LINK_TIES = 0, 1, 2, 3, 7


@dataclass(frozen=True)
class AttackCounts:
    """Attacks and successes of the main, control (None without a holdout) and baseline attacks."""

    main_attacks: int
    main_successes: int
    control_attacks: int | None
    control_successes: float | None  # singling out: rescaled to the training size
    baseline_attacks: int
    baseline_successes: int


@dataclass(frozen=True)
class Targets:
    """Records attacked in one data set: the frame (kept where the data are) and their number."""

    frame: Frame
    count: int


def draw_targets(
    executor: Executor, frame: Frame, records: int, n_attacks: int | None, seed: int, role: int
) -> Targets:
    """``min(n_attacks, records)`` records of ``frame`` drawn without replacement (all: None)."""
    count = records if n_attacks is None else min(n_attacks, records)
    if count == records:
        return Targets(frame, records)
    chosen = np.random.default_rng([seed, role]).choice(records, size=count, replace=False)
    keep = np.zeros(records, dtype=bool)
    keep[chosen] = True
    return Targets(executor.keep_rows(frame, keep), count)


def _concat(parts: Sequence[np.ndarray]) -> np.ndarray:
    return np.concatenate(list(parts)) if parts else np.zeros(0)


def column_values(executor: Executor, frame: Frame, column: str, missing_codes: tuple[float, ...] = ()) -> Deferred:
    """A variable's values over all partitions, in record order, its special missing codes as NaN (deferred)."""
    return executor.map_reduce(frame[[column]], reported_values, _concat, column, missing_codes)


def attack_space(
    data: EvalData, executor: Executor, variables: list[str], frames: Sequence[Frame], block_on: Sequence[str] = ()
) -> DistanceSpace:
    """The distance space of ``variables`` and the exact-match ``block_on`` factors, numeric ones
    scaled by their range over ``frames`` together."""
    variables = [*block_on, *(v for v in variables if v not in block_on)]
    factors, numerics = split_kinds(data.schema, variables, "attack")
    codes = {v: data.schema[v].missing_codes for v in numerics if data.schema[v].missing_codes}
    ranges = executor.compute(*value_ranges(executor, frames, numerics, codes))
    return space_from_ranges(factors, numerics, ranges, codes, block_on)


def link_ties(seed: int, synthetic_set: int, target_set: int) -> tuple[list[int], list[int]]:
    """The tie-order seeds of the two searches of a linkability attack: one random order of the
    synthetic records per search, so a target whose halves tie between records (duplicated
    synthetic records) links by chance, as often as those records are alike, not always."""
    return [seed, synthetic_set, target_set, LINK_TIES, 0], [seed, synthetic_set, target_set, LINK_TIES, 1]


def link_searches(
    data: EvalData,
    executor: Executor,
    targets: Frame,
    syn: Frame,
    aux: tuple[list[str], list[str]],
    n_neighbors: int,
    block_on: Sequence[str] = (),
    ties: tuple[list[int], list[int]] | None = None,
) -> list[Deferred]:
    """The two searches of a linkability attack (deferred, one per column set; :func:`links` reads
    them); ``ties``: their tie-order seeds (:func:`link_ties`), else ties go to the earlier record."""
    return [
        nearest_neighbours(
            executor,
            targets,
            syn,
            attack_space(data, executor, half, [syn, targets], block_on),
            n_neighbors,
            ties=None if ties is None else ties[h],
        )
        for h, half in enumerate(aux)
    ]


def links(
    first: Sequence, second: Sequence, n_neighbors: int, ties: tuple[list[int], list[int]] | None = None
) -> np.ndarray:
    """Whether each target (in record order) is linked, from the computed :func:`link_searches`
    (searched with ``ties``)."""
    halves = [gather(found, n_neighbors, None if ties is None else ties[h]) for h, found in enumerate((first, second))]
    return _linked(halves[0].positions, halves[1].positions)


def inference_guesses(
    data: EvalData,
    executor: Executor,
    targets: Frame,
    syn: Frame,
    aux: list[str],
    secret: str,
    block_on: Sequence[str] = (),
) -> Deferred:
    """The secret of each target's nearest synthetic record on ``aux`` (deferred; factor: level code)."""
    space = attack_space(data, executor, aux, [syn, targets], block_on)
    codes = data.schema[secret].missing_codes
    if codes:  # the guesses report the secret's special missing codes as missing, as its true values do
        space = replace(space, missing_codes={**space.missing_codes, secret: tuple(codes)})
    return nearest_neighbours(executor, targets, syn, space, 1, payload=secret)


def guesses(found: Sequence) -> np.ndarray:
    """The computed value of :func:`inference_guesses`: one guess per target."""
    return gather(found, 1).payload[:, 0]


def target_sets(data: EvalData, executor: Executor, n_attacks: int | None, seed: int) -> list[Targets]:
    """The main targets (training records) and, with a holdout, the control targets."""
    sizes = executor.partition_rows(data.original, *([data.holdout] if data.holdout is not None else []))
    out = [draw_targets(executor, data.original, sum(sizes[0]), n_attacks, seed, MAIN)]
    if data.holdout is not None:
        out.append(draw_targets(executor, data.holdout, sum(sizes[1]), n_attacks, seed, CONTROL))
    return out


def random_link_probability(n_synthetic: int, n_neighbors: int) -> float:
    """Chance that two independent random draws of ``n_neighbors`` distinct synthetic records share one."""
    k = min(n_neighbors, n_synthetic)
    disjoint = (
        math.exp(
            math.lgamma(n_synthetic - k + 1) * 2 - math.lgamma(n_synthetic + 1) - math.lgamma(n_synthetic - 2 * k + 1)
        )
        if n_synthetic >= 2 * k
        else 0.0
    )
    return 1.0 - disjoint


def linkability_counts(
    data: EvalData,
    executor: Executor,
    aux: tuple[list[str], list[str]],
    n_neighbors: int,
    n_attacks: int | None,
    seed: int,
    block_on: Sequence[str] = (),
) -> list[AttackCounts]:
    """Linkability of every synthetic set: a target is linked when the ``n_neighbors`` nearest
    synthetic records of its two column sets share a record (equally near records in a seeded
    random order per search, :func:`link_ties`).

    The baseline attack links two random draws of ``n_neighbors`` distinct synthetic records;
    its number of links is drawn from the binomial law that anonymeter's random draws follow
    (the chance of a shared record is exact, :func:`random_link_probability`).
    """
    targets = target_sets(data, executor, n_attacks, seed)
    sizes = executor.rows(data)[1:]
    out = []
    for i, syn in enumerate(data.synthetic, start=1):
        ties = [link_ties(seed, i, j) for j in range(len(targets))]
        found = executor.compute(
            *[
                search
                for t, tie in zip(targets, ties, strict=True)
                for search in link_searches(data, executor, t.frame, syn, aux, n_neighbors, block_on, tie)
            ]
        )
        linked = [int(links(found[2 * j], found[2 * j + 1], n_neighbors, ties[j]).sum()) for j in range(len(targets))]
        rng = np.random.default_rng([seed, i, BASELINE_GUESSES])
        baseline = int(rng.binomial(targets[0].count, random_link_probability(sizes[i - 1], n_neighbors)))
        control = (targets[1].count, linked[1]) if len(targets) > 1 else (None, None)
        out.append(AttackCounts(targets[0].count, linked[0], *control, targets[0].count, baseline))
    return out


def _linked(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Whether the neighbour lists of each row share a record (positions -1 are empty slots)."""
    same = (first[:, :, None] == second[:, None, :]) & (first[:, :, None] >= 0)
    return same.any(axis=(1, 2))


def inference_successes(guesses: np.ndarray, secrets: np.ndarray, numeric: bool, tolerance: float) -> np.ndarray:
    """anonymeter's rule: a numeric guess is right within ``tolerance`` of it (relative), a factor
    guess when equal; both missing counts as right."""
    both_missing = np.isnan(guesses) & np.isnan(secrets)
    with np.errstate(invalid="ignore", divide="ignore"):
        right = np.abs(guesses - secrets) / (np.abs(guesses) + 1e-12) <= tolerance if numeric else guesses == secrets
    return both_missing | right


def inference_counts(
    data: EvalData,
    executor: Executor,
    aux: list[str],
    secret: str,
    tolerance: float,
    n_attacks: int | None,
    seed: int,
    block_on: Sequence[str] = (),
) -> list[AttackCounts]:
    """Inference of every synthetic set: the secret of the target's nearest synthetic record
    (on ``aux``) is the guess.  The baseline guesses the secret of a random synthetic record
    for as many random training records (at most the synthetic set's size)."""
    numeric = data.schema[secret].is_numeric
    codes = tuple(data.schema[secret].missing_codes or ())
    targets = target_sets(data, executor, n_attacks, seed)
    n_train = sum(executor.partition_rows(data.original)[0])
    secrets = executor.compute(*[column_values(executor, t.frame, secret, codes) for t in targets])
    sizes = executor.rows(data)[1:]
    out = []
    for i, syn in enumerate(data.synthetic, start=1):
        found = executor.compute(
            *[inference_guesses(data, executor, t.frame, syn, aux, secret, block_on) for t in targets]
        )
        guessed = [guesses(f) for f in found]
        hits = [int(inference_successes(g, s, numeric, tolerance).sum()) for g, s in zip(guessed, secrets, strict=True)]
        n_base = min(sizes[i - 1], targets[0].count)
        base_targets = draw_targets(executor, data.original, n_train, n_base, seed, BASELINE_TARGETS)
        order = np.random.default_rng([seed, i, BASELINE_GUESSES]).choice(sizes[i - 1], size=n_base, replace=False)
        keep = np.zeros(sizes[i - 1], dtype=bool)
        keep[order] = True
        base_secrets, pool = executor.compute(
            column_values(executor, base_targets.frame, secret, codes),
            column_values(executor, executor.keep_rows(syn, keep), secret, codes),
        )
        base_guesses = pool[np.searchsorted(np.flatnonzero(keep), order)]  # the drawn records, in draw order
        baseline = int(inference_successes(base_guesses, base_secrets, numeric, tolerance).sum())
        control = (targets[1].count, hits[1]) if len(targets) > 1 else (None, None)
        out.append(AttackCounts(targets[0].count, hits[0], *control, n_base, baseline))
    return out
