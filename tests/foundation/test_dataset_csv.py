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
    from pipeline.run.inputs import read_inputs
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
