"""The schema that travels with every data set.

A :class:`Schema` says, for each variable, what kind it is (factor with an ordered list of
levels, integer, numeric, or free character), and which numeric values are *special missing
codes* (synthpop's ``cont.na``, e.g. ``income = -8``).  Every measure reads the schema; no
module re-infers types.

In memory (pandas or Dask) the schema's representation is fixed:

* factor    -> ``pd.CategoricalDtype(levels, ordered)``; the level order is the schema's;
               a missing value is a missing category (never a level called "NA").
* integer   -> ``float64`` (missing = NaN); the kind is kept as metadata because R treats
               integer and double alike in every measure we reproduce.
* numeric   -> ``float64`` (missing = NaN).
* character -> pandas ``string`` dtype.

Special missing codes stay in the data as their numeric value; measures that need them
(synthpop's ``cont.na``) read them from :attr:`Variable.missing_codes`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from pipeline.errors import DataError, SchemaError
from pipeline.results import json_text

Kind = Literal["factor", "integer", "numeric", "character"]
KINDS: tuple[str, ...] = ("factor", "integer", "numeric", "character")
NUMERIC_KINDS: tuple[str, ...] = ("integer", "numeric")


@dataclass(frozen=True)
class Variable:
    """One variable of a data set.

    Parameters
    ----------
    name : str
        Column name.
    kind : {"factor", "integer", "numeric", "character"}
        Variable kind.
    levels : tuple of str, optional
        Factor levels in their defined order (factors only).
    ordered : bool
        Whether the factor is ordered (R ``ordered``).
    missing_codes : tuple of float
        Special numeric values that mean "missing" (synthpop ``cont.na``); numeric kinds only.
    """

    name: str
    kind: Kind
    levels: tuple[str, ...] | None = None
    ordered: bool = False
    missing_codes: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise SchemaError(f"variable {self.name!r}: unknown kind {self.kind!r}; expected one of {KINDS}")
        if self.kind == "factor":
            if self.levels is None:
                raise SchemaError(f"variable {self.name!r}: a factor needs its list of levels")
            if len(set(self.levels)) != len(self.levels):
                raise SchemaError(f"variable {self.name!r}: duplicated factor levels")
        elif self.levels is not None:
            raise SchemaError(f"variable {self.name!r}: only factors have levels (kind is {self.kind!r})")
        if self.missing_codes and self.kind not in NUMERIC_KINDS:
            raise SchemaError(
                f"variable {self.name!r}: special missing codes are for numeric variables, not {self.kind!r}"
            )

    @property
    def is_factor(self) -> bool:
        return self.kind == "factor"

    @property
    def is_numeric(self) -> bool:
        return self.kind in NUMERIC_KINDS

    @property
    def dtype(self) -> Any:
        """The pandas dtype this variable has in memory."""
        if self.kind == "factor":
            return pd.CategoricalDtype(list(self.levels or ()), ordered=self.ordered)
        if self.kind == "character":
            return pd.StringDtype()
        return np.dtype("float64")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "type": self.kind}
        if self.kind == "factor":
            out["ordered"] = self.ordered
            out["levels"] = list(self.levels or ())
        if self.missing_codes:
            out["missing_codes"] = list(self.missing_codes)
        return out


@dataclass(frozen=True)
class Schema:
    """The ordered collection of :class:`Variable` of one data set."""

    variables: tuple[Variable, ...]
    _index: dict[str, Variable] = field(init=False, repr=False, compare=False)
    #: text encoding of the CSV files the schema describes (``"encoding"`` in the JSON); None: UTF-8
    encoding: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        names = [v.name for v in self.variables]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise SchemaError(f"duplicated column(s) in schema: {', '.join(dupes)}")
        object.__setattr__(self, "_index", {v.name: v for v in self.variables})

    # ---- access -------------------------------------------------------------------------
    def __getitem__(self, name: str) -> Variable:
        try:
            return self._index[name]
        except KeyError:
            raise SchemaError(f"unknown variable {name!r}; the schema has: {', '.join(self.names)}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._index

    def __iter__(self):
        return iter(self.variables)

    def __len__(self) -> int:
        return len(self.variables)

    @property
    def names(self) -> list[str]:
        return [v.name for v in self.variables]

    @property
    def factors(self) -> list[str]:
        return [v.name for v in self.variables if v.kind == "factor"]

    @property
    def numerics(self) -> list[str]:
        return [v.name for v in self.variables if v.kind in NUMERIC_KINDS]

    @property
    def cont_na(self) -> dict[str, tuple[float, ...]]:
        """synthpop's ``cont.na``: special missing codes by variable (only those that have some)."""
        return {v.name: v.missing_codes for v in self.variables if v.missing_codes}

    def require(self, names: Iterable[str], what: str = "variable", where: str = "") -> None:
        """Raise a :class:`SchemaError` naming every one of ``names`` that is not in the schema."""
        missing = [n for n in names if n not in self._index]
        if missing:
            place = f" in {where}" if where else ""
            raise SchemaError(
                f"{what} {', '.join(map(repr, missing))} not found{place}; available: {', '.join(self.names)}"
            )

    # ---- derivation ---------------------------------------------------------------------
    def select(self, names: Sequence[str]) -> Schema:
        """The schema of ``names`` only, in the order given."""
        self.require(names)
        return Schema(tuple(self._index[n] for n in names), encoding=self.encoding)

    def with_missing_codes(self, codes: Mapping[str, float | Sequence[float]]) -> Schema:
        """A copy with special missing codes set (e.g. ``{"income": -8}``)."""
        self.require(codes, "cont.na variable")
        new = []
        for v in self.variables:
            if v.name in codes:
                c = codes[v.name]
                vals = tuple(float(x) for x in (c if isinstance(c, (list, tuple)) else [c]))
                new.append(replace(v, missing_codes=vals))
            else:
                new.append(v)
        return Schema(tuple(new), encoding=self.encoding)

    # ---- (de)serialisation --------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "schema") -> Schema:
        """Read the JSON layout of ``shared/data/*.schema.json`` (``{"columns": [...]}``).

        Each column has ``name``, ``type`` (factor/integer/numeric/character), and for
        factors ``levels`` (and optionally ``ordered``); numeric columns may carry
        ``missing_codes`` (or ``cont_na``).
        """
        cols = data.get("columns") if isinstance(data, Mapping) else None
        if not isinstance(cols, list):
            raise SchemaError(f"{source}: expected an object with a 'columns' list")
        out = []
        for i, c in enumerate(cols):
            if not isinstance(c, Mapping) or "name" not in c or "type" not in c:
                raise SchemaError(f"{source}: column #{i + 1} needs 'name' and 'type'")
            levels = c.get("levels")
            codes = c.get("missing_codes", c.get("cont_na", ()))
            if not isinstance(codes, (list, tuple)):
                codes = [codes]
            try:
                out.append(
                    Variable(
                        name=str(c["name"]),
                        kind=c["type"],
                        levels=tuple("NA" if lv is None else str(lv) for lv in levels) if levels is not None else None,
                        ordered=bool(c.get("ordered", False)),
                        missing_codes=tuple(float(x) for x in codes),
                    )
                )
            except SchemaError as e:
                raise SchemaError(f"{source}: {e}") from None
        encoding = data.get("encoding")
        if encoding is not None and not isinstance(encoding, str):
            raise SchemaError(f"{source}: 'encoding' must be a text encoding name such as 'latin-1'")
        return cls(tuple(out), encoding=encoding)

    @classmethod
    def from_json(cls, path: str | Path) -> Schema:
        p = Path(path)
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise SchemaError(f"schema file not found: {p}") from None
        except json.JSONDecodeError as e:
            raise SchemaError(f"schema file {p} is not valid JSON (line {e.lineno}: {e.msg})") from None
        return cls.from_dict(data, source=str(p))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"columns": [v.to_dict() for v in self.variables]}
        if self.encoding is not None:
            out["encoding"] = self.encoding
        return out

    def to_json(self, path: str | Path) -> None:
        Path(path).write_text(json_text(self.to_dict(), indent=1), encoding="utf-8")

    @classmethod
    def infer(cls, frame: pd.DataFrame, max_levels: int = 50) -> Schema:
        """Infer a schema from a pandas frame.

        Categorical columns keep their categories in order; string/object columns become
        factors with levels sorted by code point (R's ``factor()`` under ``LC_COLLATE=C``)
        unless they have more than ``max_levels`` distinct values (then ``character``);
        boolean columns become factors ``["False", "True"]``; integer-valued numeric columns
        are ``integer``; other numbers ``numeric``.
        """
        out = []
        for name in frame.columns:
            s = frame[name]
            if isinstance(s.dtype, pd.CategoricalDtype):
                out.append(Variable(str(name), "factor", tuple(str(x) for x in s.cat.categories), bool(s.cat.ordered)))
            elif pd.api.types.is_bool_dtype(s.dtype):
                out.append(Variable(str(name), "factor", ("False", "True")))
            elif pd.api.types.is_numeric_dtype(s.dtype):
                vals = s.dropna().to_numpy(dtype="float64")
                is_int = pd.api.types.is_integer_dtype(s.dtype) or bool(np.all(np.mod(vals, 1) == 0))
                out.append(Variable(str(name), "integer" if is_int and len(vals) else "numeric"))
            else:
                uniq = sorted({str(x) for x in s.dropna().unique()})
                if len(uniq) <= max_levels:
                    out.append(Variable(str(name), "factor", tuple(uniq)))
                else:
                    out.append(Variable(str(name), "character"))
        return cls(tuple(out))

    # ---- applying to data ---------------------------------------------------------------
    def apply(self, frame: pd.DataFrame, source: str = "data") -> pd.DataFrame:
        """Cast a pandas frame to this schema's in-memory representation.

        Columns are put in schema order.  A factor value that is not one of the levels is an
        error naming the file and variable (the value itself is not shown: it may be
        confidential); only the number of such records is reported.
        """
        cols = [str(c) for c in frame.columns]
        dupes = sorted({c for c in cols if cols.count(c) > 1})
        if dupes:
            raise DataError(f"{source}: duplicated column(s) {', '.join(dupes)}")
        missing = [n for n in self.names if n not in cols]
        if missing:
            raise DataError(f"{source}: column(s) {', '.join(missing)} required by the schema are missing")
        out = {}
        for v in self.variables:
            out[v.name] = cast_series(frame[v.name], v, source)
        return pd.DataFrame(out, index=frame.index)


