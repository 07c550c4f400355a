"""Task-file integration of the utility measures: parameter models and ``evaluate_*`` functions.

Parameter names follow synthpop's, python-style (``resamp.method`` -> ``resamp_method``).
Each ``evaluate_*`` receives the original and synthetic :class:`~pipeline.data.dataset.Dataset`
objects and returns a result with ``.tidy()`` and ``.to_dict()``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from pipeline.data.dataset import Dataset
from pipeline.utility.gen import UtilityGenResult, utility_gen
from pipeline.utility.tab import TAB_STATS, UtilityTablesResult, UtilityTabResult, utility_tab, utility_tables

CodeMap = dict[str, float | list[float]]


class UtilityGenParams(BaseModel):
    """Parameters of synthpop's ``utility.gen`` (task type ``utility_gen``)."""

    model_config = ConfigDict(extra="forbid")

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
    seed: int | None = None
    backend: Literal["auto", "pandas", "dask"] = "auto"


class UtilityTabParams(BaseModel):
    """Parameters of synthpop's ``utility.tab`` (task type ``utility_tab``)."""

    model_config = ConfigDict(extra="forbid")

    vars: list[str] = Field(..., min_length=1)
    ngroups: int = Field(5, ge=2)
    use_na: bool = True
    max_table: float = Field(1e6, gt=0)
    k_syn: bool = False
    cont_na: CodeMap | None = None


class UtilityTablesParams(BaseModel):
    """Parameters of synthpop's ``utility.tables`` (task type ``utility_tables``)."""

    model_config = ConfigDict(extra="forbid")

    tables: Literal["oneway", "twoway", "threeway"] = "twoway"
    vars: list[str] | None = None
    third_var: str | None = None
    maxtables: int = Field(50_000, ge=1)
    ngroups: int = Field(5, ge=2)
    use_na: bool = True
    k_syn: bool = False
    tab_stats: list[Literal[TAB_STATS]] | Literal["all"] = ["pMSE", "S_pMSE", "df"]  # type: ignore[valid-type]
    plot_stat: Literal[TAB_STATS] = "S_pMSE"  # type: ignore[valid-type]
    nworst: int = Field(5, ge=1)
    max_table: float = Field(1e7, gt=0)
    cont_na: CodeMap | None = None
    seed: int | None = None


def evaluate_gen(original: Dataset, synthetic: list[Dataset], params: UtilityGenParams) -> UtilityGenResult:
    """Propensity-score utility (pMSE, S_pMSE, SPECKS, PO50, U) of the synthetic sets."""
    return utility_gen(original, list(synthetic), **params.model_dump())


def evaluate_tab(original: Dataset, synthetic: list[Dataset], params: UtilityTabParams) -> UtilityTabResult:
    """Table utility of one table of the synthetic sets."""
    p = params.model_dump()
    return utility_tab(original, list(synthetic), p.pop("vars"), **p)


def evaluate_tables(original: Dataset, synthetic: list[Dataset], params: UtilityTablesParams) -> UtilityTablesResult:
    """Table utility of every one-, two- or three-way table (plot with ``plots.plot_utility_tables``)."""
    return utility_tables(original, list(synthetic), **params.model_dump())
