"""The utility measures on the measure contract, and synthpop's function names as thin wrappers.

=================  ==========================  =================================================
task ``type``      measure                      synthpop function (wrapper here)
=================  ==========================  =================================================
``utility_gen``    :class:`UtilityGenMeasure`     ``utility.gen`` -> :func:`utility_gen`
``utility_tab``    :class:`UtilityTabMeasure`     ``utility.tab`` -> :func:`utility_tab`
``utility_tables`` :class:`UtilityTablesMeasure`  ``utility.tables`` -> :func:`utility_tables`
=================  ==========================  =================================================

Each measure has one parameter model (:mod:`pipeline.utility.params`, the only validation),
checks the data it is given (variables present, enough synthetic sets) and evaluates over an
:class:`~pipeline.evaluation.data.EvalData` with an
:class:`~pipeline.evaluation.execution.Executor`; its result is synthpop-shaped
(:class:`~pipeline.utility.gen.UtilityGenResult`, :class:`~pipeline.utility.tab.UtilityTabResult`,
:class:`~pipeline.utility.tab.UtilityTablesResult`) with tidy rows whose params name the
table's variables (``{"vars": [...]}``; none for ``utility_gen``).  ``cont_na`` codes are
merged into the data's schema by the data boundary before anything else.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pipeline.data.schema import Schema
from pipeline.evaluation.base import Measure
from pipeline.evaluation.data import EvalData, as_eval_data
from pipeline.evaluation.execution import Executor
from pipeline.utility.gen import UtilityGenResult, check_resampling, evaluate_gen
from pipeline.utility.params import (
    UtilityGenParams,
    UtilityTablesParams,
    UtilityTabParams,
    check_table_variables,
    check_unsynthesised,
    compared_variables,
    with_cont_na,
)
from pipeline.utility.tab import UtilityTablesResult, UtilityTabResult, evaluate_tab, evaluate_tables

__all__ = [
    "UtilityGenMeasure",
    "UtilityGenParams",
    "UtilityTabMeasure",
    "UtilityTabParams",
    "UtilityTablesMeasure",
    "UtilityTablesParams",
    "utility_gen",
    "utility_tab",
    "utility_tables",
]


class _UtilityMeasure(Measure):
    """What the three utility measures share: the family, and their own ``cont_na`` codes merged
    into the data's schema once, through the data boundary, for the checks and the evaluation."""

    family = "utility"
    params: UtilityGenParams | UtilityTabParams | UtilityTablesParams

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
    params: UtilityGenParams

    def check_coded(self, data: EvalData) -> None:
        check_unsynthesised(compared_variables(self.params.vars, data), self.params.not_synthesised or [])
        check_resampling(self.params, data.m)

    def evaluate(self, data: EvalData, executor: Executor) -> UtilityGenResult:
        return evaluate_gen(self.params, self.coded(data), executor)


class UtilityTabMeasure(_UtilityMeasure):
    """Table utility of one table of the synthetic sets (synthpop's ``utility.tab``)."""

    type = "utility_tab"
    params_model = UtilityTabParams
    description = "synthpop utility.tab(): table utility (pMSE, S_pMSE, VW, FT, JSD, SPECKS, ...)"
    params: UtilityTabParams

    def evaluate(self, data: EvalData, executor: Executor) -> UtilityTabResult:
        return evaluate_tab(self.params, self.coded(data), executor)


class UtilityTablesMeasure(_UtilityMeasure):
    """Table utility of every one-, two- or three-way table (synthpop's ``utility.tables``)."""

    type = "utility_tables"
    params_model = UtilityTablesParams
    description = "synthpop utility.tables(): every low-order table and the heat map"
    params: UtilityTablesParams

    def check_coded(self, data: EvalData) -> None:
        check_table_variables(compared_variables(self.params.vars, data), self.params.tables, self.params.third_var)

    def evaluate(self, data: EvalData, executor: Executor) -> UtilityTablesResult:
        return evaluate_tables(self.params, self.coded(data), executor)


