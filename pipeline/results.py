"""The tidy results table shared by the CLI, sweeps, the nightly history and the report.

One row per dataset × synthetic source × repetition × setting × synthetic set × measure.
Measures return the inner columns (:data:`MEASURE_COLUMNS`); the runner adds the rest: the
task, the run, the data, the ``family``, the ``type`` (the task's measure type, or the
synthesiser's kind for a synthesis's rows) and the ``measure_name`` (the measure entry's
name, default its type).

Each row's part in a holdout comparison is in three columns (:data:`ROLE_COLUMNS`; the words are
:mod:`pipeline.evaluation.comparison`'s): ``role`` — ``observed`` (the measure's own figure),
``training``/``holdout`` (its holdout baseline's two figures), ``excess`` (their difference) or
``residual``; ``summary`` — ``mean``/``sd``/``lower95``/``upper95`` over the synthetic sets (the row's
``synthetic`` is then ``all``), None for one set's value; ``method`` — how an interval bound was
drawn (``t``, ``permutation``, ``bootstrap``). Tables written before these columns existed (the
roles were keys of ``params`` and summaries had ``synthetic`` "mean") read through
:func:`with_role_columns`.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

#: what a unit contributes: the display setting, the structured params (canonical JSON), the value
MEASURE_COLUMNS = ["setting", "params", "synthetic", "measure", "role", "summary", "method", "value"]
#: a row's part in a holdout comparison (:mod:`pipeline.evaluation.comparison`)
ROLE_COLUMNS = ["role", "summary", "method"]
RESULT_COLUMNS = [
    "task",
    "run_id",
    "dataset",
    "source",
    "repetition",
    "family",
    "type",
    "measure_name",
    "setting",
    "params",
    "synthetic",
    "measure",
    "role",
    "summary",
    "method",
    "value",
]


#: ``synthetic`` labels of rows that are not one synthetic set's value: the original's, a
#: measure's own average over sets (synthpop's "mean"), a summary over sets ("all")
SUMMARY_LABELS = ("original", "mean", "all")


def per_set(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows holding one synthetic set's value (not the original's, not a mean over sets)."""
    return rows[~rows["synthetic"].isin(SUMMARY_LABELS)]


#: the ``params`` keys that held a row's role before the role columns (old name -> column), and
#: the old role names that changed
_OLD_KEYS = {"baseline": "role", "summary": "summary", "ci": "method"}
_OLD_ROLES = {"normalised_excess": "residual"}


def _old_params(text: Any) -> tuple[Any, str, str | None, str | None]:
    """One old ``params`` text without its role keys, and the row's role, summary and method."""
    if not isinstance(text, str):
        return text, "observed", None, None
    params = json.loads(text)
    found = {column: params.pop(key, None) for key, column in _OLD_KEYS.items()}
    if found["role"] is None and found["summary"] is None and found["method"] is None:
        return text, "observed", None, None
    role = _OLD_ROLES.get(found["role"], found["role"]) or "observed"
    return json_text(params, sort_keys=True, compact=True), role, found["summary"], found["method"]


def with_role_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """A results table with the :data:`ROLE_COLUMNS`: unchanged if it has them, else (a table
    written before them) read from its rows' ``params`` keys ``baseline``/``summary``/``ci``, which
    are taken out of ``params`` (so that old and new rows of one setting group together), with
    ``normalised_excess`` renamed ``residual`` and the summaries' ``synthetic`` "mean" renamed
    "all". The values are untouched."""
    if all(c in frame.columns for c in ROLE_COLUMNS):
        return frame
    out = frame.copy()
    if "params" not in out.columns:
        for c in ROLE_COLUMNS:
            out[c] = pd.Series("observed" if c == "role" else None, index=out.index, dtype="str")
        return out
    distinct = pd.Index(pd.unique(out["params"]))
    converted = [_old_params(t) for t in distinct]
    at = distinct.get_indexer(out["params"])
    for i, name in enumerate(["params", *ROLE_COLUMNS]):
        values = np.empty(len(converted), dtype=object)
        values[:] = [c[i] for c in converted]
        out[name] = values[at]
        if name != "params":
            out[name] = out[name].astype("str")
    summaries = out["summary"].notna().to_numpy(dtype=bool) & (out["synthetic"] == "mean").to_numpy(dtype=bool)
    out.loc[summaries, "synthetic"] = "all"
    return out


