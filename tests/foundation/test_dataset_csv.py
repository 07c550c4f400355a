"""Issue 16 (4): CSV problems are named by file and line; an encoding can be given."""

from __future__ import annotations

import json

import pytest

from pipeline.data.dataset import read_dataset
from pipeline.errors import DataError


def _write(path, text: bytes):
    path.write_bytes(text)
    return path


def test_short_and_long_rows_are_named_by_line(tmp_path):
    short = _write(tmp_path / "short.csv", b'a,b,c\n1,2,3\n"x,y",5,6\n4,5\n')
    expected = r"short\.csv: line 4 has 2 fields, the header has 3 \(first missing column: 'c'\)"
    with pytest.raises(DataError, match=expected):
        read_dataset(short)
    long = _write(tmp_path / "long.csv", b"a,b,c\n1,2,3\n4,5,6,7\n")
    with pytest.raises(DataError, match=r"long\.csv: line 3 has 4 fields, the header has 3"):
        read_dataset(long)


def test_bad_byte_is_named_by_line_and_byte_and_never_quoted(tmp_path):
    bad = _write(tmp_path / "latin.csv", b"name,n\nabc,1\nSECRETcaf\xe9,2\n")
    with pytest.raises(DataError) as e:
        read_dataset(bad)
    assert str(e.value).startswith(f"{bad}: line 3, byte 10: not valid utf-8 text")
    assert "SECRET" not in str(e.value)


def test_encoding_from_the_argument_the_schema_or_the_task(tmp_path):
    from pipeline.runner import read_inputs
    from pipeline.tasks import load_task

    data = _write(tmp_path / "latin.csv", b"name,n\ncaf\xe9,1\ntea,2\n")
    assert list(read_dataset(data, encoding="latin-1").to_pandas()["name"]) == ["café", "tea"]
    schema = {"encoding": "latin-1", "columns": [{"name": "name", "type": "factor", "levels": ["café", "tea"]},
                                                 {"name": "n", "type": "integer"}]}  # fmt: skip
    (tmp_path / "latin.schema.json").write_text(json.dumps(schema), encoding="utf-8")
    assert list(read_dataset(data).to_pandas()["name"]) == ["café", "tea"]  # the sibling schema's encoding
    (tmp_path / "latin.schema.json").unlink()
    task = tmp_path / "task.yaml"
    task.write_text(
        "name: t\ndatasets:\n  - name: d\n    original: {path: latin.csv, encoding: latin-1}\n"
        "    synthetic:\n      - {name: s, paths: [latin.csv]}\n"
        "measures:\n  - type: profile\n",
        encoding="utf-8",
    )
    inputs = read_inputs(load_task(task))
    _, sets = inputs.synthetic[("d", "s", 0)]
    assert list(sets[0].to_pandas()["name"]) == ["café", "tea"]  # sources inherit the original's encoding
    with pytest.raises(DataError, match="unknown encoding 'klingon'"):
        read_dataset(data, encoding="klingon")


def test_schema_command_infers_a_latin1_csv_and_records_its_encoding(tmp_path):
    from click.testing import CliRunner

    from pipeline.cli import main

    data = tmp_path / "towns.csv"
    data.write_bytes("town,income\nK\xf6ln,10\nM\xfcnchen,20\nK\xf6ln,30\n".encode("latin-1"))
    refused = CliRunner().invoke(main, ["schema", str(data)])
    assert refused.exit_code == 2 and "--encoding latin-1" in refused.output
    written = tmp_path / "towns.schema.json"
    r = CliRunner().invoke(main, ["schema", str(data), "--encoding", "latin-1", "--write", str(written)])
    assert r.exit_code == 0, r.output
    schema = json.loads(written.read_text(encoding="utf-8"))
    assert schema["encoding"] == "latin-1"
    assert schema["columns"][0] == {"name": "town", "type": "factor", "ordered": False, "levels": ["Köln", "München"]}
    # the schema beside the file now reads it without the option
    assert CliRunner().invoke(main, ["schema", str(data)]).exit_code == 0


def test_a_utf8_byte_order_mark_is_not_part_of_the_first_name(tmp_path):
    p = tmp_path / "excel.csv"
    p.write_bytes(b"\xef\xbb\xbfsex,age\nM,30\nF,41\n")
    ds = read_dataset(p)
    assert list(ds.schema.names) == ["sex", "age"] and ds.frame.compute()["age"].tolist() == [30.0, 41.0]


def test_infinite_values_are_not_numbers(tmp_path):
    import pandas as pd

    from pipeline.data.schema import Schema

    p = tmp_path / "inf.csv"
    p.write_text("a,b\n1,2.5\n3,inf\n5,1e400\n7,-Infinity\n", encoding="utf-8")
    # inferred: like a column holding NaN, the column is not numeric
    assert read_dataset(p).schema["b"].kind == "factor"
    schema = Schema.from_dict({"columns": [{"name": "a", "type": "integer"}, {"name": "b", "type": "numeric"}]})
    with pytest.raises(DataError, match=r"variable 'b' is numeric but 3 record\(s\) are not numbers \(infinite"):
        read_dataset(p, schema=schema).frame.compute()
    with pytest.raises(DataError, match=r"variable 'b' is numeric but 1 record\(s\) are not numbers \(infinite"):
        schema.apply(pd.DataFrame({"a": [1.0, 2.0], "b": [1.5, float("inf")]}))
