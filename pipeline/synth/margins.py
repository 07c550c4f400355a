"""Margin tables: which margins to keep, counting them from the categorised ground truth, and
writing them out as the publishable artefact they are.

A :class:`Layout` is the full cross-classification (variables and their levels, the NA level
last where a variable has missing values, as synthpop's ``table(..., useNA = "ifany")``).
A :class:`MarginTable` is a table of counts over some of those variables, every level
combination included (zeros too), C-ordered with the first variable varying slowest.

Counting is exact integer arithmetic: each partition bincounts the cells of every margin and
the executor sums the partial counts (:meth:`~pipeline.evaluation.execution.Executor.map_reduce`),
so the tables do not depend on how the input is partitioned.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from pipeline.errors import ParameterError
from pipeline.results import json_text

if TYPE_CHECKING:  # the settings models are part of a task file: loading one imports no Dask
    from pipeline.evaluation.data import Frame
    from pipeline.evaluation.execution import Executor

Level = str | None
"""A level label; ``None`` is the NA level."""

MarginOrder = Literal["oneway", "twoway", "threeway", "fourway"]
_ORDERS: dict[str, int] = {"oneway": 1, "twoway": 2, "threeway": 3, "fourway": 4}


@dataclass(frozen=True)
class Layout:
    """The full cross-classification fitted by IPF.

    Parameters
    ----------
    names : tuple of str
        Variables, in table-axis order.
    levels : tuple of tuple of (str or None)
        Levels of each variable; ``None`` is the NA level (always last).
    """

    names: tuple[str, ...]
    levels: tuple[tuple[Level, ...], ...]

    def __post_init__(self) -> None:
        if len(self.names) != len(self.levels):
            raise ParameterError("layout: one list of levels per variable is needed")
        if len(set(self.names)) != len(self.names):
            raise ParameterError(f"layout: duplicated variable(s) in {list(self.names)}")
        for name, lv in zip(self.names, self.levels, strict=True):
            if not lv:
                raise ParameterError(f"layout: variable {name!r} has no levels")
            if len(set(lv)) != len(lv):
                raise ParameterError(f"layout: variable {name!r} has duplicated levels")

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(lv) for lv in self.levels)

    @property
    def n_cells(self) -> int:
        """Number of cells of the full table (exact Python integer)."""
        return math.prod(self.shape)

    def axis(self, name: str, where: str = "margin") -> int:
        try:
            return self.names.index(name)
        except ValueError:
            raise ParameterError(
                f"{where}: unknown variable {name!r}; the synthesised variables are {', '.join(self.names)}"
            ) from None

    def describe_size(self) -> str:
        """``"sex(2) x agegr(7) = 14 cells"`` - for messages."""
        parts = " x ".join(f"{n}({k})" for n, k in zip(self.names, self.shape, strict=True))
        return f"{parts} = {self.n_cells:,} cells"

    def to_dict(self, unnamed: Mapping[str, Sequence[int]] | None = None) -> dict[str, Any]:
        """Variables and their levels; the levels at the positions ``unnamed[variable]`` are left
        out and counted (``unnamed_levels``) instead of named."""
        out = []
        for name, lv in zip(self.names, self.levels, strict=True):
            hidden = set((unnamed or {}).get(name, ()))
            entry: dict[str, Any] = {"name": name, "levels": [x for i, x in enumerate(lv) if i not in hidden]}
            if hidden:
                entry["unnamed_levels"] = len(hidden)
            out.append(entry)
        return {"variables": out}


@dataclass(frozen=True, eq=False)
class MarginTable:
    """Counts over the level combinations of some variables.

    Parameters
    ----------
    variables : tuple of str
    levels : tuple of tuple of (str or None)
        Levels of each variable (``None`` = NA level).
    counts : ndarray
        float64 array of shape ``[len(l) for l in levels]``, first variable slowest.
    """

    variables: tuple[str, ...]
    levels: tuple[tuple[Level, ...], ...]
    counts: np.ndarray

    def __post_init__(self) -> None:
        shape = tuple(len(lv) for lv in self.levels)
        counts = np.asarray(self.counts, dtype=np.float64)
        if counts.shape != shape:
            raise ParameterError(f"margin {self.name!r}: counts have shape {counts.shape}, levels imply {shape}")
        if not np.all(np.isfinite(counts)) or np.any(counts < 0):
            raise ParameterError(f"margin {self.name!r}: counts must be finite and non-negative")
        object.__setattr__(self, "counts", counts)

    @property
    def name(self) -> str:
        return ":".join(self.variables)

    @property
    def total(self) -> float:
        return float(self.counts.sum())

    def with_counts(self, counts: np.ndarray) -> MarginTable:
        return MarginTable(self.variables, self.levels, counts)

    def to_frame(self) -> pd.DataFrame:
        """Long form: one column per variable (level labels, NA level = missing) and ``count``."""
        grids = np.meshgrid(*[np.arange(len(lv)) for lv in self.levels], indexing="ij")
        cols: dict[str, Any] = {}
        for v, lv, g in zip(self.variables, self.levels, grids, strict=True):
            labels = [x for x in lv if x is not None]
            recode = np.array([-1 if x is None else labels.index(x) for x in lv], dtype=np.int64)
            cols[v] = pd.Categorical.from_codes(recode[g.ravel()], categories=labels)
        cols["count"] = self.counts.ravel()
        return pd.DataFrame(cols)

    def to_dict(self) -> dict[str, Any]:
        vals = self.counts.ravel()
        as_int = bool(np.all(vals == np.round(vals)))
        return {
            "name": self.name,
            "variables": list(self.variables),
            "levels": [list(lv) for lv in self.levels],
            "total": float(vals.sum()),
            "counts": [int(v) for v in vals] if as_int else [float(v) for v in vals],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MarginTable:
        levels = tuple(tuple(lv) for lv in data["levels"])
        return cls(
            tuple(data["variables"]), levels, np.asarray(data["counts"], float).reshape([len(x) for x in levels])
        )


def margin_sets(
    variables: Sequence[str],
    order: MarginOrder | None = "twoway",
    extra: Sequence[Sequence[str]] = (),
) -> list[tuple[str, ...]]:
    """The margins to fit, in the fitting order (synthpop ``gmargins`` + ``othmargins``).

    All combinations of ``order`` variables in ``itertools.combinations`` (R ``combn``) order,
    then ``extra`` as given. ``order=None`` keeps only ``extra``.

    Raises
    ------
    ParameterError
        Unknown variable in a margin, a variable repeated in a margin, a repeated margin, or no
        margin at all.
    """
    names = list(variables)
    if order is not None and order not in _ORDERS:
        raise ParameterError(f"margins: order must be one of {list(_ORDERS)} or None, got {order!r}")
    out: list[tuple[str, ...]] = []
    if order is not None:
        k = _ORDERS[order]
        if k > len(names):
            raise ParameterError(f"margins: {order} margins need at least {k} variables, got {len(names)}")
        out.extend(itertools.combinations(names, k))
    for m in extra:
        m = tuple(m)
        unknown = [v for v in m if v not in names]
        if unknown:
            raise ParameterError(
                f"margins: {', '.join(map(repr, unknown))} in margin {list(m)} is not one of the synthesised "
                f"variables ({', '.join(names)})"
            )
        if not m or len(set(m)) != len(m):
            raise ParameterError(f"margins: margin {list(m)} must name distinct variables")
        out.append(m)
    seen: set[frozenset[str]] = set()
    for m in out:
        if frozenset(m) in seen:
            raise ParameterError(f"margins: margin {list(m)} is listed twice")
        seen.add(frozenset(m))
    if not out:
        raise ParameterError("margins: no margin to fit (give an order or extra margins)")
    return out


def _ext_codes(part: pd.DataFrame, names: Sequence[str], sizes: Sequence[int]) -> list[np.ndarray]:
    """Category codes of each variable with NA mapped to an extra last code."""
    out = []
    for name, k in zip(names, sizes, strict=True):
        c = part[name].cat.codes.to_numpy().astype(np.int64)
        out.append(np.where(c < 0, k, c))
    return out


def _count_kernel(
    part: pd.DataFrame,
    names: list[str],
    sizes: list[int],
    tables: list[tuple[int, ...]],
    transform: Callable[[pd.DataFrame], pd.DataFrame] | None,
) -> pd.DataFrame:
    """Non-zero cell counts of every table in one partition: rows (table, cell, count).

    ``transform`` (e.g. the SDC steps) turns the partition into the categorical variables first.
    """
    if transform is not None:
        part = transform(part)
    codes = _ext_codes(part, names, sizes)
    t_ids, cells, counts = [], [], []
    for t, axes in enumerate(tables):
        dims = [sizes[a] + 1 for a in axes]
        flat = np.ravel_multi_index([codes[a] for a in axes], dims) if axes else np.zeros(len(part), np.int64)
        c = np.bincount(flat, minlength=math.prod(dims))
        nz = np.flatnonzero(c)
        t_ids.append(np.full(nz.size, t, dtype=np.int64))
        cells.append(nz.astype(np.int64))
        counts.append(c[nz].astype(np.int64))
    return pd.DataFrame(
        {"table": np.concatenate(t_ids), "cell": np.concatenate(cells), "count": np.concatenate(counts)}
    )


def _sum_counts(parts: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Exact sum of per-partition (table, cell, count) rows."""
    if not parts:
        return pd.DataFrame({"table": [], "cell": [], "count": []}, dtype="int64")
    return pd.concat(parts, ignore_index=True).groupby(["table", "cell"], as_index=False, sort=True)["count"].sum()


