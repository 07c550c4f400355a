"""What of a result may be written to a file: level labels coarsened so no original value shows.

A numeric variable binned for a table (synthpop's ``group_num``) gets labels such as
``[30841,987654]`` whose outer edges are the data's minimum and maximum, and with many groups
an interval can hold a single record whose value its edges give away.  The result objects keep
R's labels (for equivalence with synthpop); the summaries the runner writes go through
:func:`public_summary`, which replaces every label that would expose a value:

* the outer edges of the binned range become ``min`` and ``max``;
* an edge next to an interval with fewer than ``min_records`` original records becomes ``…``
  (so neither that interval's label nor its neighbours' show it);
* a factor or character level held by fewer than ``min_records`` (but at least one) original
  records becomes ``level <i> (<min_records records)``.

Coarsened labels are given per variable (:data:`Coarsened`): a written string is replaced when
it equals a label, or the variable's name followed by the label (a model coefficient such as
``income[30841,987654]``), in each ``:``-separated part (interaction terms).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pipeline.rcompat import cut_edge_texts, interval_labels

#: default smallest number of original records a written label may stand for
MIN_RECORDS = 10
#: variable -> (R's label -> written label)
Coarsened = Mapping[str, Mapping[str, str]]
HIDDEN_EDGE = "…"


def coarsened_bins(
    breaks: np.ndarray, labels: Sequence[str | None], original_counts: Sequence[float], min_records: int = MIN_RECORDS
) -> dict[str, str]:
    """The written form of the interval labels of one binned variable.

    Parameters
    ----------
    breaks : ndarray
        The binning's sorted, distinct break points (``len(breaks) - 1`` intervals).
    labels : sequence of str
        R's labels; the first ``len(breaks) - 1`` are the intervals (special codes follow).
    original_counts : sequence of float
        Original records per label (same order as ``labels``).
    min_records : int
        An interval with fewer original records hides both its edges.

    Returns
    -------
    dict
        R's interval label -> written label, for every label that changes.
    """
    k = len(breaks) - 1
    edges = cut_edge_texts(np.asarray(breaks, dtype=float))
    if edges is None:  # R's Range_i labels show no value
        return {}
    small = np.asarray(original_counts[:k], dtype=float) < min_records
    shown = list(edges)
    shown[0], shown[-1] = "min", "max"
    for i in np.flatnonzero(small):
        for j in (i, i + 1):
            if 0 < j < k:
                shown[j] = HIDDEN_EDGE
    written = interval_labels(shown)
    return {str(r): w for r, w in zip(labels[:k], written, strict=True) if r is not None and r != w}


def coarsened_levels(
    labels: Sequence[str | None], original_counts: Sequence[float], min_records: int = MIN_RECORDS
) -> dict[str, str]:
    """The written form of factor or character levels: a level held by 1 to ``min_records - 1``
    original records becomes ``level <i> (<min_records records)``."""
    return {
        str(label): f"level {i + 1} (<{min_records} records)"
        for i, (label, n) in enumerate(zip(labels, original_counts, strict=True))
        if label is not None and 0 < n < min_records
    }


def public_summary(summary: Any, coarsened: Coarsened) -> Any:
    """``summary`` (JSON-able) with every string made of coarsened labels replaced."""
    table: dict[str, str] = {}
    for var, labels in coarsened.items():
        for label, written in labels.items():
            table[label] = written
            table[f"{var}{label}"] = f"{var}{written}"
    if not table:
        return summary

    def walk(obj: Any) -> Any:
        if isinstance(obj, str):
            return ":".join(table.get(part, part) for part in obj.split(":")) if obj not in table else table[obj]
        if isinstance(obj, dict):
            return {walk(k) if isinstance(k, str) else k: walk(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [walk(v) for v in obj]
        return obj

    return walk(summary)


@dataclass(frozen=True)
class LevelCounts:
    """The levels of one table axis or model factor and how many original records hold each.

    ``breaks`` is set for a binned numeric variable (its labels start with the intervals).
    """

    variable: str
    labels: tuple[str | None, ...]
    original_counts: tuple[float, ...]
    breaks: np.ndarray | None = None


def coarsen(levels: Sequence[LevelCounts], min_records: int = MIN_RECORDS) -> dict[str, dict[str, str]]:
    """The :data:`Coarsened` labels of ``levels`` (variables whose labels all stay are left out)."""
    out: dict[str, dict[str, str]] = {}
    for lc in levels:
        if lc.breaks is not None:
            changed = coarsened_bins(lc.breaks, lc.labels, lc.original_counts, min_records)
        else:
            changed = coarsened_levels(lc.labels, lc.original_counts, min_records)
        if changed:
            out.setdefault(lc.variable, {}).update(changed)
    return out
