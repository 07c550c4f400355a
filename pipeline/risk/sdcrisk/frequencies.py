"""Sample and population frequencies of key combinations (sdcMicro ``freqCalc``), as pure kernels.

Everything is computed on the table of the distinct key combinations of a file (:func:`key_table`:
one row per combination, missing values kept, with its record count ``fk`` and weight sum ``Fk``);
records take their combination's values (:func:`per_record`).  Combining the tables of several
partitions is a sum per combination (:func:`merge_key_tables`), so the frequencies never need the
records of a file together.

sdcMicro's rule for missing key values (``freqCalc``): a missing value matches any value.

* a combination without missing values gains the counts of every combination with missing values
  that matches it, times ``alpha``;
* a combination with some missing values gains, times ``alpha``, the counts of every *other*
  combination with missing values that matches it (equal wherever both have a value), and, at
  weight 1 whatever ``alpha``, the counts of the complete combinations that match it;
* a combination missing in every key gets the file's record count and weight sum, and is *not*
  added to the complete combinations (it is added to the partly missing ones) — except with one
  key, where sdcMicro adds every missing record to every complete combination.

Each pair of missing-value patterns (which keys are missing) is one grouped sum and one join on
the keys both patterns have, so the cost is ``O(p^2 * c)`` for ``p`` distinct patterns and ``c``
distinct combinations (``p <= 2^keys``, in practice a handful), never a comparison of pairs of
records as in sdcMicro's loop.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

#: the record count and weight sum columns of a key table
FK = "fk"
FK_WEIGHTED = "Fk"


def group_sum(frame: pd.DataFrame, columns: Sequence[str], values: Sequence[str]) -> pd.DataFrame:
    """``values`` summed per distinct combination of ``columns`` (missing values kept as a
    value), one row per combination in sorted order (missing last) whatever the row order."""
    return frame.groupby(list(columns), dropna=False, sort=True)[list(values)].sum().reset_index()


def key_table(codes: pd.DataFrame, weights: np.ndarray | None = None) -> pd.DataFrame:
    """The distinct combinations of ``codes`` (missing = NaN kept as a value) with ``fk`` and ``Fk``.

    Parameters
    ----------
    codes : DataFrame
        One column per key, float codes (sdcMicro's: factor level numbers, numbers as they are).
    weights : array or None
        Sampling weights, one per record; None counts every record as 1.
    """
    keys = list(codes.columns)
    w = np.ones(len(codes)) if weights is None else np.asarray(weights, dtype=float)
    frame = codes.assign(**{FK: np.ones(len(codes), dtype=np.int64), FK_WEIGHTED: w})
    return group_sum(frame, keys, [FK, FK_WEIGHTED])


def merge_key_tables(tables: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Several partitions' key tables as one (counts summed per combination; weight sums in
    partition order)."""
    first = tables[0]
    keys = [c for c in first.columns if c not in (FK, FK_WEIGHTED)]
    return group_sum(pd.concat(tables, ignore_index=True), keys, [FK, FK_WEIGHTED])


def _sum_on(source: pd.DataFrame, target: pd.DataFrame, on: list[str]) -> pd.DataFrame:
    """Per row of ``target``: the summed ``fk``/``Fk`` of the rows of ``source`` equal on ``on``."""
    if not on:
        totals = source[[FK, FK_WEIGHTED]].sum()
        return pd.DataFrame(
            {
                FK: np.full(len(target), float(totals[FK])),
                FK_WEIGHTED: np.full(len(target), float(totals[FK_WEIGHTED])),
            },
            index=target.index,
        )
    summed = source.groupby(on, sort=False)[[FK, FK_WEIGHTED]].sum()
    got = target[on].merge(summed, left_on=on, right_index=True, how="left")
    return got[[FK, FK_WEIGHTED]].fillna(0.0).set_axis(target.index)


def matched_frequencies(table: pd.DataFrame, alpha: float = 1.0) -> pd.DataFrame:
    """``table`` with ``fk``/``Fk`` as sdcMicro's ``freqCalc`` gives them (the missing-value rule
    of the module docstring); a table without missing keys is returned as it is."""
    keys = [c for c in table.columns if c not in (FK, FK_WEIGHTED)]
    missing = table[keys].isna().to_numpy()
    if not missing.any():
        return table
    out = table.copy()
    out[FK] = out[FK].astype(float)
    base = table[[FK, FK_WEIGHTED]].astype(float)
    n_total, w_total = base[FK].sum(), base[FK_WEIGHTED].sum()
    complete = ~missing.any(axis=1)
    if len(keys) == 1:
        na_sum = base[~complete].sum()
        out.loc[complete, [FK, FK_WEIGHTED]] += alpha * na_sum.to_numpy()
        out.loc[~complete, FK], out.loc[~complete, FK_WEIGHTED] = n_total, w_total
        return out
    # patterns of present keys, one group of combinations each
    pattern = pd.Series([tuple(row) for row in (~missing[~complete]).tolist()], index=table.index[~complete])
    groups = {p: idx for p, idx in pattern.groupby(pattern, sort=True).groups.items()}
    added = pd.DataFrame(0.0, index=table.index, columns=[FK, FK_WEIGHTED])
    complete_rows = table.loc[complete]
    for present, idx in groups.items():
        on = [k for k, has in zip(keys, present, strict=True) if has]
        rows = table.loc[idx]
        if on:  # all-missing combinations are not added to the complete ones (sdcMicro)
            added.loc[idx] += _sum_on(complete_rows, rows, on).to_numpy()
            added.loc[complete_rows.index] += alpha * _sum_on(rows, complete_rows, on).to_numpy()
        for other_present, other_idx in groups.items():
            if other_present == present:
                continue  # within one pattern, equal present keys are the same combination
            shared = [k for k, a, b in zip(keys, present, other_present, strict=True) if a and b]
            added.loc[idx] += alpha * _sum_on(table.loc[other_idx], rows, shared).to_numpy()
    out[[FK, FK_WEIGHTED]] = base + added
    all_missing = missing.all(axis=1)
    out.loc[all_missing, FK], out.loc[all_missing, FK_WEIGHTED] = n_total, w_total
    return out


def per_record(codes: pd.DataFrame, table: pd.DataFrame) -> pd.DataFrame:
    """Each record's row of ``table`` (``fk``, ``Fk`` and the other columns), in record order."""
    keys = list(codes.columns)
    return codes.merge(table, on=keys, how="left", sort=False).set_axis(codes.index)


__all__ = ["FK", "FK_WEIGHTED", "group_sum", "key_table", "matched_frequencies", "merge_key_tables", "per_record"]
