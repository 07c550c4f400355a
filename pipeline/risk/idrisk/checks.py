"""Identification risk's data checks: row alignment and missing continuous values, one pass of
aggregates over every data set.

Apart from the counting (:mod:`pipeline.risk.idrisk.compute`): ``validate`` runs these checks
(:meth:`~pipeline.risk.idrisk.measure.IdentificationRiskMeasure.check_aggregates`) without loading
the numba matching kernels.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from pipeline.errors import CompatibilityError, DataError
from pipeline.evaluation.data import EvalData, source_name
from pipeline.evaluation.execution import Deferred, Executor

ROWS = "__rows__"
GROUP = "__group__"


def _frame_checks(frame: pd.DataFrame, continuous: Sequence[str], groups: Sequence[Sequence[str]]) -> pd.Series:
    """Row count, number of missing/non-finite values per continuous variable and number of records
    with one in any variable of each group (one partition)."""
    values = {ROWS: len(frame)}
    missing = {v: _not_finite(frame, v) for v in continuous}
    values.update({v: int(bad.sum()) for v, bad in missing.items()})
    for k, group in enumerate(groups):
        values[f"{GROUP}{k}"] = int(_any_of(missing, group, len(frame)).sum())
    return pd.Series(values, dtype=np.int64)


def _not_finite(frame: pd.DataFrame, variable: str) -> np.ndarray:
    return ~np.isfinite(frame[variable].to_numpy(dtype=np.float64, na_value=np.nan))


def _any_of(missing: Mapping[str, np.ndarray], group: Sequence[str], n: int) -> np.ndarray:
    any_bad = np.zeros(n, dtype=bool)
    for v in group:
        any_bad |= missing[v]
    return any_bad


def unmatched_records(frame: pd.DataFrame, group: Sequence[str]) -> np.ndarray:
    """Whether each record has a missing or non-finite value in one of the radius-matched
    variables ``group`` (under ``na_action: no_match`` it matches nothing)."""
    return _any_of({v: _not_finite(frame, v) for v in group}, group, len(frame))


def _sum_checks(parts: Sequence[pd.Series]) -> pd.Series:
    return sum(parts[1:], parts[0])


def check_frames(
    data: EvalData,
    executor: Executor,
    continuous: Sequence[str],
    na_action: str,
    groups: Sequence[Sequence[str]] = (),
) -> tuple[int, list[int]]:
    """Cheap aggregates before any matching: one pass over every data set.

    Row counts must agree (row i of a partially synthetic set is the synthetic version of
    original record i); missing or non-finite values of radius-matched variables are an error
    unless ``na_action="no_match"``.  :func:`frame_checks` + :func:`judge_checks`.

    Returns
    -------
    n : int
        The number of records.
    excluded : list of int
        Per group of ``groups`` (a scenario's radius-matched variables), the original's records
        with a missing or non-finite value in one of them: under ``no_match`` they match nothing.

    Raises
    ------
    CompatibilityError
        A synthetic set has another number of records than the original.
    DataError
        Missing/non-finite continuous values under ``na_action="error"`` (names the data set,
        the variables and counts).
    """
    checks = executor.compute(*frame_checks(data, executor, continuous, groups))
    return judge_checks(checks, continuous, na_action, groups)


def frame_checks(
    data: EvalData, executor: Executor, continuous: Sequence[str], groups: Sequence[Sequence[str]] = ()
) -> list[Deferred]:
    """The aggregates :func:`judge_checks` reads, one deferred value per data set (so that they can
    be computed in the same pass as other work, e.g. :meth:`Executor.key_blocks` ``along``)."""
    cont, grouped = list(continuous), [list(g) for g in groups]
    return [executor.map_reduce(f, _frame_checks, _sum_checks, cont, grouped) for f in data.frames]


def judge_checks(
    checks: Sequence[pd.Series], continuous: Sequence[str], na_action: str, groups: Sequence[Sequence[str]] = ()
) -> tuple[int, list[int]]:
    """The number of records and the excluded records per group, from the computed
    :func:`frame_checks`; raises as :func:`check_frames` says."""
    cont = list(continuous)
    n = int(checks[0][ROWS])
    for i, chk in enumerate(checks[1:], start=1):
        if int(chk[ROWS]) != n:
            raise CompatibilityError(
                f"{source_name(i)} has {int(chk[ROWS])} rows but the original has {n}: partially synthetic data "
                "must be row-aligned (row i of every synthetic set is the synthetic version of original record i)"
            )
    if na_action == "error":
        for i, chk in enumerate(checks):
            bad = {v: int(chk[v]) for v in cont if int(chk[v])}
            if bad:
                detail = ", ".join(f"{v!r} ({k} records)" for v, k in bad.items())
                raise DataError(
                    f"{source_name(i)} has missing or non-finite values in continuous variable(s) {detail}; "
                    "remove them or set na_action: no_match (those records then match nothing; the row "
                    "excluded_share gives their share)"
                )
    return n, [int(checks[0][f"{GROUP}{k}"]) for k in range(len(groups))]
