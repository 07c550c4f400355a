import numpy as np
import pandas as pd
import pytest

from pipeline.data.schema import Schema, Variable
from pipeline.datasets import demo_path
from pipeline.errors import DataError, SchemaError


def test_schema_json_keeps_level_order_and_kinds():
    s = Schema.from_json(demo_path("sd2011_subset.schema.json"))
    assert s.names[:3] == ["sex", "age", "agegr"]
    assert s["placesize"].levels[0] == "URBAN 500,000 AND OVER"
    assert s["agegr"].levels == ("16-24", "25-34", "35-44", "45-59", "60-64", "65+")
    assert s["age"].kind == "numeric"
    assert s.factors[:2] == ["sex", "agegr"]
    round_trip = Schema.from_dict(s.to_dict())
    assert round_trip == s


def test_apply_casts_levels_in_schema_order_and_flags_unknown_levels():
    s = Schema((Variable("edu", "factor", ("low", "mid", "high")), Variable("income", "numeric", missing_codes=(-8,))))
    df = pd.DataFrame({"income": ["100", "-8", ""], "edu": ["high", None, "low"]})
    out = s.apply(df, "x.csv")
    assert list(out.columns) == ["edu", "income"]
    assert list(out["edu"].cat.categories) == ["low", "mid", "high"]
    assert out["edu"].isna().tolist() == [False, True, False]
    assert out["income"].tolist()[:2] == [100.0, -8.0] and np.isnan(out["income"].iloc[2])
    assert s.cont_na == {"income": (-8.0,)}
    with pytest.raises(DataError, match=r"x.csv: variable 'edu' has 1 record\(s\) whose value is not one of its 3"):
        s.apply(pd.DataFrame({"edu": ["SECRET-VALUE"], "income": [1]}), "x.csv")


def test_error_messages_do_not_leak_values():
    s = Schema((Variable("income", "numeric"),))
    with pytest.raises(DataError) as e:
        s.apply(pd.DataFrame({"income": ["12345-secret"]}), "orig.csv")
    assert "12345" not in str(e.value) and "orig.csv" in str(e.value) and "income" in str(e.value)


def test_integer_codes_become_factor_labels():
    s = Schema((Variable("Educ", "factor", ("0", "10", "16")),))
    out = s.apply(pd.DataFrame({"Educ": [16.0, 0.0, np.nan]}))
    assert out["Educ"].astype(object).tolist()[:2] == ["16", "0"] and pd.isna(out["Educ"].iloc[2])


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"columns": [{"name": "a", "type": "factor"}]}, "needs its list of levels"),
        ({"columns": [{"name": "a", "type": "date"}]}, "unknown kind 'date'"),
        ({"columns": [{"name": "a", "type": "numeric"}, {"name": "a", "type": "numeric"}]}, "duplicated column"),
        ({"cols": []}, "expected an object with a 'columns' list"),
        ({"columns": [{"name": "a", "type": "factor", "levels": ["x"], "missing_codes": [-8]}]}, "special missing"),
    ],
)
def test_bad_schemas(bad, message):
    with pytest.raises(SchemaError, match=message):
        Schema.from_dict(bad)


def test_infer_uses_code_point_order_and_kinds():
    df = pd.DataFrame(
        {"g": ["b", "B", "a"], "n": [1.5, 2, 3], "i": [1, 2, 3], "c": pd.Categorical(["z", "y", "z"], ["z", "y"])}
    )
    s = Schema.infer(df)
    assert s["g"].levels == ("B", "a", "b")
    assert (s["n"].kind, s["i"].kind) == ("numeric", "integer")
    assert s["c"].levels == ("z", "y")
