"""sdcMicro's risk measures on key blocks, for the original and every synthetic set.

Public API
----------
freqCalc, indivRisk, measure_risk, kAnon_violations, ldiversity, suda2, modRisk
    sdcMicro's functions on one file, with per-record values (``fk``/``Fk``, individual and
    household risk, l-diversity, SUDA2 scores and contributions) and modRisk's estimates.
sdc_risk
    Every measure for the original and each synthetic set (the task measure ``sdc_risk``).
SdcRiskResult, SdcRiskParams
    The result (``.rows()`` with params, ``.tidy()``, ``.to_dict()``: aggregates only) and the
    parameters.

The task measure is :class:`~pipeline.risk.sdcrisk.measure.SdcRiskMeasure`.  See
``docs/sdc_risk.md``.
"""

from pipeline.lazy import lazy_exports

# imported on first use: loading a task validates its params without the kernels
__getattr__ = lazy_exports(
    __name__,
    {
        "SdcRiskParams": "pipeline.risk.sdcrisk.params",
        "SdcRiskResult": "pipeline.risk.sdcrisk.result",
        "freqCalc": "pipeline.risk.sdcrisk.api",
        "indivRisk": "pipeline.risk.sdcrisk.api",
        "kAnon_violations": "pipeline.risk.sdcrisk.api",
        "ldiversity": "pipeline.risk.sdcrisk.api",
        "measure_risk": "pipeline.risk.sdcrisk.api",
        "modRisk": "pipeline.risk.sdcrisk.api",
        "sdc_risk": "pipeline.risk.sdcrisk.api",
        "suda2": "pipeline.risk.sdcrisk.api",
    },
)

__all__ = [
    "SdcRiskParams",
    "SdcRiskResult",
    "freqCalc",
    "indivRisk",
    "kAnon_violations",
    "ldiversity",
    "measure_risk",
    "modRisk",
    "sdc_risk",
    "suda2",
]
