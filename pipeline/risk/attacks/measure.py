"""The ``linkability``, ``inference`` and ``singling_out`` measures (anonymeter 1.1.0's attacks, docs/attacks.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pipeline import notices
from pipeline.errors import ParameterError
from pipeline.evaluation.base import Measure, Params, Row
from pipeline.evaluation.comparison import Compared
from pipeline.evaluation.data import EvalData
from pipeline.evaluation.reporting import ReportSection
from pipeline.risk.attacks.params import Columns, InferenceParams, LinkabilityParams, SinglingOutParams
from pipeline.risk.nearest.checks import check_block_on, split_kinds

# the attacks (numba predicates, SciPy) are imported by evaluate: checking a task needs only the
# params and the schema
if TYPE_CHECKING:
    from pipeline.evaluation.execution import Executor
    from pipeline.risk.attacks.result import AttackResult


#: every attack's holdout view: the main (training) against the control (holdout) success rate,
#: anonymeter's risk the residual (docs/attacks.md)
ATTACK_VIEW = (
    Compared("success rate (%)", "main_rate", "rates", holdout="control_rate", residual="risk", scale=100.0),
)
#: every attack's rows: attacks, successes and the rate with its interval of the main, control and
#: baseline attacks, the risk with its interval, and whether random guessing does as well
ATTACK_ROWS = frozenset(
    {f"{attack}_{figure}" for attack in ("main", "control", "baseline")
     for figure in ("attacks", "successes", "rate", "rate_lower", "rate_upper")}
    | {"risk", "risk_lower", "risk_upper", "baseline_beats_main"}
)  # fmt: skip
#: the attacks' section of the report (every attack declares it)
ATTACK_SECTION = ReportSection(
    "Attacks (anonymeter: singling out, linkability, inference)", "pipeline.risk.attacks.section:attack_section"
)


def _prepared(data: EvalData, variables: list[str], executor: Executor) -> EvalData:
    """The variables of the original, the synthetic sets and the holdout, in the executor's form."""
    return executor.prepare(data.select(variables), holdout=True)


def _blocked(block_on: list[str]) -> dict[str, list[str]]:
    """The rows' params entry of exact-match factors (absent when there are none)."""
    return {"block_on": list(block_on)} if block_on else {}


class LinkabilityMeasure(Measure):
    """anonymeter's linkability attack: can the synthetic data link two halves of a record?"""

    type: ClassVar[str] = "linkability"
    family: ClassVar[str] = "attacks"
    holdout_view: ClassVar[tuple[Compared, ...]] = ATTACK_VIEW
    report_section: ClassVar[ReportSection] = ATTACK_SECTION
    row_measures: ClassVar[frozenset[str]] = ATTACK_ROWS
    params_model: ClassVar[type[Params]] = LinkabilityParams
    description: ClassVar[str] = "anonymeter linkability attack: main, control, baseline rates and risk"

    def check(self, data: EvalData) -> None:
        super().check(data)
        split_kinds(data.schema, self.params.variables(), self.type)
        check_block_on(data.schema, self.params.block_on, self.type)

    def check_aggregates(self, data: EvalData, executor: Executor) -> None:
        # before any work: the synthetic sets' size (of a synthesis not made yet: its original's)
        params: LinkabilityParams = self.params  # type: ignore[assignment]
        smallest = min(sum(n) for n in executor.partition_rows(*(data.frames[1:] or data.frames[:1])))
        if params.n_neighbors > smallest:
            raise ParameterError(
                f"linkability: n_neighbors = {params.n_neighbors} exceeds the records of a synthetic set ({smallest})"
            )

    def evaluate(self, data: EvalData, executor: Executor) -> AttackResult:
        from pipeline.risk.attacks.compute import linkability_counts
        from pipeline.risk.attacks.result import AttackResult, attack_rows

        params: LinkabilityParams = self.params  # type: ignore[assignment]
        self.check_aggregates(data, executor)  # the API's run() checks no aggregates
        ready = _prepared(data, params.variables(), executor)
        aux = (list(params.aux_cols[0]), list(params.aux_cols[1]))
        counts = linkability_counts(
            ready, executor, aux, params.n_neighbors, params.n_attacks, params.seed, params.block_on
        )
        p = {"aux_cols": [aux[0], aux[1]], "n_neighbors": params.n_neighbors, **_blocked(params.block_on)}
        rows = [r for i, c in enumerate(counts, start=1) for r in attack_rows(str(i), c, params.confidence_level, p)]
        return AttackResult(self.type, tuple(rows))