def rare_levels(layout: Layout, tables: Sequence[MarginTable], limit: int) -> dict[str, tuple[int, ...]]:
    """Per variable, the positions of its levels held by at least one and fewer than ``limit``
    records (one-way totals of the first margin holding the variable). The NA level is not a
    label: a few missing values are not a level to merge."""
    out = {}
    for name, levels in zip(layout.names, layout.levels, strict=True):
        table = next((t for t in tables if name in t.variables), None)
        if table is None:
            continue
        axis = table.variables.index(name)
        totals = table.counts.sum(axis=tuple(i for i in range(table.counts.ndim) if i != axis))
        labelled = np.array([lv is not None for lv in levels])
        rare = tuple(int(i) for i in np.flatnonzero((totals > 0) & (totals < limit) & labelled))
        if rare:
            out[name] = rare
    return out


def tabulate(
    frame: Frame,
    names: Sequence[str],
    levels: Sequence[Sequence[str]],
    margins: Sequence[Sequence[str]],
    executor: Executor | None = None,
    transform: Callable[[pd.DataFrame], pd.DataFrame] | None = None,
) -> tuple[Layout, list[MarginTable], int]:
    """Count the margins of a categorical frame.

    Parameters
    ----------
    frame : frame
        Categorical columns ``names`` whose categories are ``levels`` (missing = NaN), or the
        frame ``transform`` turns into them, partition by partition.
    names, levels
        The variables of the full table and their (non-NA) levels.
    margins : sequence of sequence of str
        Variables of each margin (from :func:`margin_sets`).
    executor : Executor, optional
        Runs the count per partition and sums exactly (default: :meth:`Executor.current`).
    transform : callable, optional
        A pure function applied to every partition before counting (the SDC steps).

    Returns
    -------
    layout : Layout
        ``levels`` plus an NA level (last) for each variable that has missing values.
    tables : list of MarginTable
        One per margin, in the given order, over the layout's levels.
    n : int
        Number of records.
    """
    from pipeline.evaluation.execution import Executor

    executor = executor or Executor.current()
    names = list(names)
    sizes = [len(lv) for lv in levels]
    axes_of = [tuple(names.index(v) for v in m) for m in margins]
    oneway = [(a,) for a in range(len(names))]
    tables = oneway + axes_of
    (summed,) = executor.compute(
        executor.map_reduce(frame, _count_kernel, _sum_counts, names, sizes, tables, transform)
    )
    flat_tables = [np.zeros(math.prod(sizes[a] + 1 for a in axes), dtype=np.int64) for axes in tables]
    t_idx = summed["table"].to_numpy(dtype=np.int64)
    c_idx = summed["cell"].to_numpy(dtype=np.int64)
    vals = summed["count"].to_numpy(dtype=np.int64)
    for t in np.unique(t_idx):
        sel = t_idx == t
        flat_tables[t][c_idx[sel]] = vals[sel]
    has_na = [bool(flat_tables[a][sizes[a]] > 0) for a in range(len(names))]
    n = int(flat_tables[0].sum()) if names else 0
    layout = Layout(
        tuple(names),
        tuple(tuple(lv) + ((None,) if na else ()) for lv, na in zip(levels, has_na, strict=True)),
    )
    out = []
    for axes, m, flat in zip(axes_of, margins, flat_tables[len(names) :], strict=True):
        full = flat.reshape([sizes[a] + 1 for a in axes])
        keep = tuple(slice(0, sizes[a] + 1 if has_na[a] else sizes[a]) for a in axes)
        out.append(MarginTable(tuple(m), tuple(layout.levels[a] for a in axes), full[keep].astype(np.float64)))
    return layout, out, n


