"""Holdout baselines and intervals: one mechanism over every measure's rows.

:func:`evaluate` is :meth:`Measure.evaluate <pipeline.evaluation.base.Measure.evaluate>` plus

* **holdout baselines** (when the data carry a holdout and the measure declares
  :attr:`~pipeline.evaluation.base.Measure.baseline_measures`): the measure is evaluated again
  on each of its :meth:`~pipeline.evaluation.base.Measure.baseline_units` with the training
  records and with the holdout records in the original's place, on equal footing
  (:mod:`pipeline.evaluation.footing`), and on ``permutations`` relabellings of them;
* **intervals**: summary rows over the m synthetic sets (:mod:`pipeline.evaluation.intervals`).

The measure's own rows are returned unchanged; the added rows say their part in the comparison
in the ``role``, ``summary`` and ``method`` columns (:mod:`pipeline.evaluation.comparison`; ``P``
= the row's params, unchanged)::

    synthetic "1".."m" (and "mean" where the measure has one), measure M, params P:
        role "training"     the figure with the training footing
        role "holdout"      the figure with the holdout footing
        role "excess"       training − holdout
        role "residual"     comparison.residual(training, holdout, scale): scale · (training −
                            holdout) / (scale − holdout) (measures with a scale only)
    synthetic "all" (summaries over the sets), every role:
        summary "mean" | "sd"; summary "lower95" | "upper95" with method "t"
    and for the excess and residual rows, instead of the t bounds:
        summary "lower95" | "upper95" with method "permutation" (a figure with one setting, or
        options.settings "each") or "max-t" (simultaneous over the figure's settings)
    one synthetic set (m = 1), measures whose result can be redrawn over records
    (:meth:`Result.resampled <pipeline.evaluation.base.Result.resampled>`):
        summary "mean" | "lower95" | "upper95" with method "bootstrap" (percentile bootstrap)
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import Field, field_validator

from pipeline.config_io import Seed
from pipeline.evaluation.base import Measure, Params, Result, Row, canonical_json
from pipeline.evaluation.comparison import (
    EXCESS,
    HOLDOUT,
    MAX_T,
    PERMUTATION,
    RESIDUAL,
    TRAINING,
    Settings,
    residual,
    simultaneous_bounds,
)
from pipeline.evaluation.intervals import bootstrap_rows, over_sets, per_set_values, summary_rows
from pipeline.evaluation.public import LevelCounts

if TYPE_CHECKING:  # BaselineOptions is part of a task file: loading one imports no Dask
    from pipeline.evaluation.data import EvalData
    from pipeline.evaluation.execution import Executor
    from pipeline.evaluation.footing import Footing

#: the random stream of the record bootstrap, beside the footing's (seed, relabelling) streams
BOOTSTRAP_STREAM = 2**31 - 1
#: the roles of the rows compared by relabelling (their summaries carry the permutation interval)
COMPARED = (EXCESS, RESIDUAL)


class BaselineOptions(Params):
    """How holdout baselines are drawn.

    Attributes
    ----------
    seed : int
        Seeds the equal-footing subsample (or the partners of row-aligned records) and the
        relabellings; the same seed gives the same rows for any partitions or workers.
    permutations : int
        Random relabellings of training and holdout records behind the excess interval (0: no
        excess interval; otherwise at least 2).  Each costs two more evaluations on
        holdout-sized data.
    bootstrap : int
        Replicates of the percentile bootstrap over records for one synthetic set (m = 1) of a
        measure that supports it (0: none; otherwise at least 100). They redraw aggregates, not
        the data: no measure is evaluated again.
    settings : {"simultaneous", "each"}
        The excess intervals of a figure with several settings (targets, scenarios, radii):
        simultaneous over them (method ``max-t``, :func:`~pipeline.evaluation.comparison.simultaneous_bounds`:
        the report judges the setting with the largest excess without raising the false-positive
        rate), or each setting's own interval (``each``: method ``permutation``, the rule before
        issue 32).
    """

    seed: Seed = 0
    # bounded: each permutation evaluates the measure twice more, each replicate redraws its aggregates
    permutations: int = Field(default=20, ge=0, le=10_000)
    bootstrap: int = Field(default=1000, ge=0, le=1_000_000)
    settings: Settings = "simultaneous"

    @field_validator("permutations")
    @classmethod
    def _enough(cls, value: int) -> int:
        if value == 1:
            raise ValueError("permutations must be 0 (no excess interval) or at least 2")
        return value

    @field_validator("bootstrap")
    @classmethod
    def _enough_replicates(cls, value: int) -> int:
        if 0 < value < 100:
            raise ValueError("bootstrap must be 0 (no bootstrap interval) or at least 100 replicates")
        return value


@dataclass(frozen=True)
class EvaluatedResult(Result):
    """A measure's result with its holdout baseline and summary rows appended.

    Attributes
    ----------
    result : Result
        What :meth:`Measure.evaluate` returned (its rows come first, unchanged).
    added : tuple of Row
        Baseline and summary rows.
    baseline : dict or None
        How the baseline was drawn (records per footing, seed, relabellings), for the summary.
    """

    result: Result
    added: tuple[Row, ...]
    baseline: dict[str, Any] | None = None

    def rows(self) -> list[Row]:
        return [*self.result.rows(), *self.added]

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.result.to_dict())
        if self.baseline is not None:
            out["holdout_baseline"] = self.baseline
        return out

    def level_counts(self) -> Sequence[LevelCounts]:
        return self.result.level_counts()


def evaluate(
    measure: Measure, data: EvalData, executor: Executor, options: BaselineOptions | None = None
) -> EvaluatedResult:
    """``measure.evaluate(data, executor)`` with holdout baselines (if ``data.holdout``) and summary rows."""
    options = options or BaselineOptions()
    result = measure.evaluate(data, executor)
    rows = result.rows()
    baseline_rows: list[Row] = []
    info = None
    if data.holdout is not None and measure.baseline_measures:
        baseline_rows, info = holdout_baseline(measure, data, executor, options, result)
    added = baseline_rows + over_sets([*rows, *baseline_rows], keep=lambda r: r.role not in COMPARED)
    if data.m == 1 and options.bootstrap:
        added += record_bootstrap(result, options)
    return EvaluatedResult(result, tuple(added), info)


def record_bootstrap(result: Result, options: BaselineOptions) -> list[Row]:
    """Percentile-bootstrap rows of a single-set result that can be redrawn over records (none otherwise)."""
    # a stream of its own: the holdout footing and relabellings use (seed, r)
    rng = np.random.default_rng([options.seed, BOOTSTRAP_STREAM])
    replicates = result.resampled(rng, options.bootstrap)
    return [] if replicates is None else bootstrap_rows(result.rows(), replicates.rows())


Values = dict[tuple[str, str, str], tuple[Mapping[str, Any], float]]


def _values(rows: Sequence[Row], wanted: Mapping[str, float | None]) -> Values:
    """The rows of the baseline measures by (synthetic, measure, canonical params)."""
    return {
        (r.synthetic, r.measure, canonical_json(r.params)): (r.params, float(r.value))
        for r in rows
        if r.measure in wanted
    }


def _kinds(train: float, hold: float, scale: float | None) -> dict[str, float]:
    """The rows' values by role."""
    out = {TRAINING: train, HOLDOUT: hold, EXCESS: train - hold}
    if scale is not None:
        out[RESIDUAL] = residual(train, hold, scale)
    return out


