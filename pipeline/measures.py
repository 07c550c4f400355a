"""The registry of measures a task can ask for: task ``type`` -> :class:`~pipeline.evaluation.base.Measure`.

Entries are imported lazily (``"module:Class"``) so that a task, or ``sdc-pipeline
measures``, only loads the modules it uses; a task's parameters are validated with the measure's
params model (``params_ref``, the family's ``params.py``), which loads no kernel and no Dask, so a
typo in a task is reported before the measures' code is imported.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pipeline.errors import ParameterError, TaskError
from pipeline.evaluation.reporting import Headline, ReportSection

if TYPE_CHECKING:  # listing the measures imports no measure code (and no Dask)
    from pipeline.evaluation.base import Measure, Params
    from pipeline.evaluation.comparison import Compared


@dataclass(frozen=True)
class MeasureEntry:
    """Where the measure class of one task ``type`` lives, and what it is for."""

    type: str
    family: str
    ref: str  # "module:Class" of the Measure subclass
    #: "module:Class" of its params model (the measure's ``params_model``)
    params_ref: str
    description: str = ""

    @property
    def measure(self) -> type[Measure]:
        return _load(self.ref)

    @property
    def params_model(self) -> type[Params]:
        return _load(self.params_ref)

    @property
    def needs_synthetic(self) -> bool:
        return self.measure.needs_synthetic

    def validate(self, params: dict[str, Any], where: str) -> Params:
        """Validate a unit's parameters (errors name the task file, the measure and the setting)."""
        from pipeline.evaluation.base import parse_params

        try:
            return parse_params(self.params_model, params, where)
        except ParameterError as e:
            raise TaskError(str(e)) from None


def _load(ref: str) -> Any:
    module, name = ref.split(":")
    return getattr(importlib.import_module(module), name)


_ENTRIES = [
    MeasureEntry(
        "profile",
        "profile",
        "pipeline.profile:Profile",
        "pipeline.profile:ProfileParams",
        "per-variable counts, missing values and special codes",
    ),
    MeasureEntry(
        "key_blocks",
        "profile",
        "pipeline.profile:KeyBlockSizes",
        "pipeline.profile:KeyBlockParams",
        "distribution of key-combination sizes, computed on key blocks",
    ),
    MeasureEntry(
        "disclosure",
        "disclosure",
        "pipeline.risk.disclosure.measure:DisclosureMeasure",
        "pipeline.risk.disclosure.params:DisclosureParams",
        "synthpop disclosure() / multi.disclosure(): repU, DiSCO, UiO, Dorig, CAPs, flags",
    ),
    MeasureEntry(
        "identification_risk",
        "identification_risk",
        "pipeline.risk.idrisk.measure:IdentificationRiskMeasure",
        "pipeline.risk.idrisk.params:IdentificationRiskParams",
        "Hornby & Hu identification risk with radius matching and radius sweeps",
    ),
    MeasureEntry(
        "utility_gen",
        "utility",
        "pipeline.utility.measure:UtilityGenMeasure",
        "pipeline.utility.params:UtilityGenParams",
        "synthpop utility.gen(): propensity pMSE, S_pMSE, pMSE ratio (logit or CART)",
    ),
    MeasureEntry(
        "utility_tab",
        "utility",
        "pipeline.utility.measure:UtilityTabMeasure",
        "pipeline.utility.params:UtilityTabParams",
        "synthpop utility.tab(): table utility (pMSE, S_pMSE, VW, FT, JSD, SPECKS, ...)",
    ),
    MeasureEntry(
        "utility_tables",
        "utility",
        "pipeline.utility.measure:UtilityTablesMeasure",
        "pipeline.utility.params:UtilityTablesParams",
        "synthpop utility.tables(): every low-order table and the heat map",
    ),
    MeasureEntry(
        "utility_synds",
        "utility",
        "pipeline.utility.measure:UtilitySyndsMeasure",
        "pipeline.utility.params:UtilitySyndsParams",
        "synthpop 1.2-1 utility.synds(): pMSE of cart/logit/poly models, deviance, pairwise null",
    ),
    MeasureEntry(
        "compare",
        "utility",
        "pipeline.utility.measure:UtilityCompareMeasure",
        "pipeline.utility.params:UtilityCompareParams",
        "synthpop compare.synds(): per-variable distributions (bar data) and utility.tab per variable",
    ),
    MeasureEntry(
        "multi_compare",
        "utility",
        "pipeline.utility.measure:MultiCompareMeasure",
        "pipeline.utility.params:MultiCompareParams",
        "synthpop multi.compare(): a variable's distribution by group, original vs synthetic (bar data)",
    ),
    MeasureEntry(
        "compare_fit",
        "compare_fit",
        "pipeline.compare_fit.measure:CompareFitMeasure",
        "pipeline.compare_fit.params:CompareFitParams",
        "synthpop glm/lm/multinom/polr.synds + compare.fit.synds: CI overlap, std. differences, lack of fit",
    ),
    MeasureEntry(
        "dcr",
        "distance",
        "pipeline.risk.distance.measure:DCRMeasure",
        "pipeline.risk.distance.params:DCRParams",
        "distance to closest record (SDMetrics DCR), holdout share with interval, NNDR",
    ),
    MeasureEntry(
        "linkability",
        "attacks",
        "pipeline.risk.attacks.measure:LinkabilityMeasure",
        "pipeline.risk.attacks.params:LinkabilityParams",
        "anonymeter linkability attack: main, control, baseline rates and risk",
    ),
    MeasureEntry(
        "inference",
        "attacks",
        "pipeline.risk.attacks.measure:InferenceMeasure",
        "pipeline.risk.attacks.params:InferenceParams",
        "anonymeter inference attack: main, control, baseline rates and risk",
    ),
    MeasureEntry(
        "singling_out",
        "attacks",
        "pipeline.risk.attacks.measure:SinglingOutMeasure",
        "pipeline.risk.attacks.params:SinglingOutParams",
        "anonymeter singling-out attack: main, control, baseline rates and risk",
    ),
    MeasureEntry(
        "sdc_risk",
        "sdcrisk",
        "pipeline.risk.sdcrisk.measure:SdcRiskMeasure",
        "pipeline.risk.sdcrisk.params:SdcRiskParams",
        "sdcMicro freqCalc/measure_risk/kAnon/ldiversity/suda2/modRisk of every file",
    ),
]
REGISTRY: dict[str, MeasureEntry] = {e.type: e for e in _ENTRIES}


