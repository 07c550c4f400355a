"""The package-like functions of identification risk (IdentificationRiskCalculation's names).

:func:`identification_risk`, :func:`identification_risk_categorical` and :func:`radius_sweep`
are thin wrappers: one scenario through
:class:`~pipeline.risk.idrisk.measure.IdentificationRiskMeasure` (the only validation).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pipeline.data.schema import Schema
from pipeline.evaluation.data import as_eval_data
from pipeline.evaluation.execution import Executor
from pipeline.risk.idrisk.measure import IdentificationRiskMeasure
from pipeline.risk.idrisk.result import IdentificationRiskResult, RadiusSweepResult


def identification_risk(
    original: Any,
    synthetic: Any,
    known: Sequence[str],
    synthesised: Sequence[str],
    radius: Any = None,
    percentage: bool = True,
    euclidean: bool = False,
    interval: str = "open",
    schema: Schema | None = None,
    *,
    na_action: str = "error",
    exact: Sequence[str] = (),
    executor: Executor | None = None,
) -> IdentificationRiskResult:
    """Identification risk of every target record in every partially synthetic set.

    An intruder knows record i's ``known`` values and the true values of its ``synthesised``
    values and searches each synthetic set for records that agree: categorical variables
    exactly, continuous variables within a radius.  c_i counts the matches, T_i says whether
    record i's own synthetic row is among them, and IR_i = T_i / c_i.

    Parameters
    ----------
    original : DataFrame (pandas or Dask) or Dataset
        The confidential data, n records.
    synthetic : DataFrame/Dataset or list of them
        Partially synthetic sets, each with the same n rows in the same order.
    known, synthesised : list of str
        Known (released unchanged) and synthesised variables; disjoint.
    radius : float, mapping, sequence or None
        None: every variable is matched exactly (package ``r = NULL``).  A number: the radius
        of every continuous known/synthesised variable.  A mapping ``{variable: radius}``:
        one per continuous variable.  A sequence: the package's radius vector, one entry per
        continuous compared variable in the column order of ``original``.
    percentage : bool
        Radius as a fraction of the target's true value (half-width ``r * x``; must be < 1)
        or in the variable's units.
    euclidean : bool
        The package's ``euclideanDist`` (a shared half-width per variable group).
    interval : {"open", "closed"}
        Package (open: ``|x* - x| < rho``) or paper (closed: ``<= rho``) intervals.
    schema : Schema, optional
        Decides which variables are categorical (factor/character) or continuous; default the
        Dataset's schema, else one inferred from the pandas original (numeric = continuous).
    na_action : {"error", "no_match"}
        Missing/non-finite continuous values: raise, or such records match nothing.
        Missing categorical values never match (as in the package).
    exact : list of str
        Numeric variables matched by equality while the other continuous ones take ``radius``
        (e.g. whole-number years of education beside a wage within 10 %).
    executor : Executor, optional
        Where to compute (default: :meth:`Executor.current`: in memory for small data, key
        blocks on the active Dask client for large data).

    Returns
    -------
    IdentificationRiskResult
    """
    scenario = {"known": known, "synthesised": synthesised, "radius": radius, "radius_grid": None}
    options = {"percentage": percentage, "euclidean": euclidean, "interval": interval, "na_action": na_action,
               "exact": list(exact)}  # fmt: skip
    return _one_scenario(original, synthetic, schema, executor, scenario, options)


def identification_risk_categorical(
    original: Any,
    synthetic: Any,
    known: Sequence[str],
    synthesised: Sequence[str],
    schema: Schema | None = None,
    *,
    executor: Executor | None = None,
) -> IdentificationRiskResult:
    """The package's ``IdentificationRiskCategorical``: every variable matched exactly."""
    return identification_risk(original, synthetic, known, synthesised, None, schema=schema, executor=executor)


def radius_sweep(
    original: Any,
    synthetic: Any,
    known: Sequence[str],
    synthesised: Sequence[str],
    grid: Any,
    radius: Any = None,
    percentage: bool = True,
    euclidean: bool = False,
    interval: str = "open",
    schema: Schema | None = None,
    *,
    criterion: str = "mean",
    na_action: str = "error",
    exact: Sequence[str] = (),
    executor: Executor | None = None,
) -> RadiusSweepResult:
    """File-level identification risk over a grid of radii, and the maximising radius.

    Parameters
    ----------
    grid : list of float or mapping
        A list: one radius shared by every synthesised continuous variable (the paper's
        sweep; known continuous variables keep their ``radius``).  A mapping
        ``{variable: [radii]}``: the Cartesian product of per-variable grids.
    radius : float, mapping, sequence or None
        Fixed radius of the continuous variables that are not in the grid.
    criterion : {"mean", "median"}
        Combination of the m file-level risks used to pick the maximising radius r*
        (ties go to the smaller radius).

    The other parameters are those of :func:`identification_risk`.  Every radius reuses the
    same key blocks, sort orders and candidate indexes; the grid costs extra binary searches
    and sweeps, not extra shuffles or sorts.
    """
    scenario = {"known": known, "synthesised": synthesised, "radius": radius, "radius_grid": grid}
    options = {"percentage": percentage, "euclidean": euclidean, "interval": interval, "na_action": na_action,
               "criterion": criterion, "exact": list(exact)}  # fmt: skip
    return _one_scenario(original, synthetic, schema, executor, scenario, options)


def _one_scenario(
    original: Any,
    synthetic: Any,
    schema: Schema | None,
    executor: Executor | None,
    scenario: dict[str, Any],
    options: dict[str, Any],
) -> Any:
    """The package-style wrappers: one scenario through the measure (the only validation)."""
    params = {"scenarios": {"scenario": scenario}, **options}
    return (
        IdentificationRiskMeasure(params).run(as_eval_data(original, synthetic, schema), executor).scenarios["scenario"]
    )
