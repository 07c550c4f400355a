"""Identification risk of partially synthetic data (Hornby & Hu, IdentificationRiskCalculation).

Exact and radius matching of target records against row-aligned partially synthetic sets,
per-record c_i / T_i / IR_i, file-level expected match risk, true/false unique-match rates and
the paper's file-level risk, radius sweeps with the maximising radius, with O(n log n)
counting in memory or on key blocks.  The measure is
:class:`~pipeline.risk.idrisk.measure.IdentificationRiskMeasure`; see ``docs/idrisk.md``.
"""

from pipeline.lazy import lazy_exports

# imported on first use: importing one light module of the package (its params, the schema) must not
# load the heavy ones (Dask, numba kernels, SciPy)
__getattr__ = lazy_exports(
    __name__,
    {
        "IdentificationRiskMeasure": "pipeline.risk.idrisk.measure",
        "IdentificationRiskParams": "pipeline.risk.idrisk.params",
        "IdentificationRiskResult": "pipeline.risk.idrisk.result",
        "IdentificationRiskTaskResult": "pipeline.risk.idrisk.result",
        "MatchPlan": "pipeline.risk.idrisk.plan",
        "RadiusGrid": "pipeline.risk.idrisk.plan",
        "RadiusSweepResult": "pipeline.risk.idrisk.result",
        "SetStatistics": "pipeline.risk.idrisk.result",
        "identification_risk": "pipeline.risk.idrisk.api",
        "identification_risk_categorical": "pipeline.risk.idrisk.api",
        "radius_from_package_vector": "pipeline.risk.idrisk.plan",
        "radius_sweep": "pipeline.risk.idrisk.api",
    },
)

__all__ = [
    "IdentificationRiskMeasure",
    "IdentificationRiskParams",
    "IdentificationRiskResult",
    "IdentificationRiskTaskResult",
    "MatchPlan",
    "RadiusGrid",
    "RadiusSweepResult",
    "SetStatistics",
    "identification_risk",
    "identification_risk_categorical",
    "radius_from_package_vector",
    "radius_sweep",
]
