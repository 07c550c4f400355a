"""Reading the R reference cases (vendored in tests/reference) for the disclosure tests."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from reference import reference_cases, reference_path

from pipeline.data.schema import Schema

#: R argument name -> python argument name (``None``: printing options without effect here)
R_ARGS = {
    "keys": "keys",
    "target": "target",
    "targets": "targets",
    "cont.na": "cont_na",
    "denom_lim": "denom_lim",
    "exclude_ov_denom_lim": "exclude_ov_denom_lim",
    "not.targetlev": "not_targetlev",
    "not.targetslev": "not_targetslev",
    "usetargetNA": "usetargetNA",
    "usetargetsNA": "usetargetsNA",
    "usekeysNA": "usekeysNA",
    "exclude.keys": "exclude_keys",
    "exclude.keylevs": "exclude_keylevs",
    "exclude.targetlevs": "exclude_targetlevs",
    "ngroups_target": "ngroups_target",
    "ngroups_targets": "ngroups_targets",
    "ngroups_keys": "ngroups_keys",
    "thresh_1way": "thresh_1way",
    "thresh_2way": "thresh_2way",
    "ident.meas": "ident_meas",
    "attrib.meas": "attrib_meas",
    "style": "style",
    "print.flag": None,
    "digits": None,
    "to.print": None,
    "plot": None,
    "compare.synorig": None,
}


def cases(folder: str) -> list[Path]:
    """Reference files of one function (reference/<folder>/*.json)."""
    return reference_cases(folder)


@cache
def load_csv(rel: str, schema_rel: str) -> pd.DataFrame:
    """A reference data CSV cast to its schema (empty field = NA, factors read as text)."""
    schema = Schema.from_json(reference_path(schema_rel))
    raw = pd.read_csv(
        reference_path(rel), dtype={n: str for n in schema.factors}, keep_default_na=False, na_values=[""]
    )
    return schema.apply(raw, rel)


def load_case(path: Path) -> tuple[dict[str, Any], Schema, pd.DataFrame, list[pd.DataFrame]]:
    ref = json.loads(path.read_text(encoding="utf-8"))
    data = ref["data"]
    schema = Schema.from_json(reference_path(data["schema"]))
    original = load_csv(data["original"], data["schema"])
    synthetic = [load_csv(p, data["schema"]) for p in data["synthetic"]]
    return ref, schema, original, synthetic


def python_args(args: dict[str, Any], columns: list[str]) -> dict[str, Any]:
    """The R call's arguments as keyword arguments of the python functions.

    Column numbers (R, 1-based) become names; a scalar given where R recycles stays scalar.
    """
    out = {}
    for name, value in args.items():
        py = R_ARGS[name]
        if py is None:
            continue
        if py in ("keys", "targets", "target") and value is not None:
            seq = value if isinstance(value, list) else [value]
            seq = [columns[v - 1] if isinstance(v, int) else v for v in seq]
            value = seq[0] if py == "target" else seq
        out[py] = value
    return out


def r_per_key_binding(kw: dict[str, Any], columns: list[str]) -> tuple[dict[str, Any], list[str]]:
    """The per-key options as synthpop 1.9-2 effectively applies them (spec §3.2 quirk).

    synthpop re-orders the keys to data order, then maps ``usekeysNA`` with
    ``usekeysNA[match(oldkeys, keys)]`` and does not re-map ``ngroups_keys`` at all.  Here the
    options are bound to key names, so when the keys were not given in data order the R
    numbers correspond to these (mis-bound) per-key values.  Returns the keyword arguments
    that reproduce R's binding, and the names of the options that differ.
    """
    keys = kw["keys"]
    data_order = [c for c in columns if c in keys]
    out, changed = dict(kw), []
    for name in ("usekeysNA", "ngroups_keys"):
        value = kw.get(name)
        if not isinstance(value, list) or len(value) <= 1 or keys == data_order:
            continue
        # usekeysNA[match(oldkeys, keys)]; ngroups_keys is not re-mapped (position j -> j-th key in data order)
        effective = [value[data_order.index(k)] for k in keys] if name == "usekeysNA" else list(value)
        r_binding = dict(zip(data_order, effective, strict=True))
        if r_binding != dict(zip(keys, value, strict=True)):
            out[name] = r_binding
            changed.append(name)
    return out, changed


def r_frame(obj: dict[str, Any]) -> pd.DataFrame:
    """A data.frame of the JSON layout (row names as the index)."""
    return pd.DataFrame(obj["data"], columns=obj["columns"], index=obj["row_names"])


def r_matrix(obj: dict[str, Any]) -> np.ndarray:
    return np.array(obj["data"]).reshape(obj["dim"][::-1]).T


def r_numbers(values: list[Any]) -> np.ndarray:
    return np.array([np.nan if v in (None, "NaN") else v for v in values], dtype=np.float64)


COUNT_COLUMNS = {
    "max_denom",
    "npairs",
    "key_target_total",
    "key_total",
    "All",
    "totalDisclosive",
    "nLevelDis",
    "Npairs",
}


def assert_table(got: pd.DataFrame, expected: pd.DataFrame, what: str, index: bool = True) -> None:
    """Counts exactly, percentages and other reals to 1e-9, text exactly."""
    assert list(got.columns) == list(expected.columns), what
    assert len(got) == len(expected), f"{what}: {len(got)} rows, R has {len(expected)}"
    if index:
        assert [str(i) for i in got.index] == [str(i) for i in expected.index], f"{what}: row names"
    for col in expected.columns:
        e, g = expected[col], got[col]
        if not pd.api.types.is_numeric_dtype(e):
            assert g.astype(str).tolist() == e.astype(str).tolist(), f"{what}.{col}"
        elif col in COUNT_COLUMNS:
            assert g.to_numpy(dtype=np.float64).tolist() == e.to_numpy(dtype=np.float64).tolist(), f"{what}.{col}"
        else:
            np.testing.assert_allclose(
                g.to_numpy(dtype=np.float64), r_numbers(e.tolist()), rtol=0, atol=1e-9, err_msg=f"{what}.{col}"
            )
