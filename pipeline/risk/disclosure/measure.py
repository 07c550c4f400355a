"""The ``disclosure`` measure: synthpop's ``disclosure`` / ``multi.disclosure`` on the measure contract.

A task asks for one target (``target``: synthpop ``disclosure``) or several (``targets``, or
neither: every variable that is not a key; synthpop ``multi.disclosure``), with one key set
or several (``keys: [[sex, age], [sex, edu, marital]]``)::

    - type: disclosure
      keys: [sex, age, edu, marital]
      targets: [ls, depress, smoke]
      usekeysNA: {age: false}
      cont_na: {income: -8}

Every row carries params ``{"keys": [...keys in the order given...], "target": name}`` (the same
setting whatever the column order of a source; the result objects keep synthpop's data order).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar

from pipeline.data.schema import Variable
from pipeline.errors import ParameterError
from pipeline.evaluation.base import Measure, common_key
from pipeline.evaluation.comparison import Compared
from pipeline.evaluation.data import EvalData
from pipeline.evaluation.reporting import Explanation, Headline, ReportSection
from pipeline.risk.disclosure.coding import MISSING, build_coders
from pipeline.risk.disclosure.params import DisclosureOptions, DisclosureParams, bind_options

# the counting (numba kernels) is imported by the methods that count: checking the params and
# the schema needs none of it
if TYPE_CHECKING:
    from pipeline.evaluation.execution import Executor
    from pipeline.risk.disclosure.result import DisclosureResults

#: the flags that say a figure is high by construction (keys released unchanged) or from prior
#: knowledge (synthpop's check_1way / check_2way); the measure decides, the report only words it
DISCLOSURE_HEADLINES = (
    Headline(
        "repU (%)",
        "repU",
        "max",
        5.0,
        explained_by=(
            Explanation(
                "same_key_counts",
                "keys released unchanged (the original's count in every key combination, {sets}): "
                "repU = UiO by construction",
                always=True,
            ),
        ),
    ),
    Headline(
        "DiSCO (%)",
        "DiSCO",
        "max",
        5.0,
        explained_by=(
            Explanation(
                "same_key_target_counts",
                "keys and target released unchanged (the original's count in every key and target combination, "
                "{sets}): DiSCO = Dorig by construction",
                always=True,
            ),
            Explanation(
                "check_2way",
                "prior knowledge (synthpop's check_2way, {sets}): up to {largest:g} key/target level pairs in which "
                "the key's level nearly fixes the target's, as when the target recodes a key: much of DiSCO is "
                "known without the release",
            ),
            Explanation(
                "check_1way",
                "prior knowledge (synthpop's check_1way, {sets}): one target level holds most disclosive records",
            ),
        ),
    ),
)

#: one key set of a task: its keys in data order, its targets, and their options
KeySet = tuple[tuple[str, ...], list[str], list[DisclosureOptions]]


class DisclosureMeasure(Measure):
    """Identity and attribute disclosure measures for every key set and target of the params."""

    type = "disclosure"
    family = "disclosure"
    params_model = DisclosureParams
    description = "synthpop disclosure() / multi.disclosure(): repU, DiSCO, UiO, Dorig, CAPs, flags"
    #: percentages of original records that depend on the synthetic sets (docs/baselines.md)
    baseline_measures: ClassVar[Mapping[str, float | None]] = dict.fromkeys(
        ("UiOiS", "repU", "iS", "DiS", "DiSCO", "DiSDiO", "DCAP", "TCAP"), 100.0
    )
    holdout_view: ClassVar[tuple[Compared, ...]] = (
        Compared("repU (%)", "repU", "footing"),
        Compared("DiSCO (%)", "DiSCO", "footing"),
    )
    report_section: ClassVar[ReportSection] = ReportSection(
        "Disclosure risk (synthpop identity and attribute measures)",
        "pipeline.risk.disclosure.section:disclosure_section",
    )
    headlines: ClassVar[tuple[Headline, ...]] = DISCLOSURE_HEADLINES
    row_measures: ClassVar[frozenset[str]] = frozenset(
        {"UiO", "UiS", "UiOiS", "repU", "Dorig", "Dsyn", "iS", "DiS", "DiSCO", "DiSDiO", "max_denom", "mean_denom",
         "baseCAPd", "CAPd", "CAPs", "DCAP", "TCAP", "check_1way", "check_2way", "same_key_counts",
         "same_key_target_counts"}
    )  # fmt: skip
    params: DisclosureParams

    def bound_key_sets(self, data: EvalData) -> list[KeySet]:
        """Every key set with its keys in data order, its targets (defaults resolved against the
        data's variables) and their bound options.

        Raises
        ------
        ParameterError
            No variable left to be a default target, or a per-target option that does not fit
            the default targets.
        """
        p = self.params
        out = []
        for keys in p.key_sets:
            if p.target is not None:
                targets = [p.target]
            elif p.targets is not None:
                targets = list(p.targets)
            else:
                targets = [c for c in data.columns if c not in keys]
                if not targets:
                    raise ParameterError(f"{self.type}: no target variable left besides the keys {keys}")
            try:
                options = bind_options(p, keys, targets, data.schema.cont_na)
            except ValueError as e:
                raise ParameterError(f"{self.type}: {e}") from None
            out.append((tuple(c for c in data.columns if c in keys), targets, options))
        return out

    def check(self, data: EvalData) -> None:
        """The variables, and what the schema tells about ``cont_na`` and the levels named in
        ``exclude_keylevs``/``exclude_targetlevs`` (levels of numbers, and "Missing", are
        checked against the original's value counts when evaluating)."""
        super().check(data)
        not_numeric = [v for v in self.params.cont_na or {} if not data.schema[v].is_numeric]
        if not_numeric:
            raise ParameterError(
                f"cont_na: {', '.join(map(repr, not_numeric))}: categorical, not numeric; special missing codes "
                "are for numeric variables"
            )
        for _, targets, options in self.bound_key_sets(data):
            data.require(targets)
            for o in options:
                for key, key_level, target_level in o.exclude:
                    _known_level(data.schema[o.target], target_level, "exclude_targetlevs", "the target")
                    _known_level(data.schema[key], key_level, "exclude_keylevs", "the key")

    def block_keys(self, data: EvalData) -> tuple[str, ...]:
        """The factor keys every key set shares whose values are their cells (not grouped, no level
        spelled like the missing category): each key set's cells then lie in one block of them."""
        shared = common_key([keys for keys, _, _ in self.bound_key_sets(data)])
        grouped = {
            k for _, _, options in self.bound_key_sets(data) for o in options for k, n in o.ngroups_keys.items() if n
        }
        one_to_one = [k for k in shared if data.schema[k].is_factor and MISSING not in (data.schema[k].levels or ())]
        return tuple(k for k in one_to_one if k not in grouped)

    def check_aggregates(self, data: EvalData, executor: Executor) -> None:
        """What the value counts tell: no key or target only missing, special missing codes that
        occur (the coders :meth:`evaluate` builds, from one pass of value counts only: checking
        needs no joint counts)."""
        from pipeline.risk.disclosure.checks import value_stats

        key_sets = self.bound_key_sets(data)
        variables = list(dict.fromkeys(v for keys, targets, _ in key_sets for v in (*keys, *targets)))
        stats = value_stats(executor.prepare(data.select(variables)), executor, variables)
        for keys, _, options in key_sets:
            first = options[0]
            build_coders(stats, keys, first.ngroups_keys, first.cont_na, first.style)
            for o in options:
                build_coders(stats, [o.target], {o.target: o.ngroups_target}, o.cont_na, o.style)

    def evaluate(self, data: EvalData, executor: Executor) -> DisclosureResults:
        from pipeline.risk.disclosure.assemble import multi_result
        from pipeline.risk.disclosure.compute import gather_stats, key_set_results
        from pipeline.risk.disclosure.result import DisclosureResults

        key_sets = self.bound_key_sets(data)
        variables = list(dict.fromkeys(v for keys, targets, _ in key_sets for v in (*keys, *targets)))
        prepared = executor.prepare(data.select(variables))
        # on the task's key-block layout each block's counts are final: merged block by block
        laid_out = executor.laid_out(prepared, self.block_keys(data))
        prepared = laid_out or prepared
        # the keys of each key set counted with each of its targets, in one pass over the records
        counted = [(keys, [o.target for o in options]) for keys, _, options in key_sets]
        stats = gather_stats(prepared, executor, variables, key_sets=counted, aligned=laid_out is not None)
        results = []
        for keys, targets, options in key_sets:
            per_target = key_set_results(prepared, executor, stats, keys, options)
            if self.params.several_targets:
                by_target = dict(zip(targets, per_target, strict=True))
                results.append(multi_result(by_target, self.params.ident_meas, self.params.attrib_meas))
            else:
                results.append(per_target[0])
        return DisclosureResults(tuple(results), tuple(tuple(keys) for keys in self.params.key_sets))


def _known_level(variable: Variable, level: str, option: str, role: str) -> None:
    """A factor's level named in an exclusion must be one of its schema levels (or "Missing")."""
    if variable.is_factor and level != MISSING and level not in (variable.levels or ()):
        raise ParameterError(f"{option}: {level!r} is not a level of {role} {variable.name!r} in the original")


__all__ = ["DisclosureMeasure", "DisclosureParams"]
