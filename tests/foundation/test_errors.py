"""``errors.located``: an error named by its place keeps its documented kind (and its cause)."""

from __future__ import annotations

import pytest

from pipeline.errors import (
    KINDS,
    CompatibilityError,
    DataError,
    ParameterError,
    PipelineError,
    SchemaError,
    TaskError,
    located,
)
from pipeline.run.schedule import run_all


@pytest.mark.parametrize("kind", KINDS)
def test_located_keeps_the_kind_and_puts_the_place_first(kind: type[PipelineError]) -> None:
    error = located("task.yaml: measure disclosure", kind("variable 'sex' is not a factor"))
    assert type(error) is kind
    assert str(error) == "task.yaml: measure disclosure: variable 'sex' is not a factor"


def test_a_subclass_outside_the_kinds_becomes_its_documented_kind() -> None:
    class NarrowError(DataError):
        def __init__(self, path: str, line: int) -> None:  # a signature the message alone does not fit
            super().__init__(f"{path}: line {line}")

    error = located("unit 3", NarrowError("x.csv", 7))
    assert type(error) is DataError and str(error) == "unit 3: x.csv: line 7"
    # a parameter error stays a ValueError, a compatibility error a DataError
    assert isinstance(located("here", ParameterError("bad")), ValueError)
    assert isinstance(located("here", CompatibilityError("levels")), DataError)
    assert not isinstance(located("here", SchemaError("s")), (DataError, TaskError))


def test_a_failing_unit_is_named_with_its_kind_and_cause() -> None:
    def fail(item: str) -> str:
        raise ParameterError(f"{item}: 'k' must be positive")

    with pytest.raises(ParameterError, match=r"^measure m1: m1: 'k' must be positive$") as caught:
        run_all(["m1"], fail, lambda item: f"measure {item}", 1, lambda *_: None)
    assert isinstance(caught.value.__cause__, ParameterError)
