"""Summary rows over synthetic sets: mean, between-set standard deviation and a 95 % interval.

Generic over :class:`~pipeline.evaluation.base.Row`: every (measure, role, params) that has a
value for synthetic sets "1".."m" gets rows under synthetic "all" (:data:`ALL_SETS`) with the same
params and role and ``summary`` s in ``mean``, ``sd``, ``lower95``, ``upper95``; the two bounds
also carry the interval's ``method`` (:mod:`pipeline.evaluation.comparison`'s vocabulary):

* ``"t"`` — Student's t over the m sets (m ≥ 2 finite values): mean ± t(0.975, m − 1) · sd / √m.
  It describes the variation *between synthetic sets* (the synthesis' randomness) with the
  original records held fixed;
* ``"bootstrap"`` — one synthetic set (m = 1) of a measure whose result can be redrawn over the
  original's records (:meth:`Result.resampled <pipeline.evaluation.base.Result.resampled>`:
  identification risk): the 2.5 % and 97.5 % percentiles of the value over ``B`` replicates with
  the original's records drawn with replacement and the synthetic set held fixed
  (:func:`bootstrap_rows`). It describes the sampling of the records, not the synthesis;
* ``"permutation"`` — the holdout excess (:mod:`pipeline.evaluation.baseline`): the mean excess
  over sets ± t(0.975, R − 1) times the standard deviation of the mean excess over R random
  relabellings of training and holdout records (:func:`shift_interval`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from pipeline.evaluation.base import Row, canonical_json
from pipeline.evaluation.comparison import ALL_SETS, BOOTSTRAP, LEVEL, SUMMARIES, T

#: the summaries that are interval bounds (they carry the interval's method)
BOUNDS = ("lower95", "upper95")


def per_set_values(rows: Sequence[Row], keep: Callable[[Row], bool] = lambda r: True) -> dict[str, Any]:
    """``{(measure, role, canonical params): (params, [values of sets 1..m])}`` in first-seen order."""
    groups: dict[tuple[str, str, str], tuple[Mapping[str, Any], list[float]]] = {}
    texts: dict[int, str] = {}  # the rows of one setting share their params object: its text once
    for r in rows:
        if not str(r.synthetic).isdigit() or not keep(r):
            continue
        text = texts.get(id(r.params))
        if text is None:
            text = texts[id(r.params)] = canonical_json(r.params)
        key = (r.measure, r.role, text)
        groups.setdefault(key, (r.params, []))[1].append(float(r.value))
    return groups


def summary_rows(
    measure: str, params: Mapping[str, Any], role: str, values: dict[str, float], method: str
) -> list[Row]:
    """The summary rows of one (measure, role, params): ``values`` by summary name (bounds carry ``method``)."""
    return [
        Row(ALL_SETS, measure, float(values[name]), params, role, name, method if name in BOUNDS else None)
        for name in SUMMARIES
        if name in values
    ]


def _t_quantile(p: float, df: int) -> float:
    """Student's t quantile: ``scipy.stats.t.ppf``'s own function (scipy.special), imported on first
    use because loading scipy.stats costs about a second of every command's start."""
    from scipy.special import stdtrit

    return float(stdtrit(df, p))


def t_interval(values: Sequence[float], level: float = LEVEL) -> dict[str, float] | None:
    """Mean, standard deviation and the t interval of the finite ``values`` (None when fewer than 2)."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if len(v) < 2:
        return None
    mean, sd = math.fsum(v.tolist()) / len(v), float(np.std(v, ddof=1))
    half = _t_quantile(0.5 + level / 2, len(v) - 1) * sd / math.sqrt(len(v))
    return {"mean": mean, "sd": sd, "lower95": mean - half, "upper95": mean + half}


def shift_interval(observed: float, relabelled: Sequence[float], level: float = LEVEL) -> tuple[float, float]:
    """The interval ``observed ± t(0.975, R − 1) · sd(relabelled)`` (NaN bounds with fewer than 2 finite values).

    ``relabelled`` are the statistic on R random relabellings of the records: their spread is
    the statistic's sampling spread when training and holdout records are exchangeable, so the
    interval covers 0 with probability ``level`` when the synthesis adds nothing (approximately
    normal statistics; tested by simulation in ``tests/foundation/test_baselines.py``).
    """
    r = np.asarray(relabelled, dtype=np.float64)
    r = r[np.isfinite(r)]
    if len(r) < 2 or not math.isfinite(observed):
        return math.nan, math.nan
    half = _t_quantile(0.5 + level / 2, len(r) - 1) * float(np.std(r, ddof=1))
    return observed - half, observed + half


def bootstrap_rows(observed: Sequence[Row], replicates: Sequence[Row], level: float = LEVEL) -> list[Row]:
    """Percentile-bootstrap summary rows (``mean`` = the observed value, ``lower95``, ``upper95``)
    of every (measure, params) of the single synthetic set "1" in ``observed``, from the values of
    the replicates' sets "1".."B" in ``replicates`` (:meth:`Result.resampled
    <pipeline.evaluation.base.Result.resampled>`; fewer than 2 finite replicate values: no rows)."""
    spread = per_set_values(replicates)
    out = []
    for key, (params, (value,)) in per_set_values(observed, keep=lambda r: r.synthetic == "1").items():
        r = np.asarray(spread.get(key, (None, []))[1], dtype=np.float64)
        r = r[np.isfinite(r)]
        if len(r) < 2 or not math.isfinite(value):
            continue
        lower, upper = np.quantile(r, [0.5 - level / 2, 0.5 + level / 2])
        bounds = {"mean": value, "lower95": lower, "upper95": upper}
        out += summary_rows(key[0], params, key[1], bounds, BOOTSTRAP)
    return out


def over_sets(rows: Sequence[Row], keep: Callable[[Row], bool] = lambda r: True) -> list[Row]:
    """t-interval summary rows of every (measure, params) with at least 2 finite per-set values."""
    out = []
    for (measure, role, _), (params, values) in per_set_values(rows, keep).items():
        summary = t_interval(values)
        if summary is not None:
            out += summary_rows(measure, params, role, summary, T)
    return out