def holdout_views(types: Iterable[str]) -> dict[str, tuple[Compared, ...]]:
    """The holdout view (:attr:`Measure.holdout_view <pipeline.evaluation.base.Measure.holdout_view>`)
    of every registered measure type among ``types`` that has one (other types: synthesisers' kinds,
    old rows without a type, are left out)."""
    views = {t: REGISTRY[t].measure.holdout_view for t in dict.fromkeys(types) if t in REGISTRY}
    return {t: v for t, v in views.items() if v}


#: the rows a run writes itself, by their ``type`` (not a measure's): the overlap of each set and
#: holdout with the original (family ``integrity``, :mod:`pipeline.run.integrity`) — their report
#: section and row names
RUN_ROWS: dict[str, tuple[ReportSection, frozenset[str]]] = {
    "overlap": (
        ReportSection("Overlap with the original (share of records equal to an original record)"),
        frozenset({"overlap_share", "holdout_overlap_share"}),
    ),
}


def report_section(kind: str) -> ReportSection | None:
    """The report section declared for rows of ``type`` ``kind``: a measure's, a synthesiser's
    (the synthesis rows' type is its kind) or the run's own (:data:`RUN_ROWS`); None when nothing
    declares one (an unknown or missing type)."""
    from pipeline.synthesisers import REGISTRY as SYNTHESISERS

    if kind in REGISTRY:
        return REGISTRY[kind].measure.report_section
    if kind in SYNTHESISERS:
        return SYNTHESISERS[kind].synthesiser.report_section
    return RUN_ROWS[kind][0] if kind in RUN_ROWS else None


def headlines(types: Iterable[str]) -> list[tuple[Headline, str, tuple[str, ...]]]:
    """The first screen's headlines of the measure types among ``types``, in the registry's order:
    (headline, family, the types declaring it) — measures declaring the same headline share it."""
    present = set(types)
    found: dict[Headline, tuple[str, list[str]]] = {}
    for entry in REGISTRY.values():
        if entry.type in present:
            for h in entry.measure.headlines:
                found.setdefault(h, (entry.family, []))[1].append(entry.type)
    return [(h, family, tuple(kinds)) for h, (family, kinds) in found.items()]


def row_measures(types: Iterable[str], kinds: Iterable[str] = ()) -> frozenset[str]:
    """Every row name the measure ``types`` and synthesiser ``kinds`` of a task (and the run's own
    rows) can produce (:attr:`Measure.row_measures <pipeline.evaluation.base.Measure.row_measures>`)."""
    from pipeline.synthesisers import REGISTRY as SYNTHESISERS

    names = set().union(*(rows for _, rows in RUN_ROWS.values()))
    for t in dict.fromkeys(types):
        names |= REGISTRY[t].measure.row_measures
    for k in dict.fromkeys(kinds):
        names |= SYNTHESISERS[k].synthesiser.row_measures
    return frozenset(names)


def families_producing(name: str) -> list[str]:
    """The families whose measures (or synthesisers: ``synthesis``) declare the row name ``name``."""
    from pipeline.synthesisers import REGISTRY as SYNTHESISERS

    found = [e.family for e in REGISTRY.values() if name in e.measure.row_measures]
    found += ["synthesis"] * any(name in k.synthesiser.row_measures for k in SYNTHESISERS.values())
    return list(dict.fromkeys(found))
