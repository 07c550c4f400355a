"""The registry of measures a task can ask for.

Each entry binds a task-file ``type`` to a pydantic parameter model and an
``evaluate(original, synthetic, params)`` function returning a result with ``.tidy()``
(columns ``synthetic, setting, measure, value``) and ``.to_dict()``.  Entries are imported
lazily so that a task only loads the modules it uses.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from pipeline.data.dataset import Dataset
from pipeline.errors import TaskError

#: parameter names whose values are variable names (checked against the schema before running)
VARIABLE_PARAMS = (
    "keys",
    "target",
    "targets",
    "vars",
    "variables",
    "known",
    "synthesised",
    "exclude_keys",
)


@dataclass(frozen=True)
class MeasureEntry:
    """How to run one measure type."""

    type: str
    family: str
    model: str  # "module:Class" of the pydantic parameter model
    function: str  # "module:function" evaluate(original, synthetic, params)
    needs_synthetic: bool = True
    description: str = ""

    def _load(self, ref: str) -> Any:
        module, name = ref.split(":")
        return getattr(importlib.import_module(module), name)

    @property
    def params_model(self) -> type[BaseModel]:
        return self._load(self.model)

    @property
    def evaluate(self) -> Callable[..., Any]:
        return self._load(self.function)

    def validate(self, params: dict[str, Any], where: str) -> BaseModel:
        """Validate a unit's parameters (errors name the task file, the measure and the setting)."""
        try:
            return self.params_model.model_validate(params)
        except ValidationError as e:
            parts = []
            for err in e.errors():
                loc = ".".join(str(x) for x in err["loc"])
                parts.append(f"{loc}: {err['msg'].removeprefix('Value error, ')}" if loc else err["msg"])
            raise TaskError(f"{where}: invalid parameters: " + "; ".join(parts)) from None


def referenced_variables(params: dict[str, Any]) -> list[str]:
    """Variable names a measure's parameters refer to (flattening lists, key sets and mappings)."""
    out: list[str] = []

    def walk(v: Any) -> None:
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, (list, tuple)):
            for x in v:
                walk(x)
        elif isinstance(v, dict):
            for k in v:
                out.append(str(k))

    for name in VARIABLE_PARAMS:
        if name in params and params[name] is not None:
            walk(params[name])
    if isinstance(params.get("radius"), dict):
        out.extend(str(k) for k in params["radius"])
    return list(dict.fromkeys(out))


def check_variables(params: dict[str, Any], datasets: list[Dataset], where: str) -> None:
    """Fail before any work when a parameter names a variable absent from a data set."""
    names = referenced_variables(params)
    for d in datasets:
        missing = [n for n in names if n not in d.schema]
        if missing:
            raise TaskError(
                f"{where}: variable(s) {', '.join(map(repr, missing))} not found in {d.source}; "
                f"it has: {', '.join(d.schema.names)}"
            )


_ENTRIES = [
    MeasureEntry(
        "profile",
        "profile",
        "pipeline.profile:ProfileParams",
        "pipeline.profile:evaluate_profile",
        needs_synthetic=False,
        description="per-variable counts, missing values and special codes",
    ),
    MeasureEntry(
        "key_blocks",
        "profile",
        "pipeline.profile:KeyBlockParams",
        "pipeline.profile:evaluate_key_blocks",
        description="distribution of key-combination sizes, computed on Dask key blocks",
    ),
]
REGISTRY: dict[str, MeasureEntry] = {e.type: e for e in _ENTRIES}