class InferenceMeasure(Measure):
    """anonymeter's inference attack: how often does the nearest synthetic record give the secret away?"""

    type: ClassVar[str] = "inference"
    family: ClassVar[str] = "attacks"
    holdout_view: ClassVar[tuple[Compared, ...]] = ATTACK_VIEW
    report_section: ClassVar[ReportSection] = ATTACK_SECTION
    row_measures: ClassVar[frozenset[str]] = ATTACK_ROWS
    params_model: ClassVar[type[Params]] = InferenceParams
    description: ClassVar[str] = "anonymeter inference attack: main, control, baseline rates and risk"

    def check(self, data: EvalData) -> None:
        super().check(data)
        split_kinds(data.schema, self.params.variables(), self.type)
        check_block_on(data.schema, self.params.block_on, self.type)

    def evaluate(self, data: EvalData, executor: Executor) -> AttackResult:
        from pipeline.risk.attacks.compute import inference_counts
        from pipeline.risk.attacks.result import AttackResult, attack_rows

        params: InferenceParams = self.params  # type: ignore[assignment]
        ready = _prepared(data, params.variables(), executor)
        counts = inference_counts(
            ready,
            executor,
            list(params.aux_cols),
            params.secret,
            params.tolerance,
            params.n_attacks,
            params.seed,
            params.block_on,
        )
        p = {"aux_cols": list(params.aux_cols), "secret": params.secret, **_blocked(params.block_on)}
        rows = [r for i, c in enumerate(counts, start=1) for r in attack_rows(str(i), c, params.confidence_level, p)]
        return AttackResult(self.type, tuple(rows))


class SinglingOutMeasure(Measure):
    """anonymeter's singling-out attack: do predicates that single out a synthetic record single
    out one training record (more often than one holdout record)?"""

    type: ClassVar[str] = "singling_out"
    family: ClassVar[str] = "attacks"
    holdout_view: ClassVar[tuple[Compared, ...]] = ATTACK_VIEW
    report_section: ClassVar[ReportSection] = ATTACK_SECTION
    row_measures: ClassVar[frozenset[str]] = ATTACK_ROWS | {"predicates"}  # the predicates found per set
    params_model: ClassVar[type[Params]] = SinglingOutParams
    description: ClassVar[str] = "anonymeter singling-out attack: main, control, baseline rates and risk"

    def columns(self, data: EvalData) -> Columns:
        """The attacked variables, factors first (character variables are refused)."""
        params: SinglingOutParams = self.params  # type: ignore[assignment]
        factors, numerics = split_kinds(data.schema, params.cols or data.schema.names, self.type)
        codes = {v: data.schema[v].missing_codes for v in numerics if data.schema[v].missing_codes}
        return Columns(factors, numerics, codes)

    def check(self, data: EvalData) -> None:
        super().check(data)
        params: SinglingOutParams = self.params  # type: ignore[assignment]
        names = self.columns(data).names
        if params.mode == "multivariate" and params.n_cols > len(names):
            raise ParameterError(
                f"singling_out: n_cols = {params.n_cols} exceeds the {len(names)} variable(s) the predicates may use"
            )

    def evaluate(self, data: EvalData, executor: Executor) -> AttackResult:
        from pipeline.risk.attacks.result import AttackResult, attack_rows
        from pipeline.risk.attacks.singling import singling_out_counts

        params: SinglingOutParams = self.params  # type: ignore[assignment]
        columns = self.columns(data)
        ready = _prepared(data, columns.names, executor)
        counts = singling_out_counts(
            ready,
            executor,
            columns,
            params.mode,
            params.n_attacks,
            params.n_cols,
            params.max_attempts,
            params.seed,
            params.footing,
        )
        short = [f"set {i}: {found}" for i, (_c, found) in enumerate(counts, start=1) if found < params.n_attacks]
        if short:  # anonymeter warns too: the rates still divide by n_attacks, so the risk is underestimated
            notices.warn(
                f"singling_out ({params.mode}): found fewer than n_attacks = {params.n_attacks} predicates that single "
                f"out a record within max_attempts = {params.max_attempts} ({'; '.join(short)}); the risk is likely "
                "underestimated — raise max_attempts, lower n_attacks, or use other columns"
            )
        p = {"mode": params.mode, "cols": columns.names}
        if params.mode == "multivariate":
            p["n_cols"] = params.n_cols
        rows = [
            r
            for i, (c, found) in enumerate(counts, start=1)
            for r in [*attack_rows(str(i), c, params.confidence_level, p), Row(str(i), "predicates", float(found), p)]
        ]
        return AttackResult(self.type, tuple(rows))
