"""The measure contract: ``Params`` -> ``Measure.evaluate(data, executor)`` -> ``Result``.

Every measure a task can name is a :class:`Measure` subclass with

* a pydantic :class:`Params` model — the only validation of its parameters (synthpop's
  spellings, including plural ones such as ``targets``/``ngroups_targets``, are aliases of
  one field), which also declares the variables the measure uses (:meth:`Params.variables`);
* :meth:`Measure.check` — the data-dependent checks (variables present, row alignment, …),
  run by ``validate`` and by ``run`` alike, before any work;
* :meth:`Measure.evaluate` over one :class:`~pipeline.evaluation.data.EvalData` and one
  :class:`~pipeline.evaluation.execution.Executor`, returning a :class:`Result`.

A result's :meth:`Result.rows` are tidy rows whose ``params`` is a **mapping** (the setting
inside the call: a key set and target, a scenario and radius, a table's variables); the
display ``setting`` string is derived from it by :func:`setting_text` and never parsed back.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, get_args, get_origin

import pandas as pd
from pydantic import BaseModel, ConfigDict, ValidationError

from pipeline.config_io import validation_message
from pipeline.errors import ParameterError
from pipeline.evaluation.comparison import OBSERVED, Compared
from pipeline.evaluation.public import MIN_RECORDS, LevelCounts, coarsen, public_summary
from pipeline.evaluation.reporting import Headline, ReportSection
from pipeline.results import json_text

if TYPE_CHECKING:  # the contract is importable without Dask: task files validate params before any data
    import numpy as np

    from pipeline.evaluation.data import EvalData
    from pipeline.evaluation.execution import Executor
    from pipeline.evaluation.footing import Footing

#: columns of :meth:`Result.tidy` (the measure-level tidy table the runner stores)
TIDY_COLUMNS = ["synthetic", "setting", "params", "measure", "role", "summary", "method", "value"]


class Params(BaseModel):
    """Base of every measure's parameter model (unknown parameters are errors)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def variables(self) -> list[str]:
        """Every variable the measure reads (checked against the data before any work)."""
        return []


def common_key(keys: Sequence[Sequence[str]]) -> tuple[str, ...]:
    """The variables every key contains, in the first key's order (the coarsest common key block;
    :meth:`Measure.block_keys`)."""
    return tuple(k for k in keys[0] if all(k in other for other in keys[1:])) if keys else ()


def parse_params(model: type[Params], params: Params | Mapping[str, Any], where: str) -> Params:
    """Validate ``params`` with ``model`` (the only validation); errors name ``where``, the
    parameter and the expectation."""
    if isinstance(params, model):
        return params
    try:
        return model.model_validate(dict(params))
    except ValidationError as e:
        raise ParameterError(f"{where}: invalid parameters: {validation_message(e, model=model)}") from None


def canonical_json(params: Mapping[str, Any]) -> str:
    """One text form of a params mapping: sorted keys, no spaces (equal params, equal text)."""
    return json_text(params, sort_keys=True, compact=True, default=_json_default)


def canonical_params(params: BaseModel) -> dict[str, Any]:
    """A validated params model as JSON (field names) with every setting left out that the model
    would give anyway: equal for a task that spells a default out and one that omits it.

    A setting is left out when validating without it gives the same model (its default, or the
    value a validator derives — e.g. ``cont_na: None`` read as ``{}``); one the model cannot do
    without stays. Settings that are models themselves (an identification-risk scenario, a DP
    block, an SDC step; alone, in a list or a mapping) are written in this form too. Models are
    compared in their normal form (dumped and validated again, so a default that a validator
    would rewrite compares as rewritten). Unit fingerprints, the results' ``params`` and so the
    nightly gate keys are computed from this form.
    """
    model = type(params)

    def normal(data: dict[str, Any]) -> dict[str, Any]:
        once = model.model_validate(data).model_dump(mode="json")
        return model.model_validate(once).model_dump(mode="json")

    reference = normal(params.model_dump(mode="json"))
    out = dict(reference)
    for name in reference:
        if _is_tag(model, name):
            continue  # a tag (``step``, ``kind``) says which model a union holds: it stays
        trial = {k: v for k, v in out.items() if k != name}
        try:
            same = normal(trial) == reference
        except ValidationError:
            same = False
        if same:
            del out[name]
    for name in out:
        shorter = _nested_canonical(getattr(params, name))
        try:
            if shorter is not None and normal({**out, name: shorter}) == reference:
                out[name] = shorter
        except ValidationError:
            pass  # the nested settings need their defaults in this model: keep them
    return out


def _is_tag(model: type[BaseModel], name: str) -> bool:
    """Whether field ``name`` can hold one value only (``Literal["x"]``)."""
    field = model.model_fields.get(name)
    return field is not None and get_origin(field.annotation) is Literal and len(get_args(field.annotation)) == 1


