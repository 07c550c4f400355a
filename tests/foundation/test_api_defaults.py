"""Every synthpop-named API wrapper's defaults equal its Params model's (issue 33 item 4).

A wrapper repeats the parameters of its measure's Params model with defaults of its own; a
default changed in one place and not the other would give a different answer from the API
than from a task file.  Parameters are matched by field name or alias; a wrapper's parameter
that the model does not have (data, schema, executor) is not compared.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

import pytest
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from pipeline.compare_fit.api import compare_fit_synds, glm_synds
from pipeline.compare_fit.params import CompareFitParams
from pipeline.risk.disclosure.api import disclosure, multi_disclosure
from pipeline.risk.disclosure.params import DisclosureParams
from pipeline.risk.idrisk.api import identification_risk, radius_sweep
from pipeline.risk.idrisk.params import IdentificationRiskParams, Scenario
from pipeline.utility.api import utility_gen, utility_synds, utility_tab, utility_tables
from pipeline.utility.params import UtilityGenParams, UtilitySyndsParams, UtilityTablesParams, UtilityTabParams

WRAPPERS: list[tuple[Callable, tuple[type[BaseModel], ...]]] = [
    (disclosure, (DisclosureParams,)),
    (multi_disclosure, (DisclosureParams,)),
    (identification_risk, (IdentificationRiskParams, Scenario)),
    (radius_sweep, (IdentificationRiskParams, Scenario)),
    (utility_gen, (UtilityGenParams,)),
    (utility_tab, (UtilityTabParams,)),
    (utility_tables, (UtilityTablesParams,)),
    (utility_synds, (UtilitySyndsParams,)),
    (compare_fit_synds, (CompareFitParams,)),
    (glm_synds, (CompareFitParams,)),
]
# the attacks', dcr's and sdc_risk's wrappers pass their keyword arguments on (``**params``): no
# default of their own to differ from the model's


def _model_defaults(models: tuple[type[BaseModel], ...]) -> dict[str, object]:
    out: dict[str, object] = {}
    for model in models:
        for name, field in model.model_fields.items():
            if field.is_required():
                continue
            default = field.get_default(call_default_factory=True)
            if default is PydanticUndefined:
                continue
            for key in (name, field.alias, field.validation_alias):
                if isinstance(key, str):
                    out.setdefault(key, default)
    return out


def _normalised(value: object, like: object) -> object:
    """Sequences compare as lists (a wrapper's tuple default is the model's list), and a single
    name as the one-element list the model makes of it (``method="cart"`` is ``["cart"]``)."""
    if isinstance(value, str) and isinstance(like, list | tuple):
        return [value]
    return list(value) if isinstance(value, tuple | list) else value


@pytest.mark.parametrize("wrapper, models", WRAPPERS, ids=[w.__name__ for w, _ in WRAPPERS])
def test_wrapper_defaults_equal_the_params_model(wrapper: Callable, models: tuple[type[BaseModel], ...]) -> None:
    defaults = _model_defaults(models)
    compared = 0
    for name, parameter in inspect.signature(wrapper).parameters.items():
        if parameter.default is inspect.Parameter.empty or name not in defaults:
            continue
        compared += 1
        wrapper_default, model_default = parameter.default, defaults[name]
        assert _normalised(wrapper_default, model_default) == _normalised(model_default, wrapper_default), (
            f"{wrapper.__name__}({name}=...) defaults to {wrapper_default!r}, its Params model to {model_default!r}"
        )
    assert compared, f"{wrapper.__name__}: no parameter matched its Params model"
