"""Singling out (anonymeter 1.1.0's SinglingOutEvaluator, our own code): predicates built from a
synthetic set, checked for uniqueness in the training records (main), the holdout (control) and,
for random predicates, the training records again (baseline).

* Every data set is deduplicated first, as anonymeter does (a predicate matching two identical
  records singles out one person).  A synthetic set is gathered in record order and
  deduplicated where it is; the training records and the holdout stay on the executor: each
  record's 64-bit hash is gathered, the first of equal hashes is kept
  (:meth:`~pipeline.evaluation.execution.Executor.keep_rows`), and the counts of the
  partitions then add up exactly (two different records with one hash would count once:
  chance about n² / 2⁶⁵).
* Predicates: :mod:`pipeline.risk.attacks.predicates`, counted per partition, counts summed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy.optimize import curve_fit

from pipeline.errors import ParameterError
from pipeline.evaluation.data import EvalData, Frame
from pipeline.evaluation.execution import Executor
from pipeline.risk.attacks.compute import AttackCounts
from pipeline.risk.attacks.params import Columns
from pipeline.risk.attacks.predicates import (
    EQ,
    FACTOR_OPS,
    GE,
    LE,
    NOT_NULL,
    NULL,
    NUMERIC_OPS,
    Predicates,
    SortedRecords,
    concat,
    count_matches,
    records_matrix,
)

#: random streams of the seed (after those of compute.py)
QUERIES, BASELINE_QUERIES, FOOTING = 4, 5, 6
#: predicates tried per round of the multivariate attack (anonymeter's batch size)
BATCH = 1000


def _matrix(part: pd.DataFrame, columns: Columns) -> np.ndarray:
    return records_matrix(part, columns.factors, columns.numerics, columns.missing_codes)


def _hashes(part: pd.DataFrame, columns: Columns) -> np.ndarray:
    return pd.util.hash_pandas_object(pd.DataFrame(_matrix(part, columns)), index=False).to_numpy()


def _stack(parts: Sequence[np.ndarray]) -> np.ndarray:
    return np.concatenate(list(parts))


def _add(parts: Sequence[np.ndarray]) -> np.ndarray:
    return np.sum(np.stack(list(parts)), axis=0)


def _partition_counts(part: pd.DataFrame, columns: Columns, predicates: Predicates, cap: int | None) -> np.ndarray:
    return count_matches(_matrix(part, columns), predicates, cap)


def distinct_records(executor: Executor, frame: Frame, columns: Columns) -> tuple[Frame, int]:
    """``frame`` without repeated records (the first of each kept) and its number of records."""
    (hashes,) = executor.compute(executor.map_reduce(frame[columns.names], _hashes, _stack, columns))
    keep = ~pd.Series(hashes).duplicated().to_numpy()
    kept = int(keep.sum())
    return (frame if kept == len(keep) else executor.keep_rows(frame, keep)), kept


def synthetic_records(executor: Executor, frame: Frame, columns: Columns) -> np.ndarray:
    """A synthetic set's distinct records (first occurrences, in record order) as a matrix."""
    (records,) = executor.compute(executor.map_reduce(frame[columns.names], _matrix, _stack, columns))
    return records[~pd.DataFrame(records).duplicated().to_numpy()]


def equal_footing(
    executor: Executor, train: tuple[Frame, int], control: tuple[Frame, int], seed: int
) -> tuple[tuple[Frame, int], tuple[Frame, int]]:
    """The distinct training and control records on equal footing: the larger of the two
    subsampled without replacement to the smaller one's size (positions by
    ``default_rng([seed, FOOTING])``: the same records whatever the partitions or workers)."""
    (frame_t, n_t), (frame_c, n_c) = train, control
    if n_t == n_c:
        return train, control
    larger, size = (frame_t, n_t) if n_t > n_c else (frame_c, n_c)
    keep = np.zeros(size, dtype=bool)
    keep[np.random.default_rng([seed, FOOTING]).choice(size, min(n_t, n_c), replace=False)] = True
    sub = (executor.keep_rows(larger, keep), min(n_t, n_c))
    return (sub, control) if n_t > n_c else (train, sub)