def _nested_canonical(value: Any) -> Any:
    """The canonical form of a setting that holds models (else None: keep it as dumped)."""
    if isinstance(value, BaseModel):
        return canonical_params(value)
    if isinstance(value, Mapping) and value and all(isinstance(v, BaseModel) for v in value.values()):
        return {str(k): canonical_params(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, BaseModel) for v in value):
        return [canonical_params(v) for v in value]
    return None


def _json_default(obj: Any) -> Any:
    if hasattr(obj, "item"):
        return obj.item()
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    raise TypeError(f"params value of type {type(obj).__name__} is not JSON-able")


def _display(v: Any) -> str:
    if isinstance(v, Mapping):
        return ",".join(f"{k}:{_display(x)}" for k, x in v.items())
    if isinstance(v, (list, tuple)):
        return "+".join(_display(x) for x in v)
    return str(v)


def setting_text(params: Mapping[str, Any]) -> str:
    """The display form of a row's params (``keys=sex+age;target=ls``): for people, never parsed."""
    return ";".join(f"{k}={_display(v)}" for k, v in params.items())


@dataclass(frozen=True)
class Row:
    """One tidy value: a synthetic set ("1".."m", "mean" or "original"; "all" for a summary over
    sets), params, measure, value, and its part in a holdout comparison
    (:mod:`pipeline.evaluation.comparison`): ``role`` (the measure's own figure: ``observed``),
    ``summary`` over sets (None: one set's value) and the ``method`` of an interval bound."""

    synthetic: str
    measure: str
    value: float
    params: Mapping[str, Any] = field(default_factory=dict)
    role: str = OBSERVED
    summary: str | None = None
    method: str | None = None


class Result(ABC):
    """What a measure returns: tidy rows with structured params, and a JSON summary."""

    @abstractmethod
    def rows(self) -> list[Row]:
        """Every value of the result as a :class:`Row`."""

    @abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """A JSON-able summary (aggregates only, never record values)."""

    def tidy(self) -> pd.DataFrame:
        """The rows as a frame with :data:`TIDY_COLUMNS` (``params`` as canonical JSON)."""
        return rows_frame(self.rows())

    def values_by_set(self) -> dict[str, dict[str, float]]:
        """``{synthetic set: {measure: value}}`` of the rows (a summary for :meth:`to_dict`)."""
        sets: dict[str, dict[str, float]] = {}
        for r in self.rows():
            sets.setdefault(r.synthetic, {})[r.measure] = r.value
        return sets

    def resampled(self, rng: np.random.Generator, replicates: int) -> Result | None:
        """``replicates`` bootstrap replicates of a one-set result over the original's records
        (drawn with replacement, the synthetic data held fixed), as one result whose synthetic
        sets "1".."replicates" are the replicates (so its rows give every value's spread at once),
        for measures where that is sound: every value a sum over records of a quantity that
        depends on the record and the synthetic data only. None (the default) where it is not
        (a record's uniqueness depends on the other records: repU, DiSCO; a fitted model: pMSE)."""
        return None

    def level_counts(self) -> Sequence[LevelCounts]:
        """The level labels the summary shows with their original record counts (binned numeric
        variables with their breaks), so that written summaries can coarsen the labels that
        would expose a value (:mod:`pipeline.evaluation.public`). None by default."""
        return ()

    def public_dict(self, min_records: int = MIN_RECORDS) -> dict[str, Any]:
        """:meth:`to_dict` with every label that would expose an original value coarsened: what
        is written to files (the result object itself keeps R's labels)."""
        return public_summary(self.to_dict(), coarsen(self.level_counts(), min_records))


def role_columns(rows: Sequence[Row]) -> dict[str, pd.Series]:
    """The ``role``, ``summary`` and ``method`` columns of ``rows`` (strings; missing: NaN)."""
    return {
        "role": pd.Series([r.role for r in rows], dtype="str"),
        "summary": pd.Series([r.summary for r in rows], dtype="str"),
        "method": pd.Series([r.method for r in rows], dtype="str"),
    }


def rows_frame(rows: Sequence[Row]) -> pd.DataFrame:
    """Rows as a frame with :data:`TIDY_COLUMNS`."""
    frame = pd.DataFrame(
        {
            "synthetic": [str(r.synthetic) for r in rows],
            "setting": [setting_text(r.params) for r in rows],
            "params": [canonical_json(r.params) for r in rows],
            "measure": [str(r.measure) for r in rows],
            **role_columns(rows),
            "value": [float(r.value) for r in rows],
        },
        columns=TIDY_COLUMNS,
    )
    frame["value"] = frame["value"].astype("float64")
    return frame