def as_label(s: pd.Series) -> pd.Series:
    """Values as the strings used for factor levels (``15`` and ``15.0`` both become ``"15"``)."""
    if pd.api.types.is_numeric_dtype(s.dtype) and not pd.api.types.is_bool_dtype(s.dtype):
        arr = s.to_numpy(dtype="float64", na_value=np.nan)
        whole = np.isfinite(arr) & (np.mod(arr, 1) == 0)
        lab = pd.Series(np.where(whole, arr, np.nan), index=s.index).map(
            lambda x: None if pd.isna(x) else str(int(x)), na_action="ignore"
        )
        other = ~whole & ~np.isnan(arr)
        if other.any():
            lab[other] = s[other].astype(str)
        return lab
    return s.astype("string")


def cast_series(s: pd.Series, v: Variable, source: str = "data") -> pd.Series:
    """Cast one column to the in-memory dtype of ``v`` (see module docstring)."""
    if v.kind == "factor":
        if isinstance(s.dtype, pd.CategoricalDtype) and [str(c) for c in s.cat.categories] == list(v.levels or ()):
            return s.cat.set_categories(list(v.levels or ()), ordered=v.ordered) if s.cat.ordered != v.ordered else s
        labels = as_label(s.astype(object) if isinstance(s.dtype, pd.CategoricalDtype) else s)
        levels = list(v.levels or ())
        # level codes by one lookup (a third of the time of isin and building from labels)
        codes = pd.Index(levels, dtype=object).get_indexer(labels)
        blank = (labels.isna() | (labels == "")).to_numpy(dtype=bool, na_value=True)
        codes[blank] = -1
        bad = int(((codes < 0) & ~blank).sum())
        out = pd.Series(pd.Categorical.from_codes(codes, categories=levels, ordered=v.ordered), index=s.index)
        if bad:
            unknown = labels[(codes < 0) & ~blank].nunique()
            raise DataError(
                f"{source}: variable {v.name!r} has {bad} record(s) whose value is not one of its "
                f"{len(v.levels or ())} schema levels ({unknown} unknown level(s)); add them to the schema's "
                "levels, or for a synthetic source aligned to its original set 'compatibility: align'"
            )
        return out
    if v.kind == "character":
        return s.astype("string")
    if pd.api.types.is_numeric_dtype(s.dtype) and not isinstance(s.dtype, pd.CategoricalDtype):
        num = s.astype("float64")
        bad = infinite = int(np.isinf(num.to_numpy()).sum())
    else:
        text = s.astype("string").str.strip().replace("", None)
        parsed = pd.to_numeric(text, errors="coerce").astype("float64")
        infinite_at = np.isinf(parsed.to_numpy())
        infinite = int(infinite_at.sum())
        num = parsed.where(~infinite_at)  # finite_numbers(text), parsed once
        bad = int((num.isna() & text.notna()).sum())
    if bad:
        why = " (infinite values such as inf or 1e400 are not accepted)" if infinite else ""
        raise DataError(f"{source}: variable {v.name!r} is {v.kind} but {bad} record(s) are not numbers{why}")
    return num.astype("float64")


def finite_numbers(text: pd.Series) -> pd.Series:
    """Text parsed as numbers; what is not a finite number (``abc``, ``NaN``, ``inf``, ``1e400``)
    becomes missing, for the caller to count: an infinite value is no more a measurement than NaN."""
    num = pd.to_numeric(text, errors="coerce").astype("float64")
    return num.where(~np.isinf(num.to_numpy()))
