"""Identification risk of partially synthetic data (Hornby & Hu, IdentificationRiskCalculation).

Exact and radius matching of target records against row-aligned partially synthetic sets,
per-record c_i / T_i / IR_i, file-level expected match risk, true/false unique-match rates and
the paper's file-level risk, radius sweeps with the maximising radius, with O(n log n)
counting in memory or on key blocks.  The measure is
:class:`~pipeline.risk.idrisk.measure.IdentificationRiskMeasure`; see ``docs/idrisk.md``.
"""

from pipeline.risk.idrisk.api import identification_risk, identification_risk_categorical, radius_sweep
from pipeline.risk.idrisk.measure import IdentificationRiskMeasure
from pipeline.risk.idrisk.params import IdentificationRiskParams
from pipeline.risk.idrisk.plan import MatchPlan, RadiusGrid, radius_from_package_vector
from pipeline.risk.idrisk.result import (
    IdentificationRiskResult,
    IdentificationRiskTaskResult,
    RadiusSweepResult,
    SetStatistics,
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
