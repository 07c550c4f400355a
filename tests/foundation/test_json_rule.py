"""The one rule for non-finite numbers in the JSON files a run writes (``results.jsonable``), and
the one writer that applies it (``results.json_text``): no other module of the package writes JSON."""

from __future__ import annotations

import ast
import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.datasets import load_demo, load_demo_synthetic
from pipeline.results import json_text, jsonable
from pipeline.run.cache import UnitOutput, cached_output, store_output
from pipeline.utility.api import utility_gen, utility_synds
from pipeline.utility.result import UtilityTabResult


def test_nan_is_null_and_infinities_are_strings_in_every_container():
    summary = {
        "S_pMSE": [1.5, math.inf, -math.inf, math.nan],
        "np": np.array([np.inf, np.nan, 2.0]),
        "scalar": np.float64(np.inf),
        "series": pd.Series({"a": -np.inf, "b": 0.25}),
        "frame": pd.DataFrame({"x": [np.nan, 1.0]}),
        "missing": pd.NA,
        7: (np.int64(3), None),
    }
    out = jsonable(summary)
    assert out == {
        "S_pMSE": [1.5, "Inf", "-Inf", None],
        "np": ["Inf", None, 2.0],
        "scalar": "Inf",
        "series": {"a": "-Inf", "b": 0.25},
        "frame": [{"x": None}, {"x": 1.0}],
        "missing": None,
        "7": [3, None],
    }
    json.dumps(out, allow_nan=False)  # strict JSON


def test_an_infinite_table_statistic_is_written_as_inf_not_null():
    # utility_tab's to_dict used to write "Inf" itself and utility_gen's None; both now leave
    # floats and the writer's rule decides
    stats = pd.DataFrame({"S_pMSE": [math.inf, 2.0], "pMSE": [0.1, math.nan]}, index=pd.Index([1, 2], name="synthetic"))
    res = UtilityTabResult(
        vars=("a",),
        k_syn=False,
        stats=stats,
        tab_obs=np.array([1, 2]),
        tab_syn=(np.array([1, 2]), np.array([2, 1])),
        tab_zdiff=(np.zeros(2), np.zeros(2)),
        levels=(("x", "y"),),
        notes=(),
        breaks=(None,),
    )
    written = jsonable(res.to_dict())
    assert written["stats"]["S_pMSE"] == ["Inf", 2.0] and written["stats"]["pMSE"] == [0.1, None]


def _with_an_infinite_statistic(result, column: str):
    """``result`` with the first set's ``column`` statistic made infinite (a perfectly separated set)."""
    stats = result.stats.copy()
    stats.iloc[0, stats.columns.get_loc(column)] = math.inf
    return dataclasses.replace(result, stats=stats)


def test_utility_gen_and_synds_summaries_follow_the_rule():
    # utility_gen's and utility_synds' to_dict wrote +-Inf as null; they now leave floats to the writer
    sd, cart = load_demo("sd2011_subset"), load_demo_synthetic("sd2011_cart")
    variables = ["sex", "age", "placesize"]
    gen = _with_an_infinite_statistic(utility_gen(sd, cart, method="logit", vars=variables, nperms=2), "S_pMSE")
    written = jsonable(gen.to_dict())
    assert written["stats"]["S_pMSE"][0] == "Inf"
    json.dumps(written, allow_nan=False)
    synds = utility_synds(sd, cart, method="logit", vars=variables)
    frame = synds.utility_raw.copy()
    frame.iloc[0, 0] = -math.inf
    written = jsonable(dataclasses.replace(synds, utility_raw=frame).to_dict())
    assert written["utility.raw"][frame.columns[0]][0] == "-Inf"
    json.dumps(written, allow_nan=False)


PACKAGE = Path(__file__).resolve().parents[2] / "pipeline"
#: the one JSON writer, and the hash of canonical parts (strict: it refuses NaN rather than writing it)
ALLOWED = {"results.py", "fingerprint.py"}
#: ways of writing JSON past the writer: the json module's dump/dumps and other JSON libraries
FORBIDDEN_MODULES = {"orjson", "ujson", "simplejson", "rapidjson"}


def _json_writers(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr in ("dump", "dumps"):
            if isinstance(node.value, ast.Name) and node.value.id == "json":
                found.append(f"{node.lineno}: json.{node.attr}")
        elif isinstance(node, ast.ImportFrom) and node.module == "json":
            found += [f"{node.lineno}: from json import {a.name}" for a in node.names if a.name in ("dump", "dumps")]
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            found += [f"{node.lineno}: imports {n}" for n in names if n.split(".")[0] in FORBIDDEN_MODULES]
    return found


def test_every_json_writer_of_the_package_goes_through_the_one_rule():
    outside = {
        p.relative_to(PACKAGE).as_posix(): found
        for p in sorted(PACKAGE.rglob("*.py"))
        if p.name not in ALLOWED or p.parent != PACKAGE
        if (found := _json_writers(p))
    }
    assert outside == {}


def test_the_scan_finds_a_writer_past_the_rule(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text(
        "import json\nfrom json import dumps\nimport orjson\ndef w(p, x):\n    p.write_text(json.dumps(x))\n"
    )
    assert _json_writers(planted) == [
        "2: from json import dumps",
        "3: imports orjson",
        "5: json.dumps",
    ]


def test_the_writer_writes_the_rule_as_strict_json():
    text = json_text(
        {"b": [math.inf, -math.inf, math.nan, np.float64(0.5)], "a": (1, None)}, sort_keys=True, compact=True
    )
    assert text == '{"a":[1,null],"b":["Inf","-Inf",null,0.5]}'
    assert json.loads(text) == {"a": [1, None], "b": ["Inf", "-Inf", None, 0.5]}
    assert json_text({"x": 1}, indent=1) == '{\n "x": 1\n}'


def test_a_cached_unit_summary_follows_the_rule(tmp_path):
    # the units' cache used to write NaN and Infinity (not JSON); it now writes what summary.json does
    table = pd.DataFrame({"value": [1.0]})
    out = UnitOutput(table, {"S_pMSE": math.inf, "ratio": -math.inf, "pMSE": math.nan, "n": 3}, 0.5)
    store_output(out, tmp_path / "u.parquet", tmp_path / "u.json")
    text = (tmp_path / "u.json").read_text(encoding="utf-8")
    assert "NaN" not in text and "Infinity" not in text
    assert json.loads(text)["summary"] == {"S_pMSE": "Inf", "ratio": "-Inf", "pMSE": None, "n": 3}
    assert cached_output(tmp_path / "u.parquet", tmp_path / "u.json").summary["S_pMSE"] == "Inf"