def _file_stem(i: int, table: MarginTable) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", "__".join(table.variables))
    return f"{i + 1:03d}_{safe}"


def write_margins(
    tables: Sequence[MarginTable],
    directory: str | Path,
    formats: Sequence[Literal["csv", "parquet"]] = ("csv",),
    metadata: dict[str, Any] | None = None,
) -> None:
    """Write released margins: ``margins.json`` (everything) plus one long table per margin.

    Parameters
    ----------
    tables : sequence of MarginTable
        The released (disclosure-controlled) margins, in fitting order.
    directory : path
        Created if needed.
    formats : sequence of {"csv", "parquet"}
        Formats of the per-margin long tables (NA level = empty/null).
    metadata : dict, optional
        Stored under ``"metadata"`` in ``margins.json`` (variant, limit, totals...).
    """
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    doc = {"metadata": metadata or {}, "order": [t.name for t in tables], "margins": [t.to_dict() for t in tables]}
    (d / "margins.json").write_text(json_text(doc, indent=1), encoding="utf-8")
    for i, t in enumerate(tables):
        frame = t.to_frame()
        for fmt in formats:
            if fmt == "csv":
                frame.to_csv(d / f"{_file_stem(i, t)}.csv", index=False, na_rep="")
            elif fmt == "parquet":
                frame.to_parquet(d / f"{_file_stem(i, t)}.parquet", index=False)
            else:
                raise ParameterError(f"margins output format must be 'csv' or 'parquet', got {fmt!r}")


def read_margins(directory: str | Path) -> list[MarginTable]:
    """Read back the margins written by :func:`write_margins` (from ``margins.json``)."""
    doc = json.loads((Path(directory) / "margins.json").read_text(encoding="utf-8"))
    return [MarginTable.from_dict(m) for m in doc["margins"]]
