"""Reading a measure's holdout comparisons back from tidy rows: per release and setting, the
equal-footing figure's :class:`~pipeline.evaluation.comparison.Comparison` (training, holdout, the
excess's mean over sets with its interval, the residual) — for the report's excess table and a
family's headline (identification risk's excess over its holdout)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import pandas as pd

from pipeline.evaluation.comparison import ALL_SETS, EXCESS, HOLDOUT, RESIDUAL, TRAINING, Compared, Comparison, Interval
from pipeline.results import per_set
from pipeline.row_params import UNIT, param_columns, unit_labels

#: a release: one synthetic source of one dataset in one repetition
RELEASE = ["dataset", "source", "repetition"]


def _summary(part: pd.DataFrame, role: str) -> Interval | None:
    """The mean over sets of the ``role`` rows and its interval (None when there is no mean)."""
    rows = part[(part["synthetic"] == ALL_SETS) & (part["role"] == role)].set_index("summary")
    if "mean" not in rows.index:
        return None
    method = rows["method"].dropna()
    got = {k: float(rows.at[k, "value"]) if k in rows.index else math.nan for k in ("mean", "lower95", "upper95")}
    return Interval(got["mean"], got["lower95"], got["upper95"], str(method.iloc[0]) if len(method) else "")


def footing_settings(rows: pd.DataFrame, compared: Compared) -> Iterator[tuple[tuple, str, Any, Comparison]]:
    """Per release and setting of an equal-footing figure: (release, setting text, the setting's
    params as :class:`~pipeline.row_params.Pairs`, comparison)."""
    rows = param_columns(rows[(rows["measure"] == compared.training) & (rows["role"] != "observed")])
    for release, sub in rows.groupby(RELEASE, sort=False):
        labels = unit_labels(sub[UNIT])
        entries = sub["measure_name"].nunique()
        for (entry, unit), part in sub.groupby(["measure_name", UNIT], sort=False):
            sets = per_set(part)
            sets = sets[sets["summary"].isna()]
            training, holdout = (float(sets.loc[sets["role"] == r, "value"].mean()) for r in (TRAINING, HOLDOUT))
            difference = _summary(part, EXCESS) or Interval(training - holdout, math.nan, math.nan, "")
            n = sets.loc[sets["role"] == TRAINING, "synthetic"].nunique()
            named = (f"{entry} [{labels[unit]}]" if labels[unit] else entry) if entries > 1 else labels[unit]
            yield tuple(release), named, unit, Comparison(training, holdout, difference, _summary(part, RESIDUAL), n)


def largest(comparisons: Iterable[Comparison]) -> int:
    """The position of the comparison with the largest upper bound (else difference)."""
    order = [c.difference.upper if not np.isnan(c.difference.upper) else c.difference.value for c in comparisons]
    return int(np.argmax([-np.inf if np.isnan(o) else o for o in order]))