def _mean_excess(train: Values, hold: Values, wanted: Mapping[str, float | None]) -> dict[tuple[str, str], dict]:
    """Per (measure, canonical params): the mean over sets of each excess kind."""
    per: dict[tuple[str, str], dict[str, list[float]]] = {}
    for key, (_, t) in train.items():
        synthetic, measure, params = key
        if not synthetic.isdigit() or key not in hold:
            continue
        kinds = _kinds(t, hold[key][1], wanted[measure])
        entry = per.setdefault((measure, params), {k: [] for k in COMPARED if k in kinds})
        for k in entry:
            entry[k].append(kinds[k])
    return {key: {k: _finite_mean(v) for k, v in kinds.items()} for key, kinds in per.items()}


def _finite_mean(values: Sequence[float]) -> float:
    finite = [v for v in values if math.isfinite(v)]
    return math.fsum(finite) / len(finite) if finite else math.nan


def holdout_baseline(
    measure: Measure, data: EvalData, executor: Executor, options: BaselineOptions, observed: Result
) -> tuple[list[Row], dict[str, Any]]:
    """The baseline rows of ``measure`` on ``data`` (which carries a holdout), and how they were
    drawn; ``observed`` is ``measure``'s result on ``data``."""
    wanted = measure.baseline_measures
    rows: list[Row] = []
    compared: list[tuple[list[Row], list[dict[tuple[str, str], dict]]]] = []
    units = []
    for sub, footing in measure.baseline_units(data):
        # the observed footing first, then the relabellings
        pairs = footing_results(sub, footing, data, executor, options.seed, options.permutations, observed)
        train_values, hold_values = (_values(result.rows(), wanted) for result in next(pairs))
        relabelled = [_mean_excess(*(_values(result.rows(), wanted) for result in pair), wanted) for pair in pairs]
        units.append({"footing": type(footing).__name__, "records": footing.records(data, executor)})
        unit_rows = [
            Row(synthetic, name, value, params, kind)
            for (synthetic, name, canonical), (params, t) in train_values.items()
            if (synthetic, name, canonical) in hold_values
            for kind, value in _kinds(t, hold_values[synthetic, name, canonical][1], wanted[name]).items()
        ]
        rows += unit_rows
        compared.append((unit_rows, relabelled))
    rows += _excess_summaries(compared, options.settings)
    info = {"seed": options.seed, "permutations": options.permutations, "settings": options.settings, "units": units}
    return rows, info


