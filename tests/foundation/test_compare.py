import pandas as pd
import pytest

from pipeline.data.compare import align_synthetic, compare_schemas
from pipeline.data.dataset import Dataset
from pipeline.data.schema import Schema, Variable
from pipeline.errors import CompatibilityError

ORIG = Schema((Variable("sex", "factor", ("M", "F")), Variable("age", "integer"), Variable("inc", "numeric")))


def _ds(schema: Schema, frame: dict, name: str) -> Dataset:
    ds = Dataset.from_pandas(pd.DataFrame(frame), schema, name=name)
    return Dataset(ds.name, ds.frame, ds.schema, f"{name}.csv")


def test_identical_schemas_pass_unchanged():
    o = _ds(ORIG, {"sex": ["M"], "age": [3], "inc": [1.0]}, "orig")
    s = _ds(ORIG, {"sex": ["F"], "age": [4], "inc": [2.0]}, "syn1")
    o2, syn, changes = align_synthetic(o, [s])
    assert changes == [] and o2 is o and syn[0] is s


def test_strict_mode_names_file_variable_and_mismatch():
    syn_schema = Schema((Variable("sex", "factor", ("M", "F", "X")), Variable("age", "numeric")))
    o = _ds(ORIG, {"sex": ["M"], "age": [3], "inc": [1.0]}, "orig")
    s = _ds(syn_schema, {"sex": ["X"], "age": [4.5]}, "syn2")
    with pytest.raises(CompatibilityError) as e:
        align_synthetic(o, [s], "strict")
    msg = str(e.value)
    # the count of levels, never their labels (levels of confidential data are values)
    assert "syn2.csv: variable 'sex': 1 level(s) only in the synthetic data" in msg and "'X'" not in msg
    assert "syn2.csv: variable 'inc': present in the original but missing in the synthetic data" in msg


def test_align_mode_uses_union_of_levels_and_common_variables_for_all_sets():
    syn_schema = Schema((Variable("sex", "factor", ("M", "F", "X")), Variable("age", "numeric")))
    o = _ds(ORIG, {"sex": ["M", "F"], "age": [3, 5], "inc": [1.0, 2.0]}, "orig")
    s1 = _ds(syn_schema, {"sex": ["X", "M"], "age": [4.5, 1]}, "syn1")
    s2 = _ds(syn_schema, {"sex": ["F", "F"], "age": [2, 2]}, "syn2")
    o2, syn, changes = align_synthetic(o, [s1, s2], "align")
    assert len(syn) == 2  # synthpop would silently keep only the first set
    assert o2.schema.names == ["sex", "age"]
    assert o2.schema["sex"].levels == ("M", "F", "X") and o2.schema["age"].kind == "numeric"
    assert list(syn[0].to_pandas()["sex"].astype(object)) == ["X", "M"]
    assert {c.variable for c in changes} == {"sex", "inc"}  # integer vs numeric is no mismatch


def test_kind_mismatch_cannot_be_aligned():
    syn_schema = Schema((Variable("sex", "character"), Variable("age", "integer"), Variable("inc", "numeric")))
    o = _ds(ORIG, {"sex": ["M"], "age": [3], "inc": [1.0]}, "orig")
    s = _ds(syn_schema, {"sex": ["M"], "age": [3], "inc": [1.0]}, "syn1")
    assert "kind differs: original factor, synthetic character" in str(compare_schemas(ORIG, syn_schema, "s")[0])
    with pytest.raises(CompatibilityError, match=r"syn1\.csv: variable 'sex': cannot align kind factor with character"):
        align_synthetic(o, [s], "align")
