"""sdcMicro-named wrappers: ``freqCalc``, ``indivRisk``, ``measure_risk``, ``kAnon_violations``,
``ldiversity``, ``suda2``, ``modRisk``, ``sdc_risk``.

Each runs :class:`~pipeline.risk.sdcrisk.measure.SdcRiskMeasure` on one file (a pandas frame,
or a Dask frame / Dataset whose keys are brought into memory for the per-record values) and
returns sdcMicro's object with per-record values in record order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from pipeline.data.schema import Schema
from pipeline.evaluation.data import as_eval_data
from pipeline.evaluation.execution import Executor
from pipeline.risk.sdcrisk.individual import individual_risk, kanon_violations
from pipeline.risk.sdcrisk.measure import SdcRiskMeasure
from pipeline.risk.sdcrisk.modrisk import ModelRisk
from pipeline.risk.sdcrisk.records import (
    FreqCalc,
    IndivRisk,
    MeasureRisk,
    Suda2,
    freq_calc,
    ldiversity_records,
    measure_risk_records,
    suda_records,
)
from pipeline.risk.sdcrisk.result import SdcRiskResult


def _run(
    x: Any, params: dict[str, Any], schema: Schema | None, executor: Executor | None
) -> tuple[SdcRiskResult, pd.DataFrame, Schema]:
    data = as_eval_data(x, (), schema, require_synthetic=False)
    ex = executor or Executor.current()
    result = SdcRiskMeasure({"suda": False, **params}).run(data, ex)
    frame = data.original
    if not isinstance(frame, pd.DataFrame):
        (frame,) = ex.compute(frame[SdcRiskMeasure(params).params.variables()])
    return result, frame, data.schema


def sdc_risk(
    original: Any, synthetic: Any = (), schema: Schema | None = None, executor: Executor | None = None, **params: Any
) -> SdcRiskResult:
    """Every measure for the original and each synthetic set (the task measure ``sdc_risk``)."""
    data = as_eval_data(original, synthetic, schema, require_synthetic=False)
    return SdcRiskMeasure(params).run(data, executor or Executor.current())


def freqCalc(
    x: Any,
    keyVars: Sequence[str],
    w: str | None = None,
    alpha: float = 1.0,
    schema: Schema | None = None,
    executor: Executor | None = None,
) -> FreqCalc:
    """sdcMicro ``freqCalc``: sample (``fk``) and weighted (``Fk``) frequencies per record; a
    missing key value matches any value (times ``alpha``)."""
    result, frame, sch = _run(x, {"keys": list(keyVars), "weights": w, "alpha": alpha}, schema, executor)
    return freq_calc(result.original, frame, sch, alpha)


def indivRisk(x: FreqCalc, method: str = "approx", qual: float = 1.0, survey: bool = True) -> IndivRisk:
    """sdcMicro ``indivRisk`` of a :func:`freqCalc` result (``survey = FALSE``: ``1 / fk``)."""
    if method not in ("approx", "exact"):
        raise ValueError(f"indivRisk: method must be 'approx' or 'exact', got {method!r}")
    if not survey:
        return IndivRisk(1.0 / x.fk, None, None, x.fk, x.keyVars)
    return IndivRisk(individual_risk(x.fk, x.Fk, weighted=True, method=method) * qual, method, qual, x.fk, x.keyVars)


def measure_risk(
    x: Any,
    keyVars: Sequence[str],
    w: str | None = None,
    hid: str | None = None,
    max_global_risk: float = 0.01,
    alpha: float = 1.0,
    schema: Schema | None = None,
    executor: Executor | None = None,
) -> MeasureRisk:
    """sdcMicro ``measure_risk``: individual risk per record, global risk, expected
    re-identifications, threshold and (with ``hid``) the household risk."""
    params = {"keys": list(keyVars), "weights": w, "household": hid, "max_global_risk": max_global_risk, "alpha": alpha}
    result, frame, sch = _run(x, params, schema, executor)
    return measure_risk_records(result.original, frame, sch, hid, max_global_risk)


def kAnon_violations(obj: MeasureRisk, weighted: bool, k: int) -> int:
    """sdcMicro ``kAnon_violations``: records whose ``fk`` (``Fk`` when ``weighted``) is below ``k``."""
    return kanon_violations(obj.Res["Fk" if weighted else "fk"].to_numpy(), k)


def ldiversity(
    x: Any,
    keyVars: Sequence[str],
    ldiv_index: Sequence[str],
    l_recurs_c: float = 2.0,
    schema: Schema | None = None,
    executor: Executor | None = None,
) -> pd.DataFrame:
    """sdcMicro ``ldiversity``: distinct, entropy and recursive l-diversity per record (and the
    multi measures with several sensitive variables)."""
    params = {"keys": list(keyVars), "sensitive": list(ldiv_index), "l_recurs_c": l_recurs_c}
    result, frame, sch = _run(x, params, schema, executor)
    return ldiversity_records(result.original, frame, sch, list(ldiv_index))


def suda2(
    x: Any,
    variables: Sequence[str],
    DisFraction: float = 0.01,
    original_scores: bool = True,
    missing_dimension: int | None = None,
    schema: Schema | None = None,
    executor: Executor | None = None,
) -> Suda2:
    """sdcMicro ``suda2``: SUDA and DIS-SUDA scores and each variable's contribution."""
    params = {
        "keys": list(variables),
        "suda": True,
        "dis_fraction": DisFraction,
        "original_scores": original_scores,
        "missing_dimension": missing_dimension,
    }
    result, frame, sch = _run(x, params, schema, executor)
    return suda_records(result.original, frame, sch)


def modRisk(
    x: Any,
    keyVars: Sequence[str],
    method: str = "default",
    weights: str | None = None,
    bound: float = np.inf,
    schema: Schema | None = None,
    executor: Executor | None = None,
) -> ModelRisk:
    """sdcMicro ``modRisk`` with the keys' main effects (``formulaM = ~ keys``); without
    ``weights`` every weight is 1, as sdcMicro's sdcMicroObj method does."""
    params = {"keys": list(keyVars), "weights": weights, "modrisk": [method], "bound": bound}
    result, _, _ = _run(x, params, schema, executor)
    return result.original.model[0]


__all__ = ["freqCalc", "indivRisk", "kAnon_violations", "ldiversity", "measure_risk", "modRisk", "sdc_risk", "suda2"]
