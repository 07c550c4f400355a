"""The registry of synthesisers a task's ``synthesise`` section can ask for: ``kind`` ->
:class:`~pipeline.synth.base.Synthesiser` (``"module:Class"``, beside the measures' registry
:mod:`pipeline.measures`).

:data:`SynthesisSettings` is the discriminated union of their settings models (on ``kind``,
default ``margins``): a task's ``synthesise`` section is parsed into one of them once, when the
task is loaded.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Union

from pydantic import Discriminator, Tag, TypeAdapter

if TYPE_CHECKING:
    from pipeline.synth.base import Synthesiser, SynthesisParams


@dataclass(frozen=True)
class SynthesiserEntry:
    """Where the synthesiser of one ``kind`` and its settings model live."""

    kind: str
    ref: str  # "module:Class" of the Synthesiser subclass
    #: "module:Class" of its settings model (the synthesiser's ``params_model``), in a module that
    #: loads no IPF engine, numba kernel or Dask: loading a task validates with it
    params_ref: str

    @property
    def synthesiser(self) -> type[Synthesiser]:
        return _load(self.ref)

    @property
    def params_model(self) -> type[SynthesisParams]:
        return _load(self.params_ref)


def _load(ref: str) -> Any:
    module, name = ref.split(":")
    return getattr(importlib.import_module(module), name)


_ENTRIES = [
    SynthesiserEntry(
        "margins", "pipeline.synth.coarsened:MarginsSynthesiser", "pipeline.synth.coarsened_params:MarginsParams"
    ),
    SynthesiserEntry(
        "partial", "pipeline.synth.partial.syn:PartialSynthesiser", "pipeline.synth.partial.params:PartialParams"
    ),
]
REGISTRY: dict[str, SynthesiserEntry] = {e.kind: e for e in _ENTRIES}
#: the kind of a ``synthesise`` section that names none
DEFAULT_KIND = "margins"


def _kind(settings: Any) -> str:
    return settings.get("kind", DEFAULT_KIND) if isinstance(settings, dict) else getattr(settings, "kind", None)


#: a ``synthesise`` section: the settings model of its ``kind``
SynthesisSettings = Annotated[
    Union[tuple(Annotated[e.params_model, Tag(e.kind)] for e in _ENTRIES)],  # noqa: UP007
    Discriminator(
        _kind,
        custom_error_type="unknown_kind",
        custom_error_message=f"kind: unknown synthesiser; the kinds are {', '.join(REGISTRY)}",
    ),
]
_SETTINGS: TypeAdapter[SynthesisParams] = TypeAdapter(SynthesisSettings)


def parse_settings(settings: dict[str, Any]) -> SynthesisParams:
    """Validate a ``synthesise`` section into the settings model of its ``kind``.

    Raises
    ------
    pydantic.ValidationError
        An unknown ``kind`` or invalid settings for it.
    """
    return _SETTINGS.validate_python(dict(settings))


def synthesiser(params: SynthesisParams) -> Synthesiser:
    """The synthesiser of validated settings."""
    return REGISTRY[params.kind].synthesiser(params)