def univariate_predicates(
    records: np.ndarray, columns: Columns, n_attacks: int, rng: np.random.Generator
) -> Predicates:
    """anonymeter's univariate queries: per column, its only missing value, its minimum and
    maximum (numeric), and each value found once; shuffled, the first ``n_attacks`` that single
    out a record of the synthetic set."""
    cols, ops, vals = [], [], []
    for c in range(records.shape[1]):
        x = records[:, c]
        present = x[~np.isnan(x)]
        if len(x) - len(present) == 1:
            cols.append([c])
            ops.append([NULL])
            vals.append([np.nan])
        if columns.is_numeric[c] and len(present):
            cols += [[c], [c]]
            ops += [[LE], [GE]]
            vals += [[present.min()], [present.max()]]
        value, count = np.unique(present, return_counts=True)
        rare = value[count == 1]
        cols += [[c]] * len(rare)
        ops += [[EQ]] * len(rare)
        vals += [[v] for v in rare]
    candidates = Predicates(
        np.array(cols, dtype=np.int64).reshape(-1, 1),
        np.array(ops, dtype=np.int8).reshape(-1, 1),
        np.array(vals, dtype=np.float64).reshape(-1, 1),
    ).take(rng.permutation(len(cols)))
    singles = np.flatnonzero(count_matches(records, candidates) == 1)
    return candidates.take(singles[:n_attacks])


def _from_records(
    records: np.ndarray, columns: Columns, rows: np.ndarray, chosen: np.ndarray, median: np.ndarray
) -> Predicates:
    """anonymeter's query from a record: each chosen column equal to the record's value (factor),
    at least it above the synthetic median or at most it otherwise (numeric), missing if missing."""
    values = records[rows[:, None], chosen]
    numeric = columns.is_numeric[chosen]
    with np.errstate(invalid="ignore"):
        ops = np.where(numeric, np.where(values > median[chosen], GE, LE), EQ)
    ops = np.where(np.isnan(values), NULL, ops).astype(np.int8)
    return Predicates(chosen, ops, values)


def medians(records: np.ndarray) -> np.ndarray:
    """Each column's median over the synthetic set's distinct records (0 for a column all missing)."""
    return np.nanmedian(np.where(np.isnan(records).all(axis=0), 0.0, records), axis=0)


def _random_columns(rng: np.random.Generator, count: int, p: int, n_cols: int) -> np.ndarray:
    """``n_cols`` distinct columns for each of ``count`` predicates, uniformly."""
    return np.argsort(rng.random((count, p)), axis=1)[:, :n_cols]


def multivariate_predicates(
    records: np.ndarray,
    columns: Columns,
    n_attacks: int,
    n_cols: int,
    max_attempts: int | None,
    rng: np.random.Generator,
) -> Predicates:
    """anonymeter's multivariate queries: rounds of :data:`BATCH` predicates from random records
    and random ``n_cols`` columns; those singling out a synthetic record, not found before, are
    kept until ``n_attacks`` (or ``max_attempts`` tried)."""
    centre = medians(records)
    index = SortedRecords.of(records)
    found = [Predicates.empty(n_cols)]
    seen: set[bytes] = set()
    attempts = kept = 0
    while kept < n_attacks and (max_attempts is None or attempts < max_attempts):
        batch = BATCH if max_attempts is None else min(BATCH, max_attempts - attempts)
        rows = rng.integers(0, len(records), size=batch)
        tried = _from_records(records, columns, rows, _random_columns(rng, batch, records.shape[1], n_cols), centre)
        singles = np.flatnonzero(count_matches(index, tried) == 1)
        new = []
        for i, key in zip(singles, tried.take(singles).keys(), strict=True):
            if key not in seen and kept + len(new) < n_attacks:
                seen.add(key)
                new.append(i)
        found.append(tried.take(np.array(new, dtype=np.int64)))
        kept += len(new)
        attempts += batch
    return concat(found)


def random_predicates(
    records: np.ndarray, columns: Columns, n_attacks: int, n_cols: int, rng: np.random.Generator
) -> Predicates:
    """anonymeter's baseline: ``n_attacks`` predicates on ``n_cols`` random columns, each a value
    drawn from the column's distinct synthetic values (missing included) with a random operator
    (factors: equal or not; numerics: any comparison; a missing value: missing or not)."""
    chosen = _random_columns(rng, n_attacks, records.shape[1], n_cols)
    values = np.empty(chosen.shape)
    ops = np.empty(chosen.shape, dtype=np.int8)
    for c in range(records.shape[1]):
        at = chosen == c
        distinct = pd.unique(records[:, c])
        values[at] = distinct[rng.integers(0, len(distinct), size=int(at.sum()))]
        choices = NUMERIC_OPS if columns.is_numeric[c] else FACTOR_OPS
        ops[at] = choices[rng.integers(0, len(choices), size=int(at.sum()))]
    missing = np.isnan(values)
    ops[missing & (ops == EQ)] = NULL
    ops[missing & (ops != NULL)] = NOT_NULL
    return Predicates(chosen, ops, values)


