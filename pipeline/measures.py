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

from pipeline.config_io import validation_message
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


#: parameter names whose values are mappings keyed by variable name
MAPPING_PARAMS = ("radius", "radius_grid", "cont_na", "ngroups_target")


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
            raise TaskError(f"{where}: invalid parameters: {validation_message(e)}") from None


def referenced_variables(params: dict[str, Any]) -> list[str]:
    """Variable names a measure's parameters refer to, at any depth (e.g. inside scenarios)."""
    out: list[str] = []

    def names(v: Any) -> None:
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, (list, tuple)):
            for x in v:
                names(x)
        elif isinstance(v, dict):
            out.extend(str(k) for k in v)

    def walk(d: Any) -> None:
        if isinstance(d, dict):
            for k, v in d.items():
                if k in VARIABLE_PARAMS and v is not None:
                    names(v)
                elif k in MAPPING_PARAMS and isinstance(v, dict):
                    out.extend(str(x) for x in v)
                else:
                    walk(v)
        elif isinstance(d, list):
            for x in d:
                walk(x)

    walk(params)
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
_ENTRIES += [
    MeasureEntry(
        "disclosure",
        "disclosure",
        "pipeline.risk.disclosure.task:DisclosureParams",
        "pipeline.risk.disclosure.task:evaluate",
        description="synthpop disclosure() / multi.disclosure(): repU, DiSCO, UiO, Dorig, CAPs, flags",
    ),
    MeasureEntry(
        "identification_risk",
        "identification_risk",
        "pipeline.risk.idrisk.task:IdentificationRiskParams",
        "pipeline.risk.idrisk.task:evaluate",
        description="Hornby & Hu identification risk with radius matching and radius sweeps",
    ),
    MeasureEntry(
        "utility_gen",
        "utility",
        "pipeline.utility.task:UtilityGenParams",
        "pipeline.utility.task:evaluate_gen",
        description="synthpop utility.gen(): propensity pMSE, S_pMSE, pMSE ratio (logit or CART)",
    ),
    MeasureEntry(
        "utility_tab",
        "utility",
        "pipeline.utility.task:UtilityTabParams",
        "pipeline.utility.task:evaluate_tab",
        description="synthpop utility.tab(): table utility (pMSE, S_pMSE, VW, FT, JSD, SPECKS, ...)",
    ),
    MeasureEntry(
        "utility_tables",
        "utility",
        "pipeline.utility.task:UtilityTablesParams",
        "pipeline.utility.task:evaluate_tables",
        description="synthpop utility.tables(): every low-order table and the heat map",
    ),
]
REGISTRY: dict[str, MeasureEntry] = {e.type: e for e in _ENTRIES}