# ---------------------------------------------------------------------------------------------
# synthpop's functions
# ---------------------------------------------------------------------------------------------
def utility_gen(
    original: Any,
    synthetic: Any,
    method: str = "cart",
    vars: Sequence[str] | str | None = None,
    maxorder: int = 1,
    cont_na: Mapping[str, Any] | None = None,
    ngroups: int | None = None,
    cp: float = 1e-3,
    minbucket: int = 5,
    nperms: int = 50,
    resamp_method: str | None = None,
    k_syn: bool = False,
    aggregate: bool = False,
    maxit: int = 200,
    max_params: int = 400,
    seed: int | None = None,
    schema: Schema | None = None,
    *,
    not_synthesised: Sequence[str] | None = None,
    minsplit: int | None = None,
    maxdepth: int = 30,
    compress: bool = True,
    executor: Executor | None = None,
) -> UtilityGenResult:
    """Propensity-score utility of synthetic data (synthpop's ``utility.gen``).

    Parameters
    ----------
    original, synthetic
        The original data and one synthetic set or a list of m sets (pandas/Dask frames or
        Datasets).
    method : {"cart", "logit"}
        Propensity model: an rpart-compatible classification tree or a logistic regression
        with all interactions up to ``maxorder + 1`` variables.
    vars : sequence of str, optional
        Variables to compare (default: every variable of the original that every synthetic
        set has).
    maxorder : int
        Highest interaction order beyond main effects (logit).
    cont_na : mapping, optional
        Special missing codes of numeric variables (added to the schema's).  Each code must
        occur in the original data.
    ngroups : int, optional
        Bin every numeric variable into this many quantile groups first.
    cp, minbucket, minsplit, maxdepth
        ``rpart.control`` (CART); ``minsplit`` defaults to ``3 * minbucket`` as in rpart.
    nperms : int
        Number of permutations for ``resamp_method="perm"``.
    resamp_method : {None, "perm", "pairs", "none"}
        Null distribution of pMSE.  ``None`` chooses as synthpop: ``"pairs"`` for incomplete
        syntheses, ``"perm"`` for CART, analytic for logit.
    k_syn : bool
        The synthetic sample size was itself synthesised (``c = 0.5``, one more parameter).
    aggregate : bool
        Logit: fit on the distinct records with frequency weights (in memory).
    maxit : int
        IRLS iteration limit (``glm.control(maxit)``; convergence: ``epsilon = 1e-8``).
    max_params : int
        Logit: refuse models with more parameters than this.
    seed : int, optional
        Seed of the permutation resamples.
    schema : Schema, optional
        Needed for Dask frames not wrapped in Datasets.
    not_synthesised : sequence of str, optional
        Variables copied unchanged from the original (an incomplete synthesis).
    compress : bool
        Logit: merge identical stacked records (per partition) and weight them by their
        number.  Exact (identical records have identical contributions); it only changes
        the order of floating-point sums.  Not used for permutation resamples on partitions.
    executor : Executor, optional
        Where to compute (default: :meth:`Executor.current`, whose policy decides between
        memory and partitions).
    """
    params = {
        "method": method, "vars": vars, "maxorder": maxorder, "cont_na": cont_na, "ngroups": ngroups, "cp": cp,
        "minbucket": minbucket, "nperms": nperms, "resamp_method": resamp_method, "k_syn": k_syn,
        "aggregate": aggregate, "maxit": maxit, "max_params": max_params, "seed": seed,
        "not_synthesised": not_synthesised, "minsplit": minsplit, "maxdepth": maxdepth, "compress": compress,
    }  # fmt: skip
    return UtilityGenMeasure(params).run(as_eval_data(original, synthetic, schema), executor)


def utility_tab(
    original: Any,
    synthetic: Any,
    vars: Sequence[str] | str,
    *,
    ngroups: int = 5,
    use_na: bool = True,
    max_table: float = 1e6,
    k_syn: bool = False,
    cont_na: Mapping[str, Any] | None = None,
    schema: Schema | None = None,
    executor: Executor | None = None,
) -> UtilityTabResult:
    """Table utility of synthetic data (synthpop's ``utility.tab``).

    Parameters
    ----------
    original, synthetic
        The original data and one synthetic set or a list of m sets (pandas/Dask frames or
        Datasets).
    vars : sequence of str
        Variables forming the table (1-, 2-, 3-way or more).
    ngroups : int
        Number of quantile groups for numeric variables.
    use_na : bool
        Missing values form a category (when the original has some); otherwise records with a
        missing value are left out of the tables.
    max_table : float
        Error if the table would have more cells than this (synthpop's ``max.table``; forwarded
        also by :func:`utility_tables`, see spec §5.3.6).
    k_syn : bool
        The synthetic sample size was itself synthesised: ``df`` counts every non-empty cell.
    cont_na : mapping, optional
        Special missing codes of numeric variables (each gets a level of its own).
    schema : Schema, optional
        Needed for Dask frames not wrapped in Datasets.
    executor : Executor, optional
        Where to compute (default: :meth:`Executor.current`).
    """
    params = {"vars": vars, "ngroups": ngroups, "use_na": use_na, "max_table": max_table, "k_syn": k_syn,
              "cont_na": cont_na}  # fmt: skip
    return UtilityTabMeasure(params).run(as_eval_data(original, synthetic, schema), executor)


def utility_tables(
    original: Any,
    synthetic: Any,
    *,
    tables: str = "twoway",
    vars: Sequence[str] | None = None,
    third_var: str | None = None,
    maxtables: int = 50_000,
    ngroups: int = 5,
    use_na: bool = True,
    k_syn: bool = False,
    tab_stats: Sequence[str] | str = ("pMSE", "S_pMSE", "df"),
    plot_stat: str = "S_pMSE",
    nworst: int = 5,
    max_table: float = 1e7,
    cont_na: Mapping[str, Any] | None = None,
    schema: Schema | None = None,
    seed: int | None = None,
    executor: Executor | None = None,
) -> UtilityTablesResult:
    """Table utility of every low-order combination of variables (synthpop's ``utility.tables``).

    All tables are counted in one pass over each data set; numeric variables are binned once.
    ``max_table`` is forwarded to every table (synthpop 1.9-2 does not forward it, spec §5.3.6).
    When there are more than ``maxtables`` combinations a random sample (``seed``) is used.
    ``vars`` defaults to every variable of the original that every synthetic set has; they
    are labelled and ordered by their position in the (first) synthetic set, as synthpop does.
    The heat map is drawn by :func:`pipeline.utility.plots.plot_utility_tables`.
    """
    params = {
        "tables": tables, "vars": vars, "third_var": third_var, "maxtables": maxtables, "ngroups": ngroups,
        "use_na": use_na, "k_syn": k_syn, "tab_stats": tab_stats, "plot_stat": plot_stat, "nworst": nworst,
        "max_table": max_table, "cont_na": cont_na, "seed": seed,
    }  # fmt: skip
    return UtilityTablesMeasure(params).run(as_eval_data(original, synthetic, schema), executor)
