"""Parameters of the utility measures: the only validation of their options.

Names follow synthpop's, python style (``resamp.method`` -> ``resamp_method``, ``tab.stats``
-> ``tab_stats``).  Every check that needs only the parameters is a validator here; checks
that need the data (the variables present, the number of synthetic sets) are the measures'
``check`` (:mod:`pipeline.utility.measure`), and checks that need a pass over the data (levels,
table sizes, model size) happen while evaluating.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, field_validator, model_validator

from pipeline import notices
from pipeline.config_io import Seed
from pipeline.errors import ParameterError
from pipeline.evaluation.base import Params

if TYPE_CHECKING:  # loading a task validates its params with this module: no Dask
    from pipeline.data.schema import Schema
    from pipeline.evaluation.data import EvalData

#: every statistic of utility.tab, in synthpop's order
TAB_STATS: tuple[str, ...] = (
    "VW", "FT", "JSD", "SPECKS", "WMabsDD", "U", "G", "pMSE", "PO50", "MabsDD", "dBhatt",
    "S_VW", "S_FT", "S_JSD", "S_WMabsDD", "S_G", "S_pMSE", "df", "dfG",
)  # fmt: skip
TabStat = Literal[TAB_STATS]  # type: ignore[valid-type]
#: variables of a table for each kind of ``utility_tables``
TABLE_ORDER = {"oneway": 1, "twoway": 2, "threeway": 3}

#: synthpop's ``cont.na``: special missing code(s) by numeric variable
CodeMap = dict[str, float | list[float]]


def _names(v: Any) -> Any:
    """One variable name or several, duplicates removed (synthpop's ``unique(vars)``)."""
    if v is None:
        return None
    return list(dict.fromkeys([v] if isinstance(v, str) else v))


def _declared(*groups: Sequence[str] | None) -> list[str]:
    return list(dict.fromkeys(v for g in groups for v in (g or ())))


def check_unsynthesised(names: Sequence[str], not_synthesised: Sequence[str]) -> None:
    """The unsynthesised variables must be compared variables, and not all of them."""
    outside = [v for v in not_synthesised if v not in names]
    if outside:
        raise ParameterError(f"not_synthesised variable(s) {outside} are not among the compared vars")
    if not_synthesised and all(v in not_synthesised for v in names):
        raise ParameterError("utility cannot be measured when every compared variable is unsynthesised")


class UtilityGenParams(Params):
    """Parameters of synthpop's ``utility.gen`` (task type ``utility_gen``).

    See :func:`pipeline.utility.api.utility_gen` for their meaning.  ``not_synthesised``
    ``None`` (unset) reads the kept variables from the data's synthesis
    (:meth:`~pipeline.evaluation.data.EvalData.kept`); ``[]`` says the synthesis is complete.
    """

    method: Literal["cart", "logit"] = "cart"
    vars: list[str] | None = None
    maxorder: int = Field(1, ge=0)
    cont_na: CodeMap | None = None
    ngroups: int | None = Field(None, ge=2)
    cp: float = 1e-3
    minbucket: int = Field(5, ge=1)
    minsplit: int | None = Field(None, ge=1)
    maxdepth: int = Field(30, ge=1, le=30)
    nperms: int = Field(50, ge=1)
    resamp_method: Literal["perm", "pairs", "none"] | None = None
    k_syn: bool = False
    aggregate: bool = False
    maxit: int = Field(200, ge=1)
    max_params: int = Field(400, ge=1)
    not_synthesised: list[str] | None = None
    seed: Seed | None = None
    compress: bool = True

    unique_names = field_validator("vars", "not_synthesised", mode="before")(_names)

    @model_validator(mode="after")
    def _consistent(self) -> UtilityGenParams:
        if self.aggregate and self.method != "logit":
            raise ValueError("aggregate=True only works with method='logit'")
        if self.cp < 0 and self.method == "cart":
            notices.warn("cp < 0 keeps every split rpart finds", stacklevel=2)
        if self.not_synthesised and self.resamp_method == "perm":
            raise ValueError("an incomplete synthesis (not_synthesised) needs resamp_method='pairs'")
        if self.resamp_method == "pairs" and self.k_syn:
            raise ValueError("resamp_method='pairs' needs k_syn=False")
        if self.vars is not None:
            check_unsynthesised(self.vars, self.not_synthesised or [])
        return self

    def variables(self) -> list[str]:
        return _declared(self.vars, self.not_synthesised, list(self.cont_na or {}))

    @property
    def null_method(self) -> str | None:
        """The null distribution of pMSE: ``resamp_method``, or synthpop's choice when it is None
        (``pairs`` for an incomplete synthesis, ``perm`` for CART, analytic (None) for logit)."""
        if self.resamp_method is not None:
            return self.resamp_method
        if self.not_synthesised:
            return "pairs"
        return "perm" if self.method == "cart" else None


def check_incomplete(params: UtilityGenParams, names: Sequence[str], kept: Sequence[str], m: int) -> None:
    """The kept variables ``kept`` against the compared ``names``, and the resampling they allow
    (synthpop: an incomplete synthesis refuses ``perm``; ``pairs`` needs m > 1)."""
    check_unsynthesised(names, kept)
    if kept and params.resamp_method == "perm":
        raise ParameterError(
            f"utility_gen: the synthesis kept {list(kept)} unchanged (an incomplete synthesis), which needs "
            "resamp_method='pairs' or 'none' (synthpop refuses 'perm'); not_synthesised: [] treats it as complete"
        )
    check_resampling(params, m)


class UtilityTabParams(Params):
    """Parameters of synthpop's ``utility.tab`` (task type ``utility_tab``)."""

    vars: list[str] = Field(min_length=1)
    ngroups: int = Field(5, ge=2)
    use_na: bool = True
    max_table: float = Field(1e6, gt=0)
    k_syn: bool = False
    cont_na: CodeMap | None = None

    unique_names = field_validator("vars", mode="before")(_names)

    def variables(self) -> list[str]:
        return _declared(self.vars, list(self.cont_na or {}))


class UtilityTablesParams(Params):
    """Parameters of synthpop's ``utility.tables`` (task type ``utility_tables``)."""

    tables: Literal["oneway", "twoway", "threeway"] = "twoway"
    vars: list[str] | None = None
    third_var: str | None = None
    maxtables: int = Field(50_000, ge=1)
    ngroups: int = Field(5, ge=2)
    use_na: bool = True
    k_syn: bool = False
    tab_stats: list[TabStat] | Literal["all"] = Field(default_factory=lambda: ["pMSE", "S_pMSE", "df"])  # type: ignore[valid-type]
    plot_stat: TabStat = "S_pMSE"  # type: ignore[valid-type]
    nworst: int = Field(5, ge=1)
    max_table: float = Field(1e7, gt=0)
    cont_na: CodeMap | None = None
    seed: Seed | None = None

    unique_names = field_validator("vars", mode="before")(_names)

    @field_validator("plot_stat")
    @classmethod
    def _plottable(cls, v: str) -> str:
        if v in ("df", "dfG"):
            raise ValueError(f"{v} is a degree of freedom, not a statistic to plot")
        return v

    @model_validator(mode="after")
    def _enough_variables(self) -> UtilityTablesParams:
        if self.vars is not None:
            check_table_variables(self.vars, self.tables, self.third_var)
        return self

    @property
    def order(self) -> int:
        """Number of variables of each table."""
        return TABLE_ORDER[self.tables]

    @property
    def stats_wanted(self) -> list[str]:
        """The statistics of the result table ``tabs``."""
        return list(TAB_STATS) if self.tab_stats == "all" else list(self.tab_stats)

    def variables(self) -> list[str]:
        third = [self.third_var] if self.third_var else []
        return _declared(self.vars, third, list(self.cont_na or {}))


def check_table_variables(names: Sequence[str], tables: str, third_var: str | None) -> None:
    """Enough variables for the tables asked for, and ``third_var`` among them."""
    k = TABLE_ORDER[tables]
    if len(names) < k:
        raise ParameterError(f"{tables} tables need at least {k} variables, got {len(names)}")
    if third_var is not None and third_var not in names:
        raise ParameterError(f"third_var {third_var!r} is not one of the variables {list(names)}")


def compared_variables(vars: Sequence[str] | None, data: EvalData) -> list[str]:
    """``vars``, or (None) every variable of the original that every synthetic set has, in data order."""
    if vars is not None:
        return list(vars)
    names = [c for c in data.columns if all(c in f.columns for f in data.synthetic)]
    if not names:
        raise ParameterError("the original and the synthetic data have no variable in common")
    return names


def with_cont_na(data: EvalData, cont_na: CodeMap | None) -> EvalData:
    """``data`` with the measure's ``cont_na`` codes merged into its schema (by the data boundary)."""
    if not cont_na:
        return data
    from pipeline.evaluation.data import as_eval_data

    return as_eval_data(data.original, list(data.synthetic), data.schema, cont_na, synthesised=data.synthesised)


class UtilityCompareParams(Params):
    """Parameters of synthpop's ``compare.synds`` (task type ``compare``; R names are aliases).

    ``vars`` default: every variable of the original the synthetic sets have.  The m synthetic
    sets are pooled for the tables (synthpop's ``msel = NULL``).
    """

    vars: list[str] | None = None
    stat: Literal["percents", "counts"] = "percents"
    breaks: int = Field(20, ge=1)
    ngroups: int = Field(5, ge=2)
    utility_stats: list[TabStat] | Literal["all"] | None = Field(  # type: ignore[valid-type]
        default_factory=lambda: ["pMSE", "S_pMSE", "df"], alias="utility.stats"
    )
    utility_for_plot: TabStat | None = Field("S_pMSE", alias="utility.for.plot")  # type: ignore[valid-type]
    cont_na: CodeMap | None = None

    unique_names = field_validator("vars", mode="before")(_names)

    @property
    def stats(self) -> list[str]:
        """The utility statistics of the table: synthpop's ``utility.stats`` ("all": every one but
        ``dfG``), with ``utility.for.plot`` added."""
        every = [s for s in TAB_STATS if s != "dfG"]
        chosen = every if self.utility_stats == "all" else list(self.utility_stats or [])
        if self.utility_for_plot is not None and self.utility_for_plot not in chosen:
            chosen.append(self.utility_for_plot)
        return chosen

    def variables(self) -> list[str]:
        return _declared(self.vars, list(self.cont_na or {}))


class MultiCompareParams(Params):
    """Parameters of synthpop's ``multi.compare`` (task type ``multi_compare``; R names are aliases).

    ``var`` is compared between the original and the synthetic data within each group of the
    ``by`` variables (their missing values a group of their own, as synthpop's ``addNA``).
    ``msel`` selects synthetic sets, each compared on its own; ``None`` pools them (synthpop's
    default).  ``binwidth`` gives ggplot2's histogram bins of that width; without it the bins are
    R's ``pretty`` breaks for ``bins`` cells (ggplot2's 30 bins would put the smallest and the
    largest value at the centres of the outer bins).  ``barplot_position`` and ``y_hist`` choose
    what the plot shows.  ``max_groups`` refuses a grouping with more groups (synthpop warns above
    100 panels).
    """

    var: str
    by: list[str] = Field(min_length=1)
    msel: list[int] | None = Field(None, min_length=1)
    binwidth: float | None = Field(None, gt=0)
    bins: int = Field(30, ge=1)
    barplot_position: Literal["fill", "dodge"] = Field("fill", alias="barplot.position")
    y_hist: Literal["count", "density"] = Field("count", alias="y.hist")
    max_groups: int = Field(100, ge=1)
    cont_na: CodeMap | None = None

    unique_names = field_validator("by", mode="before")(_names)

    @field_validator("msel", mode="before")
    @classmethod
    def _sets(cls, v: Any) -> Any:
        if v is None:
            return None
        sets = [v] if isinstance(v, int) else list(v)
        if any(isinstance(i, bool) or not isinstance(i, int) or i < 1 for i in sets):
            raise ValueError(f"msel must be synthetic set numbers 1..m, got {v}")
        return sorted(set(sets))

    @model_validator(mode="after")
    def _var_not_by(self) -> MultiCompareParams:
        if self.var in self.by:
            if len(self.by) == 1:
                raise ValueError(f"by must name a variable other than var {self.var!r}")
            # synthpop removes var from by with a message
            notices.warn(f"multi_compare: var {self.var!r} removed from by", stacklevel=2)
            self.by = [b for b in self.by if b != self.var]
        return self

    def variables(self) -> list[str]:
        return _declared([self.var], self.by, list(self.cont_na or {}))


class UtilitySyndsParams(Params):
    """Parameters of ``utility_synds`` (synthpop 1.2-1's ``utility.synds``; R names are aliases).

    ``vars`` (not in 1.2-1, whose users restrict the data first) selects the compared
    variables in data order; ``synthesised`` names the synthesised variables (synthpop reads
    them from the synthesis' method vector; unset: the data's own partial synthesis'
    :attr:`~pipeline.evaluation.data.EvalData.synthesised`, :func:`synds_synthesised`) and is
    needed by ``syn_only``.  ``minbucket``,
    ``minsplit`` and ``maxdepth`` are the ``rpart.control`` arguments 1.2-1 forwards through
    ``...``.  ``r_fill_quirk`` reproduces 1.2-1's ``fill.NA``, which drops every factor when
    only factors have missing values.
    """

    method: list[Literal["cart", "logit", "poly"]] = Field(default_factory=lambda: ["cart"], min_length=1)
    cp: float = Field(1e-4, ge=0)
    maxorder: int = Field(1, ge=0, le=4)
    deviance: bool = False
    null_utility: bool = Field(False, alias="null.utility")
    syn_only: bool = Field(False, alias="syn.only")
    all_comb: bool = Field(False, alias="all.comb")
    synthesised: list[str] | None = None
    vars: list[str] | None = Field(None, min_length=1)
    minbucket: int | None = Field(None, ge=1)
    minsplit: int | None = Field(None, ge=1)
    maxdepth: int = Field(30, ge=1, le=30)
    r_fill_quirk: bool = False

    @field_validator("method", mode="before")
    @classmethod
    def _one_or_several(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v

    @field_validator("method")
    @classmethod
    def _distinct(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v):
            raise ValueError(f"each method may be named once, got {v}")
        return v

    def variables(self) -> list[str]:
        return list(dict.fromkeys([*(self.vars or []), *(self.synthesised or [])]))


@dataclass(frozen=True)
class Kind:
    """What one compared variable is: ``levels`` for a factor (``None`` for numeric), ``ordered``."""

    name: str
    levels: tuple[str, ...] | None
    ordered: bool = False


def check_resampling(params: UtilityGenParams, m: int) -> None:
    """``resamp_method='pairs'`` needs several synthetic sets."""
    if params.resamp_method == "pairs" and m == 1:
        raise ParameterError("utility_gen: resamp_method='pairs' needs m > 1 synthetic sets")


def synds_variables(params: UtilitySyndsParams, data: EvalData) -> list[str]:
    """The variables of the model data, in data order (``syn_only``: the synthesised ones)."""
    names = [c for c in data.columns if params.vars is None or c in params.vars]
    if params.syn_only:
        known = synds_synthesised(params, data)
        if known is None:
            raise ParameterError(
                "utility_synds: syn_only = true needs 'synthesised', the variables the synthesis synthesised "
                "(synthpop reads them from the synthesis' method vector; known by itself only for the "
                "pipeline's own partial synthesis)"
            )
        synthesised = set(known)
        names = [c for c in names if c in synthesised]
        if not names:
            raise ParameterError("utility_synds: syn_only = true leaves no synthesised variable to compare")
    return names


def synds_synthesised(params: UtilitySyndsParams, data: EvalData) -> list[str] | None:
    """The synthesised variables: ``synthesised`` when given, else the data's own synthesis' (None: unknown)."""
    if params.synthesised is not None:
        return list(params.synthesised)
    return None if data.synthesised is None else [c for c in data.columns if c in data.synthesised]


def variable_kinds(schema: Schema, names: Sequence[str]) -> list[Kind]:
    out = []
    for name in names:
        v = schema[name]
        if v.is_factor:
            out.append(Kind(name, tuple(v.levels or ()), v.ordered))
        elif v.kind == "character":
            raise ParameterError(
                f"utility_synds: variable {name!r} is a character variable; declare it a factor in the schema"
            )
        else:
            out.append(Kind(name, None))
    return out