class Measure(ABC):
    """A measure: validated params, data checks, and an evaluator over one executor.

    Subclasses set :attr:`type` (the task-file name), :attr:`family`, :attr:`params_model`
    and implement :meth:`evaluate`; they extend :meth:`check` for data-dependent checks.
    """

    type: ClassVar[str]
    family: ClassVar[str]
    params_model: ClassVar[type[Params]]
    #: whether the measure compares synthetic sets with the original (else: the original alone)
    needs_synthetic: ClassVar[bool] = True
    #: whether row i of every synthetic set must be the synthetic version of original record i (a
    #: run refuses sources whose synthesiser makes new records, :attr:`Synthesiser.row_aligned`)
    needs_row_aligned: ClassVar[bool] = False
    description: ClassVar[str] = ""
    #: the measures (row names) that compare synthetic data with original records and get holdout
    #: baselines (:mod:`pipeline.evaluation.baseline`), each with the scale of its normalised excess
    #: (1 for a share, 100 for a percentage; None: no normalised form, e.g. a sum)
    baseline_measures: ClassVar[Mapping[str, float | None]] = {}
    #: the figures the report compares with their holdout (:mod:`pipeline.evaluation.comparison`):
    #: which rows hold the training and holdout figures and the residual
    holdout_view: ClassVar[tuple[Compared, ...]] = ()
    #: the family's section of the report (:mod:`pipeline.evaluation.reporting`; measures of one
    #: family declare the same one) and this measure's headlines on its first screen
    report_section: ClassVar[ReportSection | None] = None
    headlines: ClassVar[tuple[Headline, ...]] = ()
    #: every row name (``measure``) the measure's rows can have, whatever its params: a gate naming
    #: another is refused when the task is read (the contract test checks the rows against it)
    row_measures: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, params: Params | Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        self.params = self.parse(params if params is not None else kwargs)

    @classmethod
    def parse(cls, params: Params | Mapping[str, Any], where: str | None = None) -> Params:
        """Validate parameters (the only validation); errors name ``where`` (default: the measure
        type), the parameter and the expectation."""
        return parse_params(cls.params_model, params, where or cls.type)

    def check(self, data: EvalData) -> None:
        """Checks that need the data's schema (and cheap aggregates); ``validate`` runs them too."""
        if self.needs_synthetic and data.m == 0:
            raise ParameterError(f"{self.type} needs at least one synthetic data set")
        data.require(self.params.variables())

    def check_aggregates(self, data: EvalData, executor: Executor) -> None:
        """Checks that need a pass over the data (row counts, missing values, variables that are
        all missing): cheap aggregates computed with ``executor``.  A task run and ``validate``
        both call it before any unit's work; :meth:`evaluate` may make them again. None by default."""
        return None

    def block_keys(self, data: EvalData) -> tuple[str, ...]:
        """The variables whose equal values the measure's work must see together (its key blocks:
        the task lays its data out by the keys its block-wise measures share, see
        :meth:`~pipeline.evaluation.primitives.layout.Layouts.lay_out`); () for a measure that does
        not work on key blocks (the default)."""
        return ()

    @abstractmethod
    def evaluate(self, data: EvalData, executor: Executor) -> Result:
        """Evaluate on ``data`` (already checked) with ``executor``."""

    def baseline_units(self, data: EvalData) -> list[tuple[Measure, Footing]]:
        """What a holdout baseline evaluates: (measure, footing) pairs whose rows together hold every
        baseline measure.  Default: this measure with training and holdout records subsampled to one
        size; row-aligned measures override it (:class:`~pipeline.evaluation.footing.PairedFooting`).

        A unit's measure is a part of this one: on any data, its rows are this measure's rows with
        the same (synthetic, measure, params) keys — so where a footing's training group is the
        data themselves (:attr:`~pipeline.evaluation.footing.Footing.training_is_observed`) the
        observed rows stand for it."""
        from pipeline.evaluation.footing import SampledFooting

        return [(self, SampledFooting())]

    def evaluate_mixtures(
        self, first: EvalData, second: EvalData, takes: Sequence[np.ndarray], executor: Executor
    ) -> Iterator[Result] | None:
        """Results on mixtures of two row-aligned data (the same synthetic sets, the same number of
        original records): for each ``take`` (bool per record), the data whose record i is
        ``second``'s where ``take[i]``, else ``first``'s — exactly what :meth:`evaluate` gives on
        that data, made as the iterator advances.  A measure whose figures are sums over records
        of what depends on the record and the synthetic sets alone evaluates each record twice
        instead of every mixture (a row-aligned baseline's relabellings,
        :meth:`PairedFooting.mixtures <pipeline.evaluation.footing.PairedFooting.mixtures>`).
        Default None: not offered (every mixture is evaluated)."""
        return None

    def run(self, data: EvalData, executor: Executor | None = None) -> Result:
        """:meth:`check`, then :meth:`evaluate` (the synthpop-named wrappers call this)."""
        from pipeline.evaluation.execution import Executor

        self.check(data)
        return self.evaluate(data, (executor or Executor.current()).for_measure(self.type))
