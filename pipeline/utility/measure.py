"""The utility measures on the measure contract.

==================  ==============================  ================================================
task ``type``       measure                         synthpop function (wrapper in :mod:`~pipeline.utility.api`)
==================  ==============================  ================================================
``utility_gen``     :class:`UtilityGenMeasure`      ``utility.gen`` -> ``utility_gen``
``utility_tab``     :class:`UtilityTabMeasure`      ``utility.tab`` -> ``utility_tab``
``utility_tables``  :class:`UtilityTablesMeasure`   ``utility.tables`` -> ``utility_tables``
``utility_synds``   :class:`UtilitySyndsMeasure`    ``utility.synds`` (1.2-1) -> ``utility_synds``
``compare``         :class:`UtilityCompareMeasure`  ``compare.synds`` -> ``compare_synds``
``multi_compare``   :class:`MultiCompareMeasure`    ``multi.compare`` -> ``multi_compare``
==================  ==============================  ================================================

Each measure has one parameter model (:mod:`pipeline.utility.params`, the only validation),
checks the data it is given (variables present, enough synthetic sets) and evaluates over an
:class:`~pipeline.evaluation.data.EvalData` with an
:class:`~pipeline.evaluation.execution.Executor` (:mod:`pipeline.utility.compute`); its result
is synthpop-shaped (:mod:`pipeline.utility.result`) with tidy rows whose params name the
table's variables (``{"vars": [...]}``; none for ``utility_gen``).  ``cont_na`` codes are
merged into the data's schema by the data boundary before anything else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.errors import ParameterError
from pipeline.evaluation.base import Measure
from pipeline.evaluation.data import EvalData
from pipeline.evaluation.reporting import Headline, ReportSection
from pipeline.utility.params import (
    TAB_STATS,
    MultiCompareParams,
    UtilityCompareParams,
    UtilityGenParams,
    UtilitySyndsParams,
    UtilityTablesParams,
    UtilityTabParams,
    check_incomplete,
    check_table_variables,
    compared_variables,
    synds_variables,
    variable_kinds,
    with_cont_na,
)

# the computations (numba models, SciPy's statistics) are imported by evaluate: checking a task
# (validate) needs only the params
if TYPE_CHECKING:
    from pipeline.evaluation.execution import Executor
    from pipeline.utility.gen import UtilityGenResult
    from pipeline.utility.result import (
        MultiCompareResult,
        UtilityCompareResult,
        UtilitySyndsResult,
        UtilityTablesResult,
        UtilityTabResult,
    )


#: the utility family's section (every utility measure declares it)
UTILITY_SECTION = ReportSection("Utility", "pipeline.utility.section:utility_section")
#: utility.gen's statistics per set (gen.GEN_STATS) and the separation flags of a logit model
GEN_ROWS = frozenset(
    {"pMSE", "S_pMSE", "pMSEExp", "df", "SPECKS", "S_SPECKS", "PO50", "S_PO50", "U", "S_U", "separation",
     "separated_records", "S_pMSE_without_separated"}
)  # fmt: skip
#: utility.tab's statistics (of one table, or of every table of utility.tables)
TAB_ROWS = frozenset({*TAB_STATS, "nempty"})
#: S_pMSE of the table measures, the worst table (utility_tab and utility_tables share the headline)
TABLES_HEADLINE = Headline("S_pMSE (tables, worst; ratio)", "S_pMSE", "mean", 10.0, unit="")


class _UtilityMeasure(Measure):
    """What the three utility measures share: the family, and their own ``cont_na`` codes merged
    into the data's schema once, through the data boundary, for the checks and the evaluation."""

    family = "utility"
    report_section = UTILITY_SECTION
    params: UtilityGenParams | UtilityTabParams | UtilityTablesParams | UtilityCompareParams | MultiCompareParams

    def coded(self, data: EvalData) -> EvalData:
        return with_cont_na(data, self.params.cont_na)

    def check(self, data: EvalData) -> None:
        super().check(data)
        self.check_coded(self.coded(data))

    def check_coded(self, data: EvalData) -> None:
        """Checks on the data with the measure's ``cont_na`` applied (none by default)."""


class UtilityGenMeasure(_UtilityMeasure):
    """Propensity-score utility of the synthetic sets (synthpop's ``utility.gen``)."""

    type = "utility_gen"
    params_model = UtilityGenParams
    description = "synthpop utility.gen(): propensity pMSE, S_pMSE, pMSE ratio (logit or CART)"
    #: synthpop's guide: S_pMSE below 10 for a synthesis model that captures the data
    headlines = (Headline("S_pMSE (utility_gen; ratio)", "S_pMSE", "mean", 10.0, unit=""),)
    row_measures = GEN_ROWS
    params: UtilityGenParams

    def check_coded(self, data: EvalData) -> None:
        names = compared_variables(self.params.vars, data)
        check_incomplete(self.params, names, data.kept(names, self.params.not_synthesised), data.m)

    def check_aggregates(self, data: EvalData, executor: Executor) -> None:
        """A logit model over ``max_params`` from the original's value counts alone (the sets only
        add levels), so that it is refused before any work."""
        if self.params.method != "logit":
            return
        from pipeline.utility.checks import logit_parameters_at_least

        coded = self.coded(data)
        names = compared_variables(self.params.vars, coded)
        nparams = logit_parameters_at_least(
            coded, executor, names, self.params.ngroups is not None, self.params.maxorder
        )
        if nparams > self.params.max_params:
            raise ParameterError(
                f"utility_gen: the logit model would have at least {nparams} parameters, more than max_params = "
                f"{self.params.max_params}; select variables with vars, lower maxorder or raise max_params"
            )

    def evaluate(self, data: EvalData, executor: Executor) -> UtilityGenResult:
        from pipeline.utility.gen import evaluate_gen

        return evaluate_gen(self.params, self.coded(data), executor)


