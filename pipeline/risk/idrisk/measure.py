"""Identification risk of partially synthetic data (Hornby & Hu; IdentificationRiskCalculation).

Public entry points: :func:`identification_risk`, :func:`identification_risk_categorical` and
:func:`radius_sweep`.  They accept pandas or Dask frames (or :class:`~pipeline.data.Dataset`
objects).  Small pandas input runs the kernel of :mod:`pipeline.risk.idrisk.matching`
directly; Dask input is shuffled into key blocks (:class:`pipeline.blocks.KeyBlocks`, one
block per combination of the categorical compared variables) and the kernel runs once per
partition.  Partitions return exact integers (c_i and T_i, or histograms of them), so the
results do not depend on the partitioning.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd

from pipeline.blocks import BLOCK_COLUMN, ROW_COLUMN, KeyBlocks
from pipeline.data.dataset import Dataset
from pipeline.data.schema import Schema
from pipeline.errors import CompatibilityError, DataError, ParameterError
from pipeline.risk.idrisk.matching import histogram, partition_counts
from pipeline.risk.idrisk.plan import GridArg, MatchPlan, RadiusArg, make_grid, make_plan, resolve_radius
from pipeline.risk.idrisk.result import IdentificationRiskResult, RadiusSweepResult, SetStatistics

Frame = pd.DataFrame | dd.DataFrame
FrameLike = Frame | Dataset


@dataclass(frozen=True)
class _Inputs:
    original: Frame
    synthetic: list[Frame]
    columns: list[str]
    is_categorical: dict[str, bool]

    @property
    def distributed(self) -> bool:
        return isinstance(self.original, dd.DataFrame) or any(isinstance(s, dd.DataFrame) for s in self.synthetic)


def _is_categorical_dtype(dtype: Any) -> bool:
    """Matched exactly unless numeric (R: anything but a factor/character is radius-matched)."""
    if isinstance(dtype, pd.CategoricalDtype):
        return True
    return not pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype)


def _prepare(original: FrameLike, synthetic: FrameLike | Sequence[FrameLike], schema: Schema | None) -> _Inputs:
    if isinstance(original, Dataset):
        schema = schema or original.schema
        original = original.frame
    if not isinstance(original, (pd.DataFrame, dd.DataFrame)):
        raise ParameterError(f"original must be a pandas or Dask DataFrame or a Dataset, got {type(original).__name__}")
    syn_list = [synthetic] if isinstance(synthetic, (pd.DataFrame, dd.DataFrame, Dataset)) else list(synthetic)
    if not syn_list:
        raise ParameterError("synthetic must hold at least one synthetic data set")
    frames = []
    for k, s in enumerate(syn_list):
        frame = s.frame if isinstance(s, Dataset) else s
        if not isinstance(frame, (pd.DataFrame, dd.DataFrame)):
            raise ParameterError(f"synthetic set {k + 1} is a {type(frame).__name__}, not a DataFrame or Dataset")
        frames.append(frame)
    columns = [str(c) for c in original.columns]
    kinds = {}
    for col in columns:
        if schema is not None and col in schema:
            kinds[col] = not schema[col].is_numeric
        else:
            kinds[col] = _is_categorical_dtype(original[col].dtype)
    return _Inputs(original, frames, columns, kinds)


def _check_synthetic_columns(inputs: _Inputs, plan: MatchPlan) -> None:
    for k, frame in enumerate(inputs.synthetic):
        missing = [v for v in plan.compared if v not in frame.columns]
        if missing:
            raise CompatibilityError(f"synthetic set {k + 1} lacks the variable(s) {', '.join(map(repr, missing))}")
        bad = [v for v in plan.continuous if _is_categorical_dtype(frame[v].dtype)]
        if bad:
            raise CompatibilityError(
                f"synthetic set {k + 1}: variable(s) {', '.join(map(repr, bad))} are numeric in the original "
                "but not in the synthetic data"
            )


def _frame_checks(frame: pd.DataFrame, continuous: Sequence[str]) -> pd.Series:
    """Row count and number of missing/non-finite values per continuous variable."""
    values = {"__rows__": len(frame)}
    for v in continuous:
        x = frame[v].to_numpy(dtype=np.float64, na_value=np.nan)
        values[v] = int((~np.isfinite(x)).sum())
    return pd.Series(values, dtype=np.int64)


def _validate_data(inputs: _Inputs, plan: MatchPlan) -> int:
    """Row counts must agree (row-aligned partially synthetic data); missing continuous values
    are an error unless ``na_action='no_match'``.  Returns n."""
    frames = [inputs.original, *inputs.synthetic]
    cont = list(plan.continuous)
    lazy = []
    for f in frames:
        sub = f[cont] if cont else f[[]]
        if isinstance(f, dd.DataFrame):
            per_part = sub.map_partitions(_frame_checks_row, cont, meta=_checks_meta(cont))
            lazy.append(per_part.sum())
        else:
            lazy.append(_frame_checks(sub, cont))
    checks = list(dask.compute(*lazy))
    names = ["the original data"] + [f"synthetic set {k + 1}" for k in range(len(inputs.synthetic))]
    n = int(checks[0]["__rows__"])
    for name, chk in zip(names[1:], checks[1:], strict=True):
        if int(chk["__rows__"]) != n:
            raise CompatibilityError(
                f"{name} has {int(chk['__rows__'])} rows but the original has {n}: partially synthetic data must be "
                "row-aligned (row i of every synthetic set is the synthetic version of original record i)"
            )
    if plan.na_action == "error":
        for name, chk in zip(names, checks, strict=True):
            bad = {v: int(chk[v]) for v in cont if int(chk[v])}
            if bad:
                detail = ", ".join(f"{v!r} ({k} records)" for v, k in bad.items())
                raise DataError(
                    f"{name} has missing or non-finite values in continuous variable(s) {detail}; "
                    "remove them or pass na_action='no_match' (such records then match nothing)"
                )
    return n


def _frame_checks_row(frame: pd.DataFrame, continuous: Sequence[str]) -> pd.DataFrame:
    return _frame_checks(frame, continuous).to_frame().T


def _checks_meta(cont: Sequence[str]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=np.int64) for c in ["__rows__", *cont]})


def _combo_matrix(plan: MatchPlan, combos: Sequence[Mapping[str, float]]) -> np.ndarray:
    return np.array([[combo[v] for v in plan.continuous] for combo in combos], dtype=np.float64).reshape(
        len(combos), len(plan.continuous)
    )


def _columns(plan: MatchPlan) -> list[str]:
    return list(dict.fromkeys([*plan.categorical, *plan.continuous]))


# ---- kernels run per Dask partition ---------------------------------------------------------


def _records_kernel(original: pd.DataFrame, *synthetic: pd.DataFrame, plan: MatchPlan, combos: np.ndarray):
    """Per partition: c and T of every original record of the partition, with its row id."""
    results = partition_counts(_drop_block(original), [_drop_block(s) for s in synthetic], plan, combos)
    out = {ROW_COLUMN: original[ROW_COLUMN].to_numpy(dtype=np.int64)}
    for s, (c, t) in enumerate(results):
        out[f"c_{s}"] = c[0]
        out[f"t_{s}"] = t[0]
    return pd.DataFrame(out)


def _records_meta(m: int) -> pd.DataFrame:
    cols: dict[str, pd.Series] = {ROW_COLUMN: pd.Series(dtype=np.int64)}
    for s in range(m):
        cols[f"c_{s}"] = pd.Series(dtype=np.int64)
        cols[f"t_{s}"] = pd.Series(dtype=bool)
    return pd.DataFrame(cols)


def _histogram_kernel(original: pd.DataFrame, *synthetic: pd.DataFrame, plan: MatchPlan, combos: np.ndarray):
    """Per partition: (set, combination, c, T) -> number of records; summed over partitions."""
    return _histogram_frame(partition_counts(_drop_block(original), [_drop_block(s) for s in synthetic], plan, combos))


def _histogram_frame(results: list[tuple[np.ndarray, np.ndarray]]) -> pd.DataFrame:
    parts = []
    for s, (c, t) in enumerate(results):
        for k in range(c.shape[0]):
            cv, tv, cnt = histogram(c[k], t[k])
            parts.append(
                pd.DataFrame(
                    {
                        "set": np.full(len(cv), s),
                        "combo": np.full(len(cv), k),
                        "c": cv,
                        "t": tv,
                        "count": cnt,
                    }
                )
            )
    return pd.concat(parts, ignore_index=True) if parts else _HIST_META.copy()


_HIST_META = pd.DataFrame(
    {
        "set": pd.Series(dtype=np.int64),
        "combo": pd.Series(dtype=np.int64),
        "c": pd.Series(dtype=np.int64),
        "t": pd.Series(dtype=bool),
        "count": pd.Series(dtype=np.int64),
    }
)


def _blocks(inputs: _Inputs, plan: MatchPlan, n_blocks: int | None):
    cols = _columns(plan)
    keys = list(plan.categorical)
    frames = []
    for f in [inputs.original, *inputs.synthetic]:
        sub = f[cols]
        if isinstance(sub, pd.DataFrame):
            sub = dd.from_pandas(sub, npartitions=1, sort=False)
        # exact-matched numbers are hashed into blocks: make -0.0 and 0.0 the same key
        numeric_keys = {k: sub[k] + 0.0 for k in keys if not inputs.is_categorical.get(k, True)}
        frames.append(sub.assign(**numeric_keys) if numeric_keys else sub)
    n = n_blocks if n_blocks is not None else max(frames[0].npartitions, 1)
    if int(n) < 1:
        raise ParameterError(f"n_blocks must be >= 1, got {n_blocks}")
    if not keys:
        n = 1  # nothing to block on: one block holds everything
    return KeyBlocks(keys, int(n)).partition(frames[0], frames[1:], with_row_id=True)


def _drop_block(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.drop(columns=[BLOCK_COLUMN]) if BLOCK_COLUMN in frame.columns else frame


def _run_records(inputs: _Inputs, plan: MatchPlan, combo: np.ndarray, n: int, n_blocks: int | None):
    """c and T matrices (n, m) for one radius combination."""
    m = len(inputs.synthetic)
    if not inputs.distributed:
        cols = _columns(plan)
        results = partition_counts(inputs.original[cols], [s[cols] for s in inputs.synthetic], plan, combo)
        c = np.column_stack([r[0][0] for r in results]) if n else np.zeros((0, m), dtype=np.int64)
        t = np.column_stack([r[1][0] for r in results]) if n else np.zeros((0, m), dtype=bool)
        return c.astype(np.int64), t.astype(bool)
    aligned = _blocks(inputs, plan, n_blocks)
    out = aligned.map(_records_kernel, meta=_records_meta(m), plan=plan, combos=combo)
    frame = out.compute().sort_values(ROW_COLUMN, kind="stable")
    rows = frame[ROW_COLUMN].to_numpy()
    if len(rows) != n or not np.array_equal(rows, np.arange(n)):
        raise DataError("internal error: the key blocks did not return every original record exactly once")
    c = np.column_stack([frame[f"c_{s}"].to_numpy(dtype=np.int64) for s in range(m)])
    t = np.column_stack([frame[f"t_{s}"].to_numpy(dtype=bool) for s in range(m)])
    return c, t


def _run_histograms(
    inputs: _Inputs, plan: MatchPlan, combos: np.ndarray, n: int, n_blocks: int | None
) -> list[SetStatistics]:
    """One :class:`SetStatistics` per radius combination."""
    m = len(inputs.synthetic)
    if not inputs.distributed:
        cols = _columns(plan)
        hist = _histogram_frame(
            partition_counts(inputs.original[cols], [s[cols] for s in inputs.synthetic], plan, combos)
        )
    else:
        aligned = _blocks(inputs, plan, n_blocks)
        hist = aligned.map(_histogram_kernel, meta=_HIST_META, plan=plan, combos=combos).compute()
    totals = hist.groupby(["combo", "set", "c", "t"], sort=True)["count"].sum().reset_index()
    stats = []
    for k in range(len(combos)):
        per_set = []
        for s in range(m):
            h = totals[(totals["combo"] == k) & (totals["set"] == s)]
            per_set.append((h["c"].to_numpy(np.int64), h["t"].to_numpy(bool), h["count"].to_numpy(np.int64)))
        stats.append(SetStatistics.from_histograms(n, per_set))
    return stats


# ---- public API ---------------------------------------------------------------------------


def identification_risk(
    original: FrameLike,
    synthetic: FrameLike | Sequence[FrameLike],
    known: Sequence[str],
    synthesised: Sequence[str],
    radius: RadiusArg = None,
    percentage: bool = True,
    euclidean: bool = False,
    interval: str = "open",
    schema: Schema | None = None,
    *,
    na_action: str = "error",
    n_blocks: int | None = None,
) -> IdentificationRiskResult:
    """Identification risk of every target record in every partially synthetic set.

    An intruder knows record i's ``known`` values and the true values of its ``synthesised``
    values and searches each synthetic set for records that agree: categorical variables
    exactly, continuous variables within a radius.  c_i counts the matches, T_i says whether
    record i's own synthetic row is among them, and IR_i = T_i / c_i.

    Parameters
    ----------
    original : DataFrame (pandas or Dask) or Dataset
        The confidential data, n records.
    synthetic : DataFrame/Dataset or list of them
        Partially synthetic sets, each with the same n rows in the same order.
    known, synthesised : list of str
        Known (released unchanged) and synthesised variables; disjoint.
    radius : float, mapping, sequence or None
        None: every variable is matched exactly (package ``r = NULL``).  A number: the radius
        of every continuous known/synthesised variable.  A mapping ``{variable: radius}``:
        one per continuous variable.  A sequence: the package's radius vector, one entry per
        continuous compared variable in the column order of ``original``.
    percentage : bool
        Radius as a fraction of the target's true value (half-width ``r * x``; must be < 1)
        or in the variable's units.
    euclidean : bool
        The package's ``euclideanDist`` (a shared half-width per variable group).
    interval : {"open", "closed"}
        Package (open: ``|x* - x| < rho``) or paper (closed: ``<= rho``) intervals.
    schema : Schema, optional
        Decides which variables are categorical (factor/character) or continuous; default the
        Dataset's schema, else the pandas dtypes (numeric = continuous).
    na_action : {"error", "no_match"}
        Missing/non-finite continuous values: raise, or such records match nothing.
        Missing categorical values never match (as in the package).
    n_blocks : int, optional
        Number of key blocks for Dask input (default: the original's partition count).

    Returns
    -------
    IdentificationRiskResult
    """
    inputs = _prepare(original, synthetic, schema)
    plan = make_plan(
        inputs.columns,
        inputs.is_categorical,
        known,
        synthesised,
        radius is None,
        percentage,
        euclidean,
        interval,
        na_action,
    )
    radii = None if radius is None else resolve_radius(plan, radius)
    _check_synthetic_columns(inputs, plan)
    n = _validate_data(inputs, plan)
    combo = _combo_matrix(plan, [radii or {}])
    c, t = _run_records(inputs, plan, combo, n, n_blocks)
    return IdentificationRiskResult(plan=plan, radius=radii, c=c, T=t)


def identification_risk_categorical(
    original: FrameLike,
    synthetic: FrameLike | Sequence[FrameLike],
    known: Sequence[str],
    synthesised: Sequence[str],
    schema: Schema | None = None,
    *,
    n_blocks: int | None = None,
) -> IdentificationRiskResult:
    """The package's ``IdentificationRiskCategorical``: every variable matched exactly."""
    return identification_risk(original, synthetic, known, synthesised, None, schema=schema, n_blocks=n_blocks)


def radius_sweep(
    original: FrameLike,
    synthetic: FrameLike | Sequence[FrameLike],
    known: Sequence[str],
    synthesised: Sequence[str],
    grid: GridArg,
    radius: RadiusArg = None,
    percentage: bool = True,
    euclidean: bool = False,
    interval: str = "open",
    schema: Schema | None = None,
    *,
    criterion: str = "mean",
    na_action: str = "error",
    n_blocks: int | None = None,
) -> RadiusSweepResult:
    """File-level identification risk over a grid of radii, and the maximising radius.

    Parameters
    ----------
    grid : list of float or mapping
        A list: one radius shared by every synthesised continuous variable (the paper's
        sweep; known continuous variables keep their ``radius``).  A mapping
        ``{variable: [radii]}``: the Cartesian product of per-variable grids.
    radius : float, mapping, sequence or None
        Fixed radius of the continuous variables that are not in the grid.
    criterion : {"mean", "median"}
        Combination of the m file-level risks used to pick the maximising radius r*
        (ties go to the smaller radius).

    The other parameters are those of :func:`identification_risk`.  Every radius reuses the
    same key blocks, sort orders and candidate indexes; the grid costs extra binary searches
    and sweeps, not extra shuffles or sorts.
    """
    if criterion not in ("mean", "median"):
        raise ParameterError(f"criterion must be 'mean' or 'median', got {criterion!r}")
    inputs = _prepare(original, synthetic, schema)
    plan = make_plan(
        inputs.columns, inputs.is_categorical, known, synthesised, False, percentage, euclidean, interval, na_action
    )
    radius_grid = make_grid(plan, grid, radius)
    _check_synthetic_columns(inputs, plan)
    n = _validate_data(inputs, plan)
    stats = _run_histograms(inputs, plan, _combo_matrix(plan, radius_grid.combos), n, n_blocks)
    return RadiusSweepResult(plan=plan, grid=radius_grid, statistics=tuple(stats), criterion=criterion)
