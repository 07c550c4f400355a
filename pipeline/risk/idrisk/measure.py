"""The identification-risk measure: every scenario of a task on the measure contract.

The parameters are :class:`~pipeline.risk.idrisk.params.IdentificationRiskParams`; the counts
come from :mod:`pipeline.risk.idrisk.compute`, the results are
:class:`~pipeline.risk.idrisk.result.IdentificationRiskTaskResult`; the package-like functions
are in :mod:`pipeline.risk.idrisk.api`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from pipeline.errors import ParameterError
from pipeline.evaluation.base import Measure, common_key
from pipeline.evaluation.comparison import Compared
from pipeline.evaluation.data import EvalData
from pipeline.evaluation.footing import Footing, PairedFooting
from pipeline.evaluation.reporting import Headline, ReportSection
from pipeline.risk.idrisk.params import IdentificationRiskParams, ScenarioSetup

# the matching (numba kernels) is imported by the methods that count: checking the params and
# the schema needs none of it
if TYPE_CHECKING:
    from pipeline.evaluation.execution import Executor
    from pipeline.risk.idrisk.result import IdentificationRiskTaskResult, ScenarioResult


class IdentificationRiskMeasure(Measure):
    """Hornby & Hu identification risk of row-aligned partially synthetic sets, per scenario."""

    type = "identification_risk"
    family = "identification_risk"
    params_model = IdentificationRiskParams
    description = "Hornby & Hu identification risk with radius matching and radius sweeps"
    needs_row_aligned = True
    #: exp.risk is a sum over records (no normalised form); file_risk and true.rate are shares
    baseline_measures: ClassVar[Mapping[str, float | None]] = {"exp.risk": None, "file_risk": 1.0, "true.rate": 1.0}
    holdout_view: ClassVar[tuple[Compared, ...]] = (
        Compared("identification risk (file_risk, %)", "file_risk", "footing", scale=100.0),
    )
    report_section: ClassVar[ReportSection] = ReportSection(
        "Identification risk (Hornby & Hu)", "pipeline.risk.idrisk.section:identification_risk_section"
    )
    #: the share of records matched correctly at the maximising radius r*; with a holdout, the
    #: release is judged on the excess over it (section.headline_details)
    headlines: ClassVar[tuple[Headline, ...]] = (
        Headline(
            "identification risk at r* (%)",
            "file_risk_at_max",
            "max",
            0.05,
            scale=100.0,
            details="pipeline.risk.idrisk.section:headline_details",
        ),
    )
    row_measures: ClassVar[frozenset[str]] = frozenset(
        {"exp.risk", "file_risk", "true.rate", "false.rate", "s", "file_risk_at_max", "r_star", "r_star_at_boundary",
         "excluded_share", "repetition_file_risk"}
    )  # fmt: skip
    params: IdentificationRiskParams

    def baseline_units(self, data: EvalData) -> list[tuple[Measure, Footing]]:
        """One unit per scenario: its records' synthesised values against those of holdout records
        with the same categorical known values (row-aligned data: docs/baselines.md)."""
        p = self.params
        units: list[tuple[Measure, Footing]] = []
        for name, scenario in p.scenarios.items():
            plan = p.setup(name, data.schema, data.columns).plan
            cells = tuple(v for v in plan.categorical if v in scenario.known)
            one = IdentificationRiskMeasure(p.model_copy(update={"scenarios": {name: scenario}}))
            units.append((one, PairedFooting(cells, tuple(scenario.synthesised), tuple(scenario.variables()))))
        return units

    def check(self, data: EvalData) -> None:
        """Variables present, repetitions dividing m, and every scenario resolved against the schema.

        Row alignment and missing continuous values need a pass over the data; they are checked
        at the start of :meth:`evaluate`, before any matching.
        """
        super().check(data)
        p = self.params
        if p.sets_per_repetition and data.m % p.sets_per_repetition:
            raise ParameterError(
                f"sets_per_repetition={p.sets_per_repetition} does not divide the {data.m} synthetic sets"
            )
        for name in p.scenarios:
            p.setup(name, data.schema, data.columns)

    def block_keys(self, data: EvalData) -> tuple[str, ...]:
        """The categorical variables every scenario matches exactly (its key blocks contain them)."""
        p = self.params
        return common_key([p.setup(name, data.schema, data.columns).plan.categorical for name in p.scenarios])

    def check_aggregates(self, data: EvalData, executor: Executor) -> None:
        """Row alignment and missing continuous values (:func:`check_frames`, as :meth:`evaluate`)."""
        from pipeline.risk.idrisk.checks import check_frames

        p = self.params
        setups = [p.setup(name, data.schema, data.columns) for name in p.scenarios]
        continuous = list(dict.fromkeys(v for s in setups for v in s.plan.continuous))
        check_frames(executor.prepare(data.select(p.variables())), executor, continuous, p.na_action)

    def evaluate(self, data: EvalData, executor: Executor) -> IdentificationRiskTaskResult:
        """Every scenario on the data in the form the executor chose (in memory or key blocks).

        The declared variables are kept (persisted on a cluster); aggregates check row
        alignment and missing continuous values (and, under ``na_action: no_match``, count the
        records each scenario leaves out of the matching) in the pass that counts the records
        per key for the key blocks, before any matching; then each scenario's counts (c and T
        per record at a fixed radius, (c, T) histograms for a sweep) are computed on key blocks
        that all scenarios share (:func:`~pipeline.risk.idrisk.compute.scenario_blocks`), all
        scenarios together.
        """
        from pipeline.risk.idrisk.checks import frame_checks, judge_checks
        from pipeline.risk.idrisk.compute import (
            count_histograms,
            count_records,
            records_matrices,
            scenario_blocks,
            sweep_statistics,
        )
        from pipeline.risk.idrisk.result import RadiusSweepResult

        p = self.params
        setups = {name: p.setup(name, data.schema, data.columns) for name in p.scenarios}
        prepared = executor.prepare(data.select(p.variables()))
        prepared = prepared.with_frames(executor.persist(*prepared.frames))
        continuous, na_action, groups = self._matched(setups)
        plans = [s.plan for s in setups.values()]
        on = scenario_blocks(prepared, executor, plans, frame_checks(prepared, executor, continuous, groups))
        n, excluded = judge_checks(on[0].along, continuous, na_action, groups)
        counts = [
            count_records(on[k], data.m, s.plan, [s.radius or {}])
            if s.grid is None
            else count_histograms(on[k], s.plan, s.grid.combos)
            for k, s in enumerate(setups.values())
        ]
        results: dict[str, ScenarioResult] = {}
        for (name, s), value in zip(setups.items(), executor.compute(*counts), strict=True):
            if s.grid is None:
                results[name] = self._from_records(s, *records_matrices(value, n, data.m))
            else:
                stats = sweep_statistics(value, n, data.m, len(s.grid.combos))
                results[name] = RadiusSweepResult(s.plan, s.grid, tuple(stats), p.criterion)
        return self._task_result(results, excluded, n)

    def evaluate_mixtures(
        self, first: EvalData, second: EvalData, takes: Sequence[np.ndarray], executor: Executor
    ) -> Iterator[IdentificationRiskTaskResult] | None:
        """c_i and T_i depend on record i's values and the synthetic sets alone, so they are
        counted once per record and radius on ``first`` and on ``second``, and each mixture's
        statistics come from the mixed per-record counts (the same histograms, hence the same
        rows, as :meth:`evaluate` on the mixed data).  Data the executor keeps in memory only
        (the per-record counts of every radius are held on the driver); else None."""
        from pipeline.risk.idrisk.checks import check_frames, unmatched_records
        from pipeline.risk.idrisk.compute import count_records, records_matrices, scenario_blocks

        if not executor.in_memory(first):
            return None
        p = self.params
        setups = {name: p.setup(name, first.schema, first.columns) for name in p.scenarios}
        pair = [executor.prepare(d.select(p.variables())) for d in (first, second)]
        matched = self._matched(setups)
        records = []
        plans = [s.plan for s in setups.values()]
        for d in pair:
            n, _ = check_frames(d, executor, *matched)
            on = scenario_blocks(d, executor, plans)
            counts = [count_records(on[k], d.m, s.plan, _radii(s)) for k, s in enumerate(setups.values())]
            per_scenario = [
                records_matrices(value, n, d.m, len(_radii(s)))
                for s, value in zip(setups.values(), executor.compute(*counts), strict=True)
            ]
            records.append((per_scenario, [unmatched_records(d.original, g) for g in matched[2]]))
        (first_counts, first_out), (second_counts, second_out) = records

        def mixture(take: np.ndarray) -> IdentificationRiskTaskResult:
            per_record = take[None, :, None]
            results = {
                name: self._from_records(s, np.where(per_record, c2, c1), np.where(per_record, t2, t1))
                for (name, s), (c1, t1), (c2, t2) in zip(setups.items(), first_counts, second_counts, strict=True)
            }
            excluded = [int(np.where(take, b, a).sum()) for a, b in zip(first_out, second_out, strict=True)]
            return self._task_result(results, excluded, n)

        return (mixture(take) for take in takes)

    def _matched(self, setups: Mapping[str, ScenarioSetup]) -> tuple[list[str], str, list[tuple[str, ...]]]:
        """The radius-matched variables, the missing-value action and each scenario's group of them."""
        continuous = list(dict.fromkeys(v for s in setups.values() for v in s.plan.continuous))
        return continuous, self.params.na_action, [s.plan.continuous for s in setups.values()]

    def _from_records(self, setup: ScenarioSetup, c: np.ndarray, t: np.ndarray) -> ScenarioResult:
        """A scenario's result from c and T per radius combination, record and set."""
        from pipeline.risk.idrisk.compute import records_statistics
        from pipeline.risk.idrisk.result import IdentificationRiskResult, RadiusSweepResult

        if setup.grid is None:
            return IdentificationRiskResult(plan=setup.plan, radius=setup.radius, c=c[0], T=t[0])
        return RadiusSweepResult(setup.plan, setup.grid, tuple(records_statistics(c, t)), self.params.criterion)

    def _task_result(
        self, results: dict[str, ScenarioResult], excluded: Sequence[int], n: int
    ) -> IdentificationRiskTaskResult:
        from pipeline.risk.idrisk.result import IdentificationRiskTaskResult

        p = self.params
        shares = (
            {name: k / n if n else 0.0 for name, k in zip(results, excluded, strict=True)}
            if p.na_action == "no_match"
            else {}
        )
        return IdentificationRiskTaskResult(results, p.sets_per_repetition, shares)


def _radii(setup: ScenarioSetup) -> list[Mapping[str, float]]:
    """The radius combinations of a scenario: its grid's, or its one radius ({} for exact matching)."""
    return list(setup.grid.combos) if setup.grid is not None else [setup.radius or {}]