def footing_results(
    measure: Measure,
    footing: Footing,
    data: EvalData,
    executor: Executor,
    seed: int,
    relabellings: int,
    observed: Result | None = None,
) -> Iterator[tuple[Result, Result]]:
    """``measure`` on both groups of the observed footing (first), then of relabellings
    1..``relabellings``: drawn from the two observed footings when every group is a per-record
    mixture of them (:meth:`Footing.mixtures`) and the measure evaluates mixtures
    (:meth:`Measure.evaluate_mixtures`), else each footing evaluated in turn.

    ``observed``, the result of the measure this one is a baseline unit of on ``data``, stands
    for the training group when that group is the data (:attr:`Footing.training_is_observed`) and
    nothing is relabelled: only the holdout group is evaluated (the unit's rows are the observed
    rows with its keys, :meth:`Measure.baseline_units`)."""
    if observed is not None and footing.training_is_observed and not relabellings:
        _, control = footing.split(data, executor, seed)
        return iter([(observed, measure.evaluate(control, executor))])
    mixtures = footing.mixtures(data, executor, seed, relabellings)
    results = None if mixtures is None else measure.evaluate_mixtures(*mixtures, executor)
    if results is None:
        return each_footing(measure, footing, data, executor, seed, relabellings)
    drawn = iter(results)
    return zip(drawn, drawn, strict=True)  # consecutive results pair up


def each_footing(
    measure: Measure, footing: Footing, data: EvalData, executor: Executor, seed: int, relabellings: int
) -> Iterator[tuple[Result, Result]]:
    """``measure`` evaluated on both groups of the observed footing and of every relabelling, in turn."""
    for r in range(relabellings + 1):
        train, control = footing.split(data, executor, seed, r)
        yield measure.evaluate(train, executor), measure.evaluate(control, executor)


def _excess_summaries(
    units: Sequence[tuple[Sequence[Row], Sequence[dict[tuple[str, str], dict]]]], settings: Settings
) -> list[Row]:
    """Mean and between-set sd of each per-set excess and, with relabellings, the permutation
    interval of its mean (the t interval over sets would leave out the sampling of the records).

    ``units``: each baseline unit's rows and its relabelled mean excesses. With ``settings``
    "simultaneous" the intervals of one figure and role (a measure's excess or residual) are
    simultaneous over its settings in every unit (method ``max-t``; one setting: ``permutation``).
    """
    families: dict[tuple[str, str, str], list[tuple[Mapping[str, Any], dict[str, float], list[float]]]] = {}
    for rows, relabelled in units:
        for (measure, kind, base), (params, values) in per_set_values(rows, keep=lambda r: r.role in COMPARED).items():
            finite = [v for v in values if math.isfinite(v)]
            summary = {"mean": _finite_mean(finite), "sd": statistics.stdev(finite) if len(finite) > 1 else math.nan}
            spread = [r[(measure, base)][kind] if (measure, base) in r else math.nan for r in relabelled]
            family = (measure, kind, "" if settings == "simultaneous" else base)
            families.setdefault(family, []).append((params, summary, spread))
    out = []
    for (measure, kind, _), members in families.items():
        if relabelled_any := bool(members[0][2]):
            columns = np.array([spread for _, _, spread in members], dtype=np.float64).T
            bounds = simultaneous_bounds([summary["mean"] for _, summary, _ in members], columns)
            for (_, summary, _), (lower, upper) in zip(members, bounds, strict=True):
                summary.update(lower95=lower, upper95=upper)
        method = MAX_T if relabelled_any and len(members) > 1 else PERMUTATION
        out += [row for params, summary, _ in members for row in summary_rows(measure, params, kind, summary, method)]
    return out
