"""synthpop's utility functions as thin wrappers of the measures.

=================  ==================================  ===============================
synthpop           function                            measure
=================  ==================================  ===============================
``utility.gen``    :func:`utility_gen`                  ``utility_gen``
``utility.tab``    :func:`utility_tab`                  ``utility_tab``
``utility.tables`` :func:`utility_tables`               ``utility_tables``
``utility.synds``  :func:`utility_synds` (1.2-1)        ``utility_synds``
``compare.synds``  :func:`compare_synds`                ``compare``
``multi.compare``  :func:`multi_compare`                ``multi_compare``
=================  ==================================  ===============================

Each is ``Measure(params).run(as_eval_data(original, synthetic, schema), executor)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pipeline.data.schema import Schema
from pipeline.evaluation.data import as_eval_data
from pipeline.evaluation.execution import Executor
from pipeline.utility.gen import UtilityGenResult
from pipeline.utility.measure import (
    MultiCompareMeasure,
    UtilityCompareMeasure,
    UtilityGenMeasure,
    UtilitySyndsMeasure,
    UtilityTablesMeasure,
    UtilityTabMeasure,
)
from pipeline.utility.result import (
    MultiCompareResult,
    UtilityCompareResult,
    UtilitySyndsResult,
    UtilityTablesResult,
    UtilityTabResult,
)


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


def utility_synds(
    original: Any,
    synthetic: Any,
    method: str | Sequence[str] = "cart",
    *,
    schema: Schema | None = None,
    executor: Executor | None = None,
    **kwargs: Any,
) -> UtilitySyndsResult:
    """synthpop 1.2-1's ``utility.synds``: propensity utility of ``synthetic`` against ``original``.

    Parameters
    ----------
    original : DataFrame or Dataset
    synthetic : frame, Dataset or a sequence of them (the m synthetic sets)
    method : str or sequence of {"cart", "logit", "poly"}
    schema : Schema, optional
    executor : Executor, optional
    **kwargs
        Any other field of :class:`~pipeline.utility.params.UtilitySyndsParams` (``cp``, ``maxorder``, ``deviance``,
        ``null_utility``, ``syn_only``, ``all_comb``, ``synthesised``, ``vars``, ...).

    Returns
    -------
    UtilitySyndsResult
        ``print(result)`` shows it as synthpop 1.2-1 does.
    """
    params: Mapping[str, Any] = {"method": method, **kwargs}
    return UtilitySyndsMeasure(params).run(as_eval_data(original, synthetic, schema), executor or Executor.current())


def compare_synds(
    original: Any,
    synthetic: Any,
    *,
    vars: Sequence[str] | None = None,
    stat: str = "percents",
    breaks: int = 20,
    ngroups: int = 5,
    utility_stats: Sequence[str] | str | None = ("pMSE", "S_pMSE", "df"),
    utility_for_plot: str | None = "S_pMSE",
    cont_na: Mapping[str, Any] | None = None,
    schema: Schema | None = None,
    executor: Executor | None = None,
) -> UtilityCompareResult:
    """Per-variable comparison of the original and the pooled synthetic sets (synthpop's ``compare.synds``).

    Parameters
    ----------
    original, synthetic
        The original and one synthetic set or a list of m sets (frames or Datasets).
    vars : sequence of str, optional
        Default: every variable they share.
    stat : {"percents", "counts"}
        Percentages of all records, or counts (the pooled synthetic counts divided by m).
    breaks : int
        Number of histogram cells asked of R's ``pretty`` for numeric variables.
    ngroups : int
        Groups of numeric variables in the per-variable ``utility.tab``.
    utility_stats : sequence of str, "all" or None
        The ``utility.tab`` statistics of ``tab_utility`` (``utility_for_plot`` is added).
    utility_for_plot : str or None
        The statistic shown in the plots' titles.
    """
    stats = list(utility_stats) if utility_stats is not None and not isinstance(utility_stats, str) else utility_stats
    measure = UtilityCompareMeasure(
        vars=None if vars is None else list(vars), stat=stat, breaks=breaks, ngroups=ngroups,
        utility_stats=stats, utility_for_plot=utility_for_plot,
    )  # fmt: skip
    return measure.run(as_eval_data(original, synthetic, schema, cont_na), executor or Executor.current())


def multi_compare(
    original: Any,
    synthetic: Any,
    var: str,
    by: str | Sequence[str],
    *,
    msel: int | Sequence[int] | None = None,
    binwidth: float | None = None,
    bins: int = 30,
    barplot_position: str = "fill",
    y_hist: str = "count",
    max_groups: int = 100,
    cont_na: Mapping[str, Any] | None = None,
    schema: Schema | None = None,
    executor: Executor | None = None,
) -> MultiCompareResult:
    """``var`` in the original and the synthetic data within each group of ``by`` (synthpop's
    ``multi.compare(object, data, var, by)``).

    Parameters
    ----------
    original, synthetic
        The original and one synthetic set or a list of m sets (frames or Datasets).
    var : str
        The compared variable (a factor: counts and percentages of its levels; numeric:
        a histogram; numeric with fewer than 6 distinct original values: a factor of its values).
    by : str or sequence of str
        The variables whose combinations of values (NA included) form the groups.
    msel : int or sequence of int, optional
        Synthetic sets compared one by one; default: the m sets pooled (counts divided by m).
    binwidth : float, optional
        ggplot2's bins of this width (edges at ``binwidth / 2 + k * binwidth``).
    bins : int
        Without ``binwidth``: the number of cells asked of R's ``pretty``.
    barplot_position : {"fill", "dodge"}
        The plot of a factor: percentages within the group (``"fill"``) or counts side by side.
    y_hist : {"count", "density"}
        The plot of a numeric ``var``: counts or ggplot2's density.
    max_groups : int
        More groups than this are refused.

    Returns
    -------
    MultiCompareResult
        ``counts`` (sources x groups x categories), ``percents``, ``density``, ``frame()``;
        :func:`~pipeline.utility.plots.plot_multi_compare` draws synthpop's panels.
    """
    measure = MultiCompareMeasure(
        var=var, by=[by] if isinstance(by, str) else list(by), msel=msel, binwidth=binwidth, bins=bins,
        barplot_position=barplot_position, y_hist=y_hist, max_groups=max_groups,
    )  # fmt: skip
    return measure.run(as_eval_data(original, synthetic, schema, cont_na), executor or Executor.current())
