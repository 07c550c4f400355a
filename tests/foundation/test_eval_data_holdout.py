"""EvalData's holdout: records the synthesiser never saw, checked and cast as the original."""

from __future__ import annotations

import dask.dataframe as dd
import pandas as pd
import pytest

from pipeline.data.schema import Schema
from pipeline.errors import CompatibilityError, DataError, ParameterError
from pipeline.evaluation.data import as_eval_data

SCHEMA = Schema.from_dict(
    {
        "columns": [
            {"name": "sex", "type": "factor", "levels": ["MALE", "FEMALE"]},
            {"name": "income", "type": "numeric", "missing_codes": [-8]},
        ]
    }
)
TRAIN = pd.DataFrame({"sex": ["MALE", "FEMALE", "MALE"], "income": [10.0, -8.0, 30.0]})
SYN = pd.DataFrame({"sex": ["FEMALE", "FEMALE", "MALE"], "income": [11.0, 12.0, 13.0]})
HOLD = pd.DataFrame({"income": ["5", "-8"], "sex": ["FEMALE", "MALE"]})  # other column order, text


def test_holdout_is_cast_to_the_original_schema_in_its_column_order():
    data = as_eval_data(TRAIN, SYN, schema=SCHEMA, holdout=HOLD)
    h = data.holdout
    assert list(h.columns) == ["sex", "income"]
    assert list(h["sex"].cat.categories) == ["MALE", "FEMALE"] and h["sex"].tolist() == ["FEMALE", "MALE"]
    # the special missing code stays a code, as in the original
    assert h["income"].tolist() == [5.0, -8.0] and data.original["income"].tolist() == [10.0, -8.0, 30.0]
    assert data.m == 1 and len(data.frames) == 2  # the holdout is not one of the frames


def test_select_and_with_frames_keep_the_holdout():
    data = as_eval_data(TRAIN, SYN, schema=SCHEMA, holdout=HOLD)
    assert list(data.select(["income"]).holdout.columns) == ["income"]
    assert data.with_frames(data.frames).holdout is data.holdout


def test_dask_holdout():
    data = as_eval_data(TRAIN, SYN, schema=SCHEMA, holdout=dd.from_pandas(HOLD, npartitions=2))
    assert data.holdout.compute()["sex"].tolist() == ["FEMALE", "MALE"]


def test_bad_holdouts_are_clear_errors():
    with pytest.raises(CompatibilityError, match=r"the holdout: variable\(s\) 'income' of the original are missing"):
        as_eval_data(TRAIN, SYN, schema=SCHEMA, holdout=HOLD[["sex"]])
    with pytest.raises(DataError, match="the holdout"):
        as_eval_data(TRAIN, SYN, schema=SCHEMA, holdout=HOLD.assign(sex=["FEMALE", "OTHER"]))
    with pytest.raises(ParameterError, match="the holdout must be a pandas or Dask DataFrame"):
        as_eval_data(TRAIN, SYN, schema=SCHEMA, holdout=[1, 2])
    with pytest.raises(ParameterError, match="the holdout: duplicated column"):
        as_eval_data(TRAIN, SYN, schema=SCHEMA, holdout=pd.DataFrame([["MALE", 1.0]], columns=["sex", "sex"]))
