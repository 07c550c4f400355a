"""The one gate evaluator: the value a gate (or a report headline) judges, from tidy rows.

A gate value is computed over one :data:`GATE_GROUP` key — one measure entry at one params on
one dataset x source — as :func:`gate_value` (``max`` or ``mean`` over its synthetic sets).
``nightly.check_gates`` evaluates a task's gates with it over every repetition; the report
summary (``report/summary.py``) evaluates each release's headlines with it, per repetition.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from pipeline.results import per_set

#: what one gate value is computed over: one measure entry at one params on one dataset × source
#: (its synthetic sets); ``params`` is the rows' canonical JSON, so two
#: entries differing in any parameter are never pooled
GATE_GROUP = ["dataset", "source", "measure_name", "params"]


def gate_value(rows: pd.DataFrame, statistic: str) -> float:
    """``max`` or ``mean`` of one gate group's values over its synthetic sets (every repetition).

    ``mean`` takes the measure's own ``mean`` rows where it emits them (averaged over the
    repetitions); rows with no per-set values (a measure's summary such as ``r_star``) are used
    as they are.
    """
    means = rows.loc[rows["synthetic"] == "mean", "value"]
    if statistic == "mean" and len(means):
        return float(means.mean())
    sets = per_set(rows)
    vals = (sets if len(sets) else rows)["value"].to_numpy(dtype=float)
    vals = vals[~np.isnan(vals)]
    if not len(vals):
        return float("nan")
    return float(vals.max() if statistic == "max" else vals.mean())
