"""The results table's structured ``params`` as columns: the one place the report reads them.

Every row's ``params`` is canonical JSON (the unit's parameters updated with the row's own, such
as ``target``, ``scenario`` or ``radius``).  The display ``setting`` beside it is for people and
is never parsed.  :func:`param_columns` parses each distinct params text once and returns the
keys asked for as columns, plus a ``unit`` column (the remaining parameters) that tells apart
measure entries differing in any other setting.

Lists become tuples and mappings :class:`Pairs` (``(key, value)`` pairs sorted by key), so that
every column can be grouped and merged on; ``dict(value)`` gives a mapping back.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Hashable, Iterable, Iterator
from typing import Any

import numpy as np
import pandas as pd

#: the column holding a row's other parameters (hashable), added by :func:`param_columns`
UNIT = "unit"


class Pairs(tuple):
    """A params mapping as a hashable tuple of ``(key, value)`` pairs sorted by key."""

    __slots__ = ()


def frozen(value: Any) -> Hashable:
    """A JSON value as a hashable one: lists as tuples, mappings as :class:`Pairs`."""
    if isinstance(value, dict):
        return Pairs(sorted((k, frozen(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(frozen(v) for v in value)
    return value


def param_columns(rows: pd.DataFrame, *keys: str, row_keys: Collection[str] | None = None) -> pd.DataFrame:
    """``rows`` with one column per params key and a :data:`UNIT` column of the other params.

    Parameters
    ----------
    rows : DataFrame
        Rows of the results table (a ``params`` column of canonical JSON). Rows without params
        (a history written before the column existed) read as empty params.
    *keys : str
        The params keys wanted as columns (None where a row's params lack the key).
    row_keys : collection of str, optional
        The keys left out of :data:`UNIT` (default ``keys``): the row-level settings, so that
        ``UNIT`` is the same for every row of one measure entry and setting.

    Returns
    -------
    DataFrame
        A copy of ``rows`` with the new columns (object dtype, values as by :func:`frozen`).
    """
    texts = rows["params"]
    distinct = pd.Index(pd.unique(texts))
    parsed = [json.loads(t) if isinstance(t, str) else {} for t in distinct]
    at = distinct.get_indexer(texts)
    left_out = set(keys if row_keys is None else row_keys)
    columns = {k: [frozen(p.get(k)) for p in parsed] for k in keys}
    columns[UNIT] = [frozen({k: v for k, v in p.items() if k not in left_out}) for p in parsed]
    out = rows.copy()
    for name, per_text in columns.items():
        values = np.empty(len(per_text), dtype=object)
        for i, value in enumerate(per_text):  # one per distinct params text (tuples stay whole)
            values[i] = value
        out[name] = values[at]
    return out


def unit_labels(units: Iterable[Hashable]) -> dict[Hashable, str]:
    """A short display text per :data:`UNIT` value: only the parameters in which the units differ
    (empty when there is one unit, so titles stay short), each as ``key=value``; a parameter a unit
    does not set (absent or None, e.g. singling-out's ``n_cols`` in univariate mode) is left out
    of its text, never shown as "None". The texts stay distinct: two units that differ in a key
    differ in a value shown."""
    units = list(dict.fromkeys(units))
    mappings = [dict(u) if u else {} for u in units]
    names = list(dict.fromkeys(k for m in mappings for k in m))
    differing = [k for k in names if len({m.get(k) for m in mappings}) > 1]
    return {
        u: "; ".join(f"{k}={value_text(m[k])}" for k in differing if m.get(k) is not None)
        for u, m in zip(units, mappings, strict=True)
    }


def unit_groups(rows: pd.DataFrame, by: list[str]) -> Iterator[tuple[tuple[Any, ...], str, pd.DataFrame]]:
    """The rows (with a :data:`UNIT` column) grouped by the columns ``by`` and then by unit:
    ``(key, unit text, rows)``, the text naming only the parameters in which the units of one
    ``by`` group differ (see :func:`unit_labels`)."""
    for key, sub in rows.groupby(by, sort=False):
        labels = unit_labels(sub[UNIT])
        for unit, part in sub.groupby(UNIT, sort=False):
            yield key, labels[unit], part


def value_text(value: Any) -> str:
    """A params value for people: lists joined with commas, mappings as ``key=value`` pairs."""
    if isinstance(value, Pairs):
        return ", ".join(f"{k}={value_text(v)}" for k, v in value)
    if isinstance(value, tuple):
        return ", ".join(value_text(v) for v in value)
    return str(value)


def of_kind(rows: pd.DataFrame, role: str | None = None, summary: str | None = None) -> pd.DataFrame:
    """The rows whose ``role`` is ``role`` (None: ``observed``, the measure's own figures) and whose
    ``summary`` is ``summary`` (None: none, one set's value). ``of_kind(rows)`` is a measure's own
    figures — what headlines and gates judge by default — without the holdout baselines and
    summaries over sets added beside them (:mod:`pipeline.evaluation.comparison`)."""
    keep = rows["role"] == (role or "observed")
    keep &= (rows["summary"] == summary) if summary is not None else rows["summary"].isna()
    return rows[keep.to_numpy(dtype=bool)]
