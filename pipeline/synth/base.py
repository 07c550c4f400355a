"""The synthesiser contract: ``SynthesisParams`` -> ``Synthesiser.synthesise(original, executor)``.

It mirrors the measure contract (:mod:`pipeline.evaluation.base`). Every synthesiser a task's
``synthesise`` section can name (its ``kind``, :mod:`pipeline.synthesisers`) is a
:class:`Synthesiser` subclass with

* a pydantic :class:`SynthesisParams` model — the only validation of its settings, bounds as
  field constraints, so a task with ``m: 0`` is refused when it is loaded;
* :meth:`Synthesiser.schema` — the schema of the sets it would make from an original, without
  synthesising (the checks a run and ``validate`` make before any work);
* :meth:`Synthesiser.synthesise` over one original :class:`~pipeline.data.dataset.Dataset`
  and one :class:`~pipeline.evaluation.execution.Executor`, returning a :class:`SynthesisOutput`
  (the m sets, their schema, rows of the results table, a release to write).

What a synthesiser sees is decided before it is called: a dataset's ``holdout: {fraction}``
splits the original once (:class:`~pipeline.run.split.HoldoutSplit`, run by
:mod:`pipeline.run.inputs` after reading the original), and every synthesiser of that dataset
gets the training part as its ``original`` — the same call, no synthesiser special case.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pipeline.config_io import Seed, validation_message
from pipeline.data.schema import Schema
from pipeline.errors import ParameterError
from pipeline.evaluation.base import Row, canonical_params
from pipeline.evaluation.reporting import ReportSection

if TYPE_CHECKING:  # the settings models are part of a task file: loading one imports no Dask
    from pipeline.data.dataset import Dataset
    from pipeline.evaluation.data import Frame
    from pipeline.evaluation.execution import Executor

OutputFormat = Literal["parquet", "csv"]


class SynthesisParams(BaseModel):
    """Base of every synthesiser's settings (unknown settings are errors).

    Attributes
    ----------
    kind : str
        The synthesiser (:mod:`pipeline.synthesisers`); each subclass narrows it to its own.
    m : int
        Number of synthetic sets (>= 1).
    seed : int, optional
        Seed of repetition 0 (default: the task's); repetition r uses seed + r.
    output_format : list of {"parquet", "csv"}
        Formats of the released sets (at least one).
    """

    model_config = ConfigDict(extra="forbid")

    kind: str
    #: at most 1,000 sets per release (synthpop's studies use up to 100; a typo such as 1e20 is
    #: refused at load instead of allocating sets for hours)
    m: int = Field(1, ge=1, le=1_000, description="number of synthetic sets")
    seed: Seed | None = None
    output_format: list[OutputFormat] = Field(default_factory=lambda: ["parquet"], min_length=1)

    def canonical(self) -> dict[str, Any]:
        """The settings as JSON with every default left out, ``kind`` (a tag) always in
        (:func:`~pipeline.evaluation.base.canonical_params`): equal for a task that spells a
        default out and one that omits it (fingerprints, results' ``params``)."""
        return canonical_params(self)


class SynthesisOutput(Protocol):
    """What :meth:`Synthesiser.synthesise` returns: the sets, their schema, rows, a release."""

    synthetic: list[pd.DataFrame]
    schema: Schema

    def rows(self) -> list[Row]: ...

    def public_dict(self) -> dict[str, Any]: ...

    def write(self, out_dir: str | Path, overwrite: bool = False, formats: Sequence[str] | None = None) -> Path: ...


class Synthesiser(ABC):
    """A synthesiser: validated settings, the schema of its output, and a synthesis on one executor.

    Subclasses set :attr:`kind` (the task-file name), :attr:`params_model` and implement
    :meth:`schema_of` and :meth:`synthesise_frame`.
    """

    kind: ClassVar[str]
    params_model: ClassVar[type[SynthesisParams]]
    #: whether the synthesiser collects the whole original into memory (its sets then have the
    #: original's records; a run synthesises and evaluates them in one task on a worker when the
    #: executor keeps the original in memory, :mod:`pipeline.run.groups`)
    collects_original: ClassVar[bool] = False
    #: whether row i of every set is the synthetic version of original record i (partial synthesis);
    #: else the records are new draws, on which row-aligned measures (identification risk) mean nothing
    row_aligned: ClassVar[bool] = False
    description: ClassVar[str] = ""
    #: the report's section of this kind's synthesis rows (family ``synthesis``) and every row
    #: name they can have (gates naming another are refused when the task is read)
    report_section: ClassVar[ReportSection | None] = None
    row_measures: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, params: SynthesisParams | Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        self.params = self.parse(params if params is not None else kwargs)

    @classmethod
    def parse(cls, params: SynthesisParams | Mapping[str, Any], where: str | None = None) -> SynthesisParams:
        """Validate settings (the only validation); errors name ``where`` (default: the kind)."""
        if isinstance(params, cls.params_model):
            return params
        try:
            return cls.params_model.model_validate({"kind": cls.kind, **dict(params)})
        except ValidationError as e:
            raise ParameterError(f"{where or cls.kind}: invalid settings: {validation_message(e)}") from None

    @property
    def m(self) -> int:
        """Number of synthetic sets."""
        return self.params.m

    def synthesised_variables(self) -> frozenset[str] | None:
        """The variables its sets hold synthetic values of (synthpop's method is not ``""``);
        ``None``: every variable of its output."""
        return None

    def with_seed(self, seed: int) -> Synthesiser:
        """The same synthesiser with another seed (one repetition of a task)."""
        return type(self)(self.params.model_copy(update={"seed": seed}))

    def privacy_spend(self) -> tuple[float, float, str] | None:
        """(ε, δ, noise) a release spends under basic composition; None when it is not differentially private."""
        return None

    def schema(self, original: Dataset, executor: Executor | None = None) -> Schema:
        """The schema of the sets :meth:`synthesise` would make from ``original``, without synthesising.

        Runs every check of the settings against the data that :meth:`synthesise` makes.

        Raises
        ------
        ParameterError
            Settings that do not fit the data (unknown variables, methods, SDC steps, …).
        """
        from pipeline.evaluation.execution import Executor

        return self.schema_of(original, executor or Executor.current())

    def synthesise(self, original: Dataset, executor: Executor | None = None) -> SynthesisOutput:
        """Make the m synthetic sets of ``original`` with ``executor`` (default :meth:`Executor.current`)."""
        from pipeline.evaluation.execution import Executor

        return self.synthesise_frame(original.frame, original.schema, executor or Executor.current())

    def plan_lines(self, schema: Schema) -> list[str]:
        """The plan of the synthesis of data with ``schema`` for people (``validate`` prints it,
        the report shows it): for a partial synthesis one line per synthesised variable with its
        method and predictors. None by default."""
        return []

    @abstractmethod
    def schema_of(self, original: Dataset, executor: Executor) -> Schema:
        """:meth:`schema` with the executor given."""

    @abstractmethod
    def synthesise_frame(self, frame: Frame, schema: Schema, executor: Executor) -> SynthesisOutput:
        """:meth:`synthesise` on a frame in ``schema``'s in-memory form."""
