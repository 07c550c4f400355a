"""Reading every supported format into schema-typed Dask frames."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyreadr
import pyreadstat
import pytest

from pipeline.data.dataset import read_dataset, write_dataset
from pipeline.datasets import demo_path, load_demo, load_demo_synthetic
from pipeline.errors import DataError

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture(scope="module")
def sample() -> pd.DataFrame:
    return (
        load_demo("sd2011_subset")
        .to_pandas()
        .iloc[:40][["sex", "age", "edu", "income", "smoke"]]
        .reset_index(drop=True)
    )


def test_demo_sd2011_has_special_missing_codes_and_levels():
    ds = load_demo("sd2011_subset")
    pdf = ds.to_pandas()
    assert pdf.shape == (5000, 12)
    assert ds.schema["income"].missing_codes == (-8.0,)
    assert int((pdf["income"] == -8).sum()) == 603
    assert pdf["marital"].cat.categories[0] == "SINGLE"
    assert len(load_demo_synthetic("sd2011_cart")) == 5


def test_demo_cedata_factor_levels_are_sorted_codes():
    pdf = load_demo("cedata").to_pandas()
    assert list(pdf["Educ"].cat.categories) == ["0", "10", "11", "12", "13", "14", "15", "16"]
    assert pdf.shape == (5571, 7)
    assert pdf["Income"].dtype == np.float64


def _check(frame: pd.DataFrame, sample: pd.DataFrame) -> None:
    assert frame["age"].tolist() == sample["age"].tolist()
    assert frame["sex"].astype(object).tolist() == sample["sex"].astype(object).tolist()
    np.testing.assert_array_equal(frame["income"].to_numpy(), sample["income"].to_numpy())


def test_csv_with_schema_file_beside(tmp_path, sample):
    write_dataset(sample, tmp_path / "s.csv", schema=load_demo("sd2011_subset").schema.select(list(sample.columns)))
    ds = read_dataset(tmp_path / "s.csv")
    assert json.loads((tmp_path / "s.schema.json").read_text())["columns"][2]["levels"][0] == "PRIMARY/NO EDUCATION"
    _check(ds.to_pandas(), sample)
    assert list(ds.to_pandas()["edu"].cat.categories) == list(sample["edu"].cat.categories)


def test_parquet_keeps_categories(tmp_path, sample):
    sample.to_parquet(tmp_path / "s.parquet")
    ds = read_dataset(tmp_path / "s.parquet")
    assert ds.schema["edu"].levels == tuple(sample["edu"].cat.categories)
    _check(ds.to_pandas(), sample)


def test_stata_value_labels(tmp_path, sample):
    sample.to_stata(tmp_path / "s.dta", write_index=False)
    ds = read_dataset(tmp_path / "s.dta")
    assert ds.schema["sex"].levels == ("MALE", "FEMALE")
    _check(ds.to_pandas(), sample)


def test_spss_value_labels(tmp_path, sample):
    coded = sample.copy()
    labels = {}
    for c in ("sex", "edu", "smoke"):
        cats = list(sample[c].cat.categories)
        coded[c] = sample[c].cat.codes.replace(-1, np.nan).astype(float) + 1
        labels[c] = {float(i + 1): lv for i, lv in enumerate(cats)}
    pyreadstat.write_sav(coded, str(tmp_path / "s.sav"), variable_value_labels=labels)
    ds = read_dataset(tmp_path / "s.sav")
    assert ds.schema["edu"].levels == tuple(sample["edu"].cat.categories)
    _check(ds.to_pandas(), sample)


def test_sas7bdat_with_schema(sample):
    schema = load_demo("sd2011_subset").schema.select(["sex", "age", "edu", "income", "smoke"])
    ds = read_dataset(DATA / "sd2011_sample.sas7bdat", schema=schema)
    _check(ds.to_pandas(), sample)


def test_rds_factor_levels_in_order(tmp_path, sample):
    pyreadr.write_rds(str(tmp_path / "s.rds"), sample)
    ds = read_dataset(tmp_path / "s.rds")
    assert ds.schema["edu"].levels == tuple(sample["edu"].cat.categories)
    _check(ds.to_pandas(), sample)


def test_missing_codes_added_on_read():
    ds = read_dataset(
        demo_path("sd2011_subset.csv"), schema=demo_path("sd2011_subset.schema.json"), missing_codes={"income": -8}
    )
    assert ds.schema.cont_na == {"income": (-8.0,)}


@pytest.mark.parametrize(
    "content, suffix, message",
    [
        (None, ".csv", "data file not found"),
        ("a,b\n", ".csv", "the data set is empty"),
        ("", ".csv", r"bad.csv: the file is empty \(0 bytes\)"),  # issue 36: was ArrowInvalid
        ("", ".parquet", r"bad.parquet: the file is empty \(0 bytes\)"),
        ("a,a\n1,2\n", ".csv", "duplicated column"),
        ("x", ".xlsx", "unsupported format '.xlsx'"),
        ("not a parquet file", ".parquet", "cannot read as .parquet"),
    ],
)
def test_bad_files(tmp_path, content, suffix, message):
    p = tmp_path / f"bad{suffix}"
    if content is not None:
        p.write_text(content)
    with pytest.raises(DataError, match=message):
        read_dataset(p)


def test_schema_column_missing_in_file(tmp_path):
    (tmp_path / "d.csv").write_text("sex,age\nMALE,3\n")
    with pytest.raises(DataError, match=r"d.csv: column\(s\) income required by the schema are missing"):
        read_dataset(tmp_path / "d.csv", schema=demo_path("sd2011_subset.schema.json"), columns=["sex", "income"])