def check_tidy(frame: pd.DataFrame, where: str) -> pd.DataFrame:
    """Make sure a measure returned the tidy columns with the right types."""
    if list(frame.columns) != MEASURE_COLUMNS:
        raise TypeError(f"{where}: tidy() must return columns {MEASURE_COLUMNS}, got {list(frame.columns)}")
    out = frame.copy()
    for c in ("setting", "params", "synthetic", "measure"):
        out[c] = out[c].astype(str)
    for c in ROLE_COLUMNS:  # strings, missing kept missing
        out[c] = out[c].astype("str")
    out["value"] = pd.to_numeric(out["value"], errors="coerce").astype("float64")
    return out


@contextmanager
def _replacing(path: Path) -> Iterator[Path]:
    """A temporary sibling of ``path`` to write, renamed to ``path`` on success and removed on
    failure (a full disk leaves neither a half-written file nor a stray temporary one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def atomic_write_parquet(frame: pd.DataFrame, path: Path) -> None:
    """Write Parquet to a temporary file and rename it, so a crash leaves no half-written file."""
    with _replacing(path) as tmp:
        frame.to_parquet(tmp, index=False)


def make_private(folder: Path) -> None:
    """Make ``folder`` and everything in it readable by the owner only (folders 0700, files 0600):
    record-level data (synthetic sets, their caches) whatever the umask."""
    folder.chmod(0o700)
    for root, dirs, files in os.walk(folder):
        for d in dirs:
            os.chmod(os.path.join(root, d), 0o700, follow_symlinks=False)
        for f in files:
            if not os.path.islink(os.path.join(root, f)):
                os.chmod(os.path.join(root, f), 0o600)


@contextmanager
def atomic_folder(dest: Path, private: bool = False) -> Iterator[Path]:
    """A temporary sibling folder to fill, renamed to ``dest`` (replacing an older one) on success.

    A crash or an error leaves ``dest`` as it was and no half-written folder behind.
    ``private``: the folder holds record-level data; it is created 0700 and everything written
    into it is made owner-only (:func:`make_private`) before it takes ``dest``'s place.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.parent / f".{dest.name}.tmp-{uuid.uuid4().hex}"
    tmp.mkdir(mode=0o700 if private else 0o777)
    try:
        yield tmp
        if private:
            make_private(tmp)
        old = None
        if dest.exists():
            old = dest.parent / f".{dest.name}.old-{uuid.uuid4().hex}"
            dest.rename(old)
        tmp.rename(dest)
        if old is not None:
            shutil.rmtree(old)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)


def atomic_write_text(text: str, path: Path) -> None:
    with _replacing(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def json_text(
    obj: Any,
    *,
    indent: int | None = None,
    sort_keys: bool = False,
    compact: bool = False,
    default: Callable[[Any], Any] | None = None,
) -> str:
    """``obj`` as JSON text under the one rule for non-finite numbers (:func:`jsonable`): the
    package's one JSON writer — every JSON file, line or text it writes goes through it
    (``tests/foundation/test_json_rule.py`` checks the source).  Strict JSON: a NaN or an
    infinity left anywhere is an error, never ``NaN``/``Infinity``.

    Parameters
    ----------
    indent, sort_keys
        As :func:`json.dumps`.
    compact
        No spaces after ``,`` and ``:`` (a canonical one-line form).
    default
        Converts values JSON does not know (after :func:`jsonable`), as :func:`json.dumps`'s.
    """
    separators = (",", ":") if compact else None
    return json.dumps(
        jsonable(obj), indent=indent, sort_keys=sort_keys, separators=separators, default=default, allow_nan=False
    )


def jsonable(obj: Any) -> Any:
    """Convert numpy/pandas values inside a summary to JSON types: the package's one rule for
    non-finite numbers in every JSON file it writes.

    NaN (and None, pandas' NA) -> ``null``: a value that is missing or undefined.  +Inf / -Inf
    -> the strings ``"Inf"`` / ``"-Inf"`` (as R's jsonlite and the vendored references write
    them): an infinite statistic, e.g. S_pMSE of a perfectly separated table, is a result, not
    a missing value.  The output is strict JSON (``json.dumps(..., allow_nan=False)`` accepts it).
    Result objects' ``to_dict`` return plain floats; the writers apply this rule.
    """
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, pd.DataFrame):
        return jsonable(obj.to_dict(orient="records"))
    if isinstance(obj, pd.Series):
        return jsonable(obj.to_dict())
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        obj = obj.item()
    if obj is pd.NA or obj is pd.NaT or (isinstance(obj, float) and np.isnan(obj)):
        return None
    if isinstance(obj, float) and np.isinf(obj):
        return "Inf" if obj > 0 else "-Inf"
    return obj
