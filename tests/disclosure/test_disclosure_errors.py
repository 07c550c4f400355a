"""Bad input fails before any output, with a message naming the parameter or variable."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pipeline.errors import CompatibilityError, ParameterError
from pipeline.risk.disclosure import disclosure, multi_disclosure
from pipeline.risk.disclosure.measure import DisclosureMeasure
from pipeline.risk.disclosure.uniques import remove_uniques


@pytest.fixture()
def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(5)
    n = 60

    def draw() -> pd.DataFrame:
        return pd.DataFrame(
            {
                "sex": pd.Categorical(rng.choice(["F", "M"], n)),
                "age": rng.integers(18, 30, n).astype(float),
                "edu": pd.Categorical(rng.choice(["low", "mid", "high"], n)),
                "income": np.where(rng.random(n) < 0.1, -8.0, rng.integers(100, 900, n).astype(float)),
                "smoke": pd.Categorical(rng.choice(["yes", "no"], n)),
            }
        )

    return draw(), draw()


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"keys": ["sex", "height"]}, ParameterError, "height"),
        ({"target": "weight"}, ParameterError, "weight"),
        ({"target": "sex"}, ParameterError, r"target\(s\) \['sex'\] cannot also be keys"),
        ({"keys": ["sex", "sex"]}, ParameterError, "duplicated"),
        ({"ngroups_target": 1}, ParameterError, "ngroups_target"),
        ({"ngroups_keys": [0, 1]}, ParameterError, "ngroups_keys\\['age'\\]"),
        ({"ngroups_keys": -3}, ParameterError, "must not be negative"),
        ({"thresh_1way": (-1, 90)}, ParameterError, "thresh_1way"),
        ({"thresh_2way": (4, -80)}, ParameterError, "thresh_2way"),
        ({"thresh_2way": (4,)}, ParameterError, "thresh_2way"),
        ({"denom_lim": 0}, ParameterError, "denom_lim"),
        ({"denom_lim": 2.5}, ParameterError, "denom_lim"),
        ({"usekeysNA": [True, False, True]}, ParameterError, "usekeysNA"),
        ({"usetargetNA": "no"}, ParameterError, "usetargetNA"),
        (
            {"exclude_keys": ["edu"], "exclude_keylevs": ["low"], "exclude_targetlevs": []},
            ParameterError,
            "same length",
        ),
        (
            {"exclude_keys": ["edu"], "exclude_keylevs": ["low"], "exclude_targetlevs": ["no"]},
            ParameterError,
            "exclude_keys",
        ),
        (
            {"exclude_keys": ["sex"], "exclude_keylevs": ["X"], "exclude_targetlevs": ["no"]},
            ParameterError,
            "exclude_keylevs: 'X'",
        ),
        (
            {"exclude_keys": ["sex"], "exclude_keylevs": ["F"], "exclude_targetlevs": ["maybe"]},
            ParameterError,
            "exclude_targetlevs: 'maybe'",
        ),
        ({"cont_na": {"age": 99}}, ParameterError, "do not occur in the original"),
        ({"cont_na": {"height": -8}}, ParameterError, "height"),
        ({"cont_na": {"sex": -8}}, ParameterError, "categorical"),
    ],
)
def test_bad_parameters(frames, kwargs, error, message) -> None:
    call = {"keys": ["sex", "age"], "target": "smoke", **kwargs}
    with pytest.raises(error, match=message):
        disclosure(*frames, **call)


@pytest.mark.parametrize("option", ["n_blocks", "engine"])
def test_where_to_compute_is_not_a_parameter(option) -> None:
    """Blocks and engines are the executor's business (Executor(policy=..., block_rows=...))."""
    with pytest.raises(ParameterError, match=option):
        DisclosureMeasure({"keys": ["sex", "age"], "target": "smoke", option: 2})


def test_variable_missing_from_a_synthetic_set(frames) -> None:
    original, synthetic = frames
    with pytest.raises(CompatibilityError, match=r"'edu'.*synthetic set 2"):
        disclosure(original, [synthetic, synthetic.drop(columns="edu")], ["sex", "edu"], "smoke")
    with pytest.raises(CompatibilityError, match="smoke"):
        disclosure(original, synthetic.drop(columns="smoke"), ["sex", "edu"], "smoke")


def test_key_with_only_missing_values(frames) -> None:
    original, synthetic = frames
    with pytest.raises(ParameterError, match="'edu' has only missing values in the original"):
        disclosure(
            original.assign(edu=pd.Categorical([None] * len(original), categories=["low", "mid", "high"])),
            synthetic,
            ["sex", "edu"],
            "smoke",
        )
    with pytest.raises(ParameterError, match="'age' has only missing values in synthetic set 1"):
        disclosure(original, synthetic.assign(age=np.nan), ["sex", "age"], "smoke")


def test_levels_that_cannot_be_aligned(frames) -> None:
    """Every synthetic set is cast to the original's schema at the data boundary."""
    original, synthetic = frames
    as_numbers = synthetic.assign(edu=synthetic["edu"].cat.codes.astype(float))
    with pytest.raises(CompatibilityError, match=r"synthetic set 1: variable 'edu' .* not one of its 3 schema levels"):
        disclosure(original, as_numbers, ["sex", "edu"], "smoke")
    clash = synthetic.assign(sex=pd.Categorical.from_codes(np.arange(len(synthetic)) % 2, categories=[1, "1"]))
    with pytest.raises(CompatibilityError, match=r"synthetic set 1: variable 'sex' .* not one of its 2 schema levels"):
        disclosure(original, clash, ["sex", "edu"], "smoke")


def test_messages_name_no_record_values(frames) -> None:
    original, synthetic = frames
    with pytest.raises(ParameterError) as err:
        disclosure(original, synthetic.assign(age=np.nan), ["sex", "age"], "smoke")
    assert not any(str(v) in str(err.value) for v in original["age"].unique())


def test_multi_disclosure_parameters(frames) -> None:
    with pytest.raises(ParameterError, match="cannot also be keys"):
        multi_disclosure(*frames, ["sex", "age"], targets=["age", "smoke"])
    with pytest.raises(ParameterError, match="one entry per target"):
        multi_disclosure(*frames, ["sex"], targets=["edu", "smoke"], usetargetsNA=[True])
    with pytest.raises(ParameterError, match="ident_meas"):
        multi_disclosure(*frames, ["sex"], ident_meas="UiO")
    with pytest.raises(ParameterError, match="ngroups_target"):
        multi_disclosure(*frames, ["sex"], targets=["income"], ngroups_targets=1)


def test_remove_uniques_needs_a_choice(frames) -> None:
    with pytest.raises(ParameterError, match="nothing to remove"):
        remove_uniques(*frames, ["sex", "age"])