def size_corrected(counts: np.ndarray, n_control: int, n_training: int) -> float:
    """Predicates singling out a control record, rescaled to the training set's size (anonymeter's
    correction, when the deduplicated sizes differ): the expected number singling out in random
    subsets of the control set at ten sizes (exact, hypergeometric, where anonymeter draws five
    subsets per size) is fitted with Cohen and Nissim's model ``norm · ∫₀^w n·v(1−v)^(n−1) dv`` and
    the count scaled by the model's ratio at the two sizes."""
    from scipy.stats import hypergeom  # about a second of imports: not on validate's path

    singles = float(np.sum(counts == 1))
    if n_control == n_training or singles == 0:
        return singles
    sizes = np.linspace(min(1000, n_control), n_control, 10).astype(int)
    expected = hypergeom.pmf(1, n_control, counts[None, :], sizes[:, None]).sum(axis=1)

    def integral(n: np.ndarray, w: float) -> np.ndarray:
        return (1 - (n * w + 1) * (1 - w) ** n) / (n + 1)

    def model(n: np.ndarray, w: float, norm: float) -> np.ndarray:
        return norm * integral(n, w)

    w0 = 1 / sizes.max()
    try:
        # a near-linear curve (few predicates singling out, sizes close together) is fitted by
        # w -> 0, norm -> inf: it takes more evaluations than the default 200 to get there
        (w, norm), _ = curve_fit(
            model, sizes, expected, p0=(w0, 1 / integral(sizes.max(), w0)), bounds=(0, (1, np.inf)), max_nfev=100_000
        )
    except RuntimeError as exc:
        raise ParameterError(
            f"singling_out: the control set ({n_control} distinct records) could not be rescaled to the "
            f"training set's size ({n_training}): {exc}; give a holdout of the training set's size"
        ) from None
    return singles * float(model(np.array(n_training), w, norm) / model(np.array(n_control), w, norm))


def singling_out_counts(
    data: EvalData,
    executor: Executor,
    columns: Columns,
    mode: str,
    n_attacks: int,
    n_cols: int,
    max_attempts: int | None,
    seed: int,
    footing: str = "equal",
) -> list[tuple[AttackCounts, int]]:
    """Counts of every synthetic set and its number of singling-out predicates.

    As anonymeter reports them, every rate is over ``n_attacks`` (fewer predicates found in the
    synthetic set lower the rates, anonymeter warns of an underestimate).  When the distinct
    training and control records differ in number, ``footing`` "equal" counts the main and
    baseline attacks in a seeded subsample of the larger of the two of the smaller one's size
    (:func:`equal_footing`); "size_corrected" (anonymeter 1.1.0) counts them in every training
    record and rescales the control count to the training set's size (:func:`size_corrected`).
    """
    train, n_train = distinct_records(executor, data.original, columns)
    control = distinct_records(executor, data.holdout, columns) if data.holdout is not None else None
    if control is not None and footing == "equal":
        (train, n_train), control = equal_footing(executor, (train, n_train), control, seed)
    out = []
    for i, syn in enumerate(data.synthetic, start=1):
        records = synthetic_records(executor, syn, columns)
        rng = np.random.default_rng([seed, i, QUERIES])
        if mode == "univariate":
            queries = univariate_predicates(records, columns, n_attacks, rng)
        else:
            queries = multivariate_predicates(records, columns, n_attacks, n_cols, max_attempts, rng)
        width = 1 if mode == "univariate" else n_cols
        guessing = np.random.default_rng([seed, i, BASELINE_QUERIES])
        baseline = random_predicates(records, columns, n_attacks, width, guessing)
        both = concat([queries, baseline])
        lazy = [executor.map_reduce(train[columns.names], _partition_counts, _add, columns, both, 2)]
        if control is not None:
            cap = None if control[1] != n_train else 2  # exact counts to rescale
            frame = control[0][columns.names]
            lazy.append(executor.map_reduce(frame, _partition_counts, _add, columns, queries, cap))
        got = executor.compute(*lazy)
        main = int(np.sum(got[0][: len(queries)] == 1))
        base = int(np.sum(got[0][len(queries) :] == 1))
        control_successes = size_corrected(got[1], control[1], n_train) if control is not None else None
        counts = AttackCounts(
            n_attacks, main, n_attacks if control is not None else None, control_successes, n_attacks, base
        )
        out.append((counts, len(queries)))
    return out