class UtilityTabMeasure(_UtilityMeasure):
    """Table utility of one table of the synthetic sets (synthpop's ``utility.tab``)."""

    type = "utility_tab"
    params_model = UtilityTabParams
    description = "synthpop utility.tab(): table utility (pMSE, S_pMSE, VW, FT, JSD, SPECKS, ...)"
    headlines = (TABLES_HEADLINE,)
    row_measures = TAB_ROWS
    params: UtilityTabParams

    def evaluate(self, data: EvalData, executor: Executor) -> UtilityTabResult:
        from pipeline.utility.compute import evaluate_tab

        return evaluate_tab(self.params, self.coded(data), executor)


class UtilityTablesMeasure(_UtilityMeasure):
    """Table utility of every one-, two- or three-way table (synthpop's ``utility.tables``)."""

    type = "utility_tables"
    params_model = UtilityTablesParams
    description = "synthpop utility.tables(): every low-order table and the heat map"
    headlines = (TABLES_HEADLINE,)
    row_measures = TAB_ROWS
    params: UtilityTablesParams

    def check_coded(self, data: EvalData) -> None:
        check_table_variables(compared_variables(self.params.vars, data), self.params.tables, self.params.third_var)

    def evaluate(self, data: EvalData, executor: Executor) -> UtilityTablesResult:
        from pipeline.utility.compute import evaluate_tables

        return evaluate_tables(self.params, self.coded(data), executor)


# ---------------------------------------------------------------------------------------------
# synthpop's functions
# ---------------------------------------------------------------------------------------------


class UtilitySyndsMeasure(Measure):
    """Propensity utility with several models per call (synthpop 1.2-1's ``utility.synds``)."""

    type = "utility_synds"
    family = "utility"
    report_section = UTILITY_SECTION
    row_measures = frozenset(
        {"pMSE", "pMSE_sd", "deviance", "deviance_sd", "deviance_df", "null_pMSE", "null_mean_diff", "null_mean_ratio"}
    )
    params_model = UtilitySyndsParams
    description = "synthpop 1.2-1 utility.synds(): pMSE of cart/logit/poly models, deviance, pairwise null"
    params: UtilitySyndsParams

    def check(self, data: EvalData) -> None:
        super().check(data)
        if self.params.null_utility and data.m == 1:
            raise ParameterError("utility_synds: null_utility needs m > 1 synthetic data sets (the null pairs them)")
        variable_kinds(data.schema, synds_variables(self.params, data))

    def evaluate(self, data: EvalData, executor: Executor) -> UtilitySyndsResult:
        from pipeline.utility.compute import evaluate_synds

        return evaluate_synds(self.params, data, executor)


class UtilityCompareMeasure(_UtilityMeasure):
    """Per-variable distributions and one-way table utility (synthpop's ``compare.synds``)."""

    type = "compare"
    params_model = UtilityCompareParams
    description = "synthpop compare.synds(): per-variable distributions (bar data) and utility.tab per variable"
    #: the distributions (percent or count per category) and the per-variable table utility
    row_measures = frozenset({"percent", "count", *TAB_STATS})
    params: UtilityCompareParams

    def check_coded(self, data: EvalData) -> None:
        compared_variables(self.params.vars, data)

    def evaluate(self, data: EvalData, executor: Executor) -> UtilityCompareResult:
        from pipeline.utility.compare import evaluate_compare

        return evaluate_compare(self.params, self.coded(data), executor)


class MultiCompareMeasure(_UtilityMeasure):
    """One variable in the original and the synthetic data within groups (synthpop's ``multi.compare``)."""

    type = "multi_compare"
    params_model = MultiCompareParams
    description = "synthpop multi.compare(): a variable's distribution by group, original vs synthetic (bar data)"
    #: records per group (not "records", profile's row of a whole data set); count and percent per
    #: category (and density per histogram bin)
    row_measures = frozenset({"group_records", "count", "percent", "density"})
    params: MultiCompareParams

    def check_coded(self, data: EvalData) -> None:
        outside = [i for i in self.params.msel or () if i > data.m]
        if outside:
            raise ParameterError(f"multi_compare: msel {outside} beyond the {data.m} synthetic set(s)")

    def check_aggregates(self, data: EvalData, executor: Executor) -> None:
        """Too many groups (or values of a numeric ``by`` variable) in the original alone is refused
        before any work; groups only the synthetic sets hold are found when evaluating."""
        from pipeline.utility.multi_compare import count_groups

        coded = self.coded(data)
        count_groups(self.params, EvalData(coded.frames[:1], coded.schema), executor)

    def evaluate(self, data: EvalData, executor: Executor) -> MultiCompareResult:
        from pipeline.utility.multi_compare import evaluate_multi_compare

        return evaluate_multi_compare(self.params, self.coded(data), executor)
