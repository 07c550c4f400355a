"""Iterative proportional fitting of the full table to released margins (mipfp ``Ipfp``
semantics, synthpop ``syn.ipf`` prior and structural zeros).

Algorithm (mipfp 3.2.1): the seed is an array of ones (zero in structural-zero cells). If the
totals of two consecutive targets differ by more than 1e-10, seed and every target are divided
by their own sums (work on the probability scale). Each cycle fits the margins in the given
order: ``X <- X * T_j / C_j`` with the factor 0 where ``T_j = 0`` or ``C_j = 0``; the cycle's
stopping criterion is ``max |X - X_prev|`` over all cells (``tol_type="absolute"``, mipfp) or
that divided by ``max |X|`` (``"relative"``, scale-free); stop when it is below ``tol``.

How it is computed: consecutive margins are grouped while the union of their variables spans
at most ``group_cells`` cells. The margin over a group's union is accumulated in one streaming
pass; the group's margins are then fitted in turn on that small array (a factor that only
depends on the union's variables changes its margins exactly as it changes the full table's);
the product of the group's factors is applied to the full table in the next pass, fused with
accumulating the next group's margin. This is the same sequence of updates as mipfp (up to
floating-point rounding) with one pass per group instead of two per margin.

Prior (``priorn``, syn.ipf): every cell of every released margin gets ``priorn / (number of
its cells)`` before fitting.

Structural zeros, two modes (``structzero_mode``):

* ``"seed"`` (default): the zeros are put in the seed, the prior goes only to margin cells that
  are not entirely structural zeros, and a positive released count in such a cell is an error.
  The fitted margins are then consistent with the zeros: the fit matches the released margins
  as closely as a table with those zeros can.
* ``"syn.ipf"`` (synthpop 1.9-2 parity): the fit starts from an all-ones table, every margin
  cell gets the prior, the fit ignores the zeros; the zero cells are set to 0 **after** the fit
  and the table renormalised. The mass the fit put in the zero cells is spread proportionally
  over the others, so the fitted margins no longer match the released ones where the zeros
  fall (by up to 3.3e-6 in probability on the syn_ipf IPF04 reference); a positive released
  count in a zero cell is only a warning, as in R.

The function sees only the released margins and ``n`` - never microdata.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import psutil

from pipeline.errors import ParameterError
from pipeline.evaluation.base import Row
from pipeline.evaluation.execution import Executor
from pipeline.synth.coarsened_params import EngineName, StructZeroMode, TolType
from pipeline.synth.engines import PART_CELLS, DaskEngine, DenseEngine, Factor, SparseEngine, enumerate_support
from pipeline.synth.margins import Layout, Level, MarginTable

TOL_MARGINS = 1e-10
"""mipfp ``tol.margins``: totals differing by more than this switch IPF to probabilities."""

StructuralZero = Mapping[str, Sequence[Level]]
"""One structural-zero set: ``{variable: [levels]}``; every cell whose values of all the named
variables are among the listed levels is a structural zero (synthpop ``structzero``)."""


@dataclass(frozen=True)
class MarginFit:
    """Fit of one margin.

    Attributes
    ----------
    max_abs_dev : float
        mipfp ``error.margins``: max |target - fitted| on the working scale (targets with prior).
    max_abs_dev_n, tvd_n : float
        Max absolute and total-variation distance (persons) between the fitted margin and the
        released margin, both rescaled to total n.
    """

    margin: str
    n_cells: int
    released_total: float
    prior_added: float
    max_abs_dev: float
    max_abs_dev_n: float
    tvd_n: float


@dataclass(frozen=True)
class Compatibility:
    """Whether one table can match all margins (necessary conditions on the targets).

    Attributes
    ----------
    max_total_diff : float
        Largest difference between two margins' totals (targets incl. prior).
    max_shared_diff_n : float
        Largest difference (persons, targets rescaled to n) between the sub-margins that two
        margins imply for the variables they share.
    worst_pair : tuple of str, optional
        The two margins with that largest difference.
    """

    compatible: bool
    max_total_diff: float
    max_shared_diff_n: float
    worst_pair: tuple[str, str] | None


@dataclass(frozen=True)
class FitReport:
    """Convergence diagnostics of one IPF fit (all derived from released margins and n)."""

    converged: bool
    iterations: int
    stopping: tuple[float, ...]
    tol: float
    tol_type: TolType
    scale: Literal["counts", "probabilities"]
    engine: str
    n: float
    full_cells: int
    fitted_cells: int
    memory_bytes: int
    order: tuple[str, ...]
    passes_per_cycle: int
    margins: tuple[MarginFit, ...]
    compatibility: Compatibility
    warnings: tuple[str, ...] = ()
    elapsed_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "converged": self.converged,
            "iterations": self.iterations,
            "tol": self.tol,
            "tol_type": self.tol_type,
            "scale": self.scale,
            "engine": self.engine,
            "n": self.n,
            "full_cells": self.full_cells,
            "fitted_cells": self.fitted_cells,
            "memory_bytes": self.memory_bytes,
            "order": list(self.order),
            "passes_per_cycle": self.passes_per_cycle,
            "stopping": list(self.stopping),
            "compatibility": {
                "compatible": self.compatibility.compatible,
                "max_total_diff": self.compatibility.max_total_diff,
                "max_shared_diff_n": self.compatibility.max_shared_diff_n,
                "worst_pair": list(self.compatibility.worst_pair) if self.compatibility.worst_pair else None,
            },
            "margins": [m.__dict__.copy() for m in self.margins],
            "warnings": list(self.warnings),
            "elapsed_s": self.elapsed_s,
        }

    def rows(self) -> list[Row]:
        """The fit's diagnostics as tidy rows (``synthetic="original"``: they describe the fit,
        shared by all sets); per-margin rows carry ``{"margin": name}``."""
        out = [
            Row("original", "ipf_iterations", float(self.iterations)),
            Row("original", "ipf_converged", float(self.converged)),
            Row("original", "ipf_stopping_criterion", self.stopping[-1] if self.stopping else float("nan")),
            Row("original", "ipf_compatible", float(self.compatibility.compatible)),
        ]
        for m in self.margins:
            p = {"margin": m.margin}
            out += [
                Row("original", "ipf_max_abs_dev", m.max_abs_dev, p),
                Row("original", "ipf_max_abs_dev_n", m.max_abs_dev_n, p),
                Row("original", "ipf_tvd_n", m.tvd_n, p),
            ]
        return out


@dataclass(frozen=True, eq=False)
class IpfFit:
    """A fitted table: layout, the engine holding the fitted probabilities, and the report.

    Attributes
    ----------
    layout : Layout
    engine : DenseEngine, DaskEngine or SparseEngine
        ``engine.x`` holds p-hat (sums to 1) over ``engine``'s cells.
    report : FitReport
    fitted_margins : tuple of MarginTable
        n * p-hat summed to each margin, in fitting order.
    """

    layout: Layout
    engine: DenseEngine | DaskEngine | SparseEngine
    report: FitReport
    fitted_margins: tuple[MarginTable, ...] = field(default=())

    def probabilities(self, max_cells: int = 10**7) -> np.ndarray:
        """The fitted p-hat as a dense array of the layout's shape (for small tables)."""
        if self.layout.n_cells > max_cells:
            raise ParameterError(
                f"probabilities: the full table has {self.layout.n_cells:,} cells, more than max_cells={max_cells:,}"
            )
        return self.engine.dense()


@dataclass(frozen=True)
class _Group:
    axes: tuple[int, ...]
    members: tuple[int, ...]


def plan_groups(margin_axes: Sequence[tuple[int, ...]], shape: Sequence[int], group_cells: int) -> list[_Group]:
    """Cut the margin sequence into runs whose union of variables spans <= ``group_cells`` cells."""
    groups: list[_Group] = []
    cur: list[int] = []
    union: set[int] = set()
    for j, axes in enumerate(margin_axes):
        new = union | set(axes)
        if cur and math.prod(shape[a] for a in new) > group_cells:
            groups.append(_Group(tuple(sorted(union)), tuple(cur)))
            cur, new = [], set(axes)
        cur.append(j)
        union = new
    groups.append(_Group(tuple(sorted(union)), tuple(cur)))
    return groups


def _local_fit(m: np.ndarray, group: _Group, margin_axes: Sequence[tuple[int, ...]], targets: Sequence[np.ndarray]):
    """Fit the group's margins in turn on its union margin ``m`` (in place); return the factor.

    The factor is ``m_after / m_before`` (0 where ``m_before`` is 0: those table cells are all 0).
    """
    before = m.copy()
    for j in group.members:
        pos = [group.axes.index(a) for a in margin_axes[j]]
        other = tuple(i for i in range(m.ndim) if i not in pos)
        current = m.sum(axis=other, keepdims=True)
        target = targets[j].reshape(current.shape)
        factor = np.zeros_like(current)
        np.divide(target, current, out=factor, where=(current > 0) & (target > 0))
        m *= factor
    g = np.zeros_like(m)
    np.divide(m, before, out=g, where=before > 0)
    return g


def _layout_from(margins: Sequence[MarginTable], layout: Layout | None) -> Layout:
    levels: dict[str, tuple[Level, ...]] = {}
    for t in margins:
        for v, lv in zip(t.variables, t.levels, strict=True):
            if v in levels and levels[v] != lv:
                raise ParameterError(f"margins: variable {v!r} has different levels in different margins")
            levels.setdefault(v, lv)
    if layout is None:
        return Layout(tuple(levels), tuple(levels.values()))
    for v, lv in levels.items():
        if layout.levels[layout.axis(v)] != lv:
            raise ParameterError(f"margins: the levels of {v!r} differ from the layout's")
    return layout


def _zero_sets(layout: Layout, structural_zeros: Sequence[StructuralZero]) -> list[tuple[tuple[int, ...], np.ndarray]]:
    """Each structural-zero set as (sorted axes, boolean table over those axes: True = zero)."""
    out = []
    for i, spec in enumerate(structural_zeros):
        if not spec:
            raise ParameterError(f"structural_zeros[{i}]: name at least one variable and its levels")
        axes = sorted(layout.axis(v, f"structural_zeros[{i}]") for v in spec)
        mask = np.ones([layout.shape[a] for a in axes], dtype=bool)
        for k, a in enumerate(axes):
            name = layout.names[a]
            wanted = list(spec[name])
            unknown = [lv for lv in wanted if lv not in layout.levels[a]]
            if unknown:
                raise ParameterError(
                    f"structural_zeros[{i}]: {unknown} not among the levels of {name!r} ({list(layout.levels[a])})"
                )
            sel = np.isin(np.arange(layout.shape[a]), [layout.levels[a].index(lv) for lv in wanted])
            mask &= sel.reshape([-1 if kk == k else 1 for kk in range(len(axes))])
        out.append((tuple(axes), mask))
    return out


def _covered(layout: Layout, axes: tuple[int, ...], zero_sets) -> np.ndarray:
    """For each cell of the margin over ``axes``: are all full-table cells in it structural zeros?"""
    shape = [layout.shape[a] for a in axes]
    if not zero_sets:
        return np.zeros(shape, dtype=bool)
    rest = sorted(set().union(*(set(ax) - set(axes) for ax, _ in zero_sets)))
    all_axes = list(axes) + rest
    grid = shape + [layout.shape[a] for a in rest]
    if math.prod(grid) > 10**8:
        raise ParameterError("structural_zeros: too many level combinations to check against the margins")
    cov = np.zeros(grid, dtype=bool)
    for ax, mask in zero_sets:
        pos = [all_axes.index(a) for a in ax]
        order = np.argsort(pos)
        expanded = mask.transpose(order).reshape([grid[i] if i in pos else 1 for i in range(len(grid))])
        cov |= expanded
    return cov.all(axis=tuple(range(len(axes), len(all_axes))))


def _compatibility(names: Sequence[str], margin_axes, targets, n: float) -> Compatibility:
    totals = [float(t.sum()) for t in targets]
    max_total = max(totals) - min(totals)
    worst, worst_pair = 0.0, None
    for i in range(len(targets)):
        for j in range(i + 1, len(targets)):
            shared = sorted(set(margin_axes[i]) & set(margin_axes[j]))
            if not shared:
                continue
            sub = []
            for k in (i, j):
                other = tuple(p for p, a in enumerate(margin_axes[k]) if a not in shared)
                sub.append(targets[k].sum(axis=other) * (n / totals[k]) if totals[k] > 0 else 0.0)
            d = float(np.max(np.abs(sub[0] - sub[1])))
            if d > worst:
                worst, worst_pair = d, (names[i], names[j])
    ok = max_total <= TOL_MARGINS and worst <= 1e-9 * max(n, 1.0)
    return Compatibility(ok, max_total, worst, worst_pair)


def _size_error(layout: Layout, what: str, cells: int, per_cell: int, limit_text: str) -> ParameterError:
    gib = cells * per_cell / 2**30
    return ParameterError(
        f"the IPF table is too big: {layout.describe_size()}; {what} {cells:,} cells x {per_cell} bytes "
        f"= {gib:.1f} GiB, {limit_text}. Merge categories or use fewer/coarser variables"
    )


def _make_engine(
    layout: Layout,
    engine: EngineName,
    priorn: float,
    margin_axes,
    released,
    zero_sets,
    max_cells: int,
    memory_limit: int | None,
    chunk_cells: int,
    max_acc_cells: int,
    executor: Executor | None,
) -> DenseEngine | DaskEngine | SparseEngine:
    full = layout.n_cells
    if engine == "dask":
        executor = executor or Executor.current()
        available = int(memory_limit if memory_limit is not None else executor.memory())
        if full > max_cells or full * DaskEngine.bytes_per_cell > available:
            raise _size_error(
                layout, "the Dask fit needs", full, DaskEngine.bytes_per_cell,
                f"over the size guard max_cells={max_cells:,} or the {available / 2**30:.1f} GiB of cluster memory",
            )  # fmt: skip
        return DaskEngine(layout.shape, chunk_cells, max_acc_cells, executor)
    available = int(memory_limit if memory_limit is not None else psutil.virtual_memory().available)
    dense_bytes = full * DenseEngine.bytes_per_cell
    if engine == "dense" or (engine == "auto" and (full <= max_cells or priorn > 0)):
        if full > max_cells:
            hint = "" if priorn > 0 else " (or engine='sparse')"
            raise _size_error(
                layout,
                "the dense fit needs",
                full,
                DenseEngine.bytes_per_cell,
                f"over the size guard max_cells={max_cells:,}; with priorn=0 the sparse engine fits only "
                f"the cells that can be non-zero{hint}",
            )
        if dense_bytes > available:
            raise _size_error(
                layout,
                "the dense fit needs",
                full,
                DenseEngine.bytes_per_cell,
                f"more than the {available / 2**30:.1f} GiB of memory available",
            )
        return DenseEngine(layout.shape)
    if engine not in ("auto", "sparse"):
        raise ParameterError(f"engine: must be 'auto', 'dense', 'sparse' or 'dask', got {engine!r}")
    positive = [r > 0 if priorn == 0 else np.ones(r.shape, dtype=bool) for r in released]
    codes = enumerate_support(layout.shape, margin_axes, positive, zero_sets, max_cells)
    if codes is None:
        raise ParameterError(
            f"the IPF table is too big: {layout.describe_size()}, and the cells that can be non-zero "
            f"(support) exceed the size guard max_cells={max_cells:,}"
            + ("" if priorn == 0 else "; with priorn > 0 every cell can be non-zero (use priorn=0)")
        )
    sparse = SparseEngine(layout.shape, codes)
    if sparse.n_cells * sparse.bytes_per_cell > available:
        raise _size_error(
            layout,
            "the sparse fit needs",
            sparse.n_cells,
            sparse.bytes_per_cell,
            f"more than the {available / 2**30:.1f} GiB of memory available",
        )
    return sparse


def _group_margins(eng, groups: Sequence[_Group], margin_axes) -> list[np.ndarray]:
    """Every margin of the current table, one accumulation pass per group."""
    out: list[np.ndarray] = [np.empty(0)] * len(margin_axes)
    for grp in groups:
        m = eng.run(acc=grp.axes).margin
        for j in grp.members:
            pos = [grp.axes.index(a) for a in margin_axes[j]]
            out[j] = m.sum(axis=tuple(i for i in range(m.ndim) if i not in pos))
    return out


def check_fit_settings(priorn: float, tol: float, tol_type: str, max_iter: int, max_cells: int) -> None:
    """The checks of :func:`fit_ipf`'s settings that need no margins (``validate`` runs them too).

    Raises
    ------
    ParameterError
        A setting out of range, named with what it must be.
    """
    if not (priorn >= 0 and math.isfinite(priorn)):
        raise ParameterError(f"priorn: must be a finite number >= 0, got {priorn!r}")
    if not (tol > 0):
        raise ParameterError(f"tol: must be > 0, got {tol!r}")
    if tol_type not in ("absolute", "relative"):
        raise ParameterError(f"tol_type: must be 'absolute' or 'relative', got {tol_type!r}")
    if int(max_iter) < 1:
        raise ParameterError(f"max_iter: must be >= 1, got {max_iter!r}")
    if int(max_cells) < 1:
        raise ParameterError(f"max_cells: must be >= 1, got {max_cells!r}")


def fit_ipf(
    margins: Sequence[MarginTable],
    n: float,
    *,
    layout: Layout | None = None,
    priorn: float = 1.0,
    structural_zeros: Sequence[StructuralZero] = (),
    structzero_mode: StructZeroMode = "seed",
    tol: float = 1e-8,
    tol_type: TolType = "relative",
    max_iter: int = 5000,
    max_cells: int = 10**8,
    engine: EngineName = "auto",
    memory_limit: int | None = None,
    group_cells: int = PART_CELLS,
    chunk_cells: int = 1 << 24,
    executor: Executor | None = None,
) -> IpfFit:
    """Fit the full table to released margins by IPF.

    Parameters
    ----------
    margins : sequence of MarginTable
        Released margins, in fitting order (the order matters when they are incompatible).
    n : float
        Number of ground-truth records (public); scale of the n-scale diagnostics.
    layout : Layout, optional
        The full table (variables and levels); default: the margins' variables in order of first
        appearance. A layout variable in no margin is fitted as uniform (with a warning).
    priorn : float
        syn.ipf prior: each margin cell gets ``priorn / (cells in the margin)`` (only cells that
        are not entirely structural zeros count and receive it).
    structural_zeros : sequence of mapping
        Structural-zero sets ``{variable: [levels]}``.
    structzero_mode : {"seed", "syn.ipf"}
        "seed" (default): zeros in the seed, prior only on the cells they leave open; "syn.ipf":
        synthpop's order - fit from all ones with the prior on every margin cell, then zero the
        cells and renormalise (see the module docstring).
    tol, tol_type
        Stop when the cycle's ``max |X - X_prev|`` (absolute, mipfp) or that divided by
        ``max |X|`` (relative) is below ``tol``. syn.ipf parity: ``tol=1e-3, tol_type="absolute"``.
    max_iter : int
        Maximum number of cycles; reaching it gives ``converged=False``, not an error.
    max_cells : int
        Size guard (synthpop ``maxtable``): the dense table, or the sparse support, may not have more cells.
    engine : {"auto", "dense", "sparse", "dask"}
        "auto": dense up to ``max_cells`` cells (or whenever priorn > 0), otherwise sparse.
        "dask": the dense table as a chunked dask.array on the current cluster (same result as dense).
    memory_limit : int, optional
        Bytes the table may use (default: currently available memory; for "dask" the executor's
        :meth:`~pipeline.evaluation.execution.Executor.memory`, the workers' limits).
    group_cells : int
        Largest union-of-margins array fitted in one pass (speed only; results agree to rounding).
    chunk_cells : int
        Cells per block of the "dask" engine (rounded to whole slabs; does not change the result).
    executor : Executor, optional
        Whose cluster memory bounds the "dask" engine (default: :meth:`Executor.current`).

    Returns
    -------
    IpfFit

    Raises
    ------
    ParameterError
        Invalid parameters, unknown variables or levels, a structural zero that contradicts a
        positive released margin cell, or a table over the size guard / available memory.
    """
    started = time.perf_counter()
    if not margins:
        raise ParameterError("margins: at least one margin is needed")
    check_fit_settings(priorn, tol, tol_type, max_iter, max_cells)
    if not (n > 0):
        raise ParameterError(f"n: the number of records must be > 0, got {n!r}")
    layout = _layout_from(margins, layout)
    names = [t.name for t in margins]
    margin_axes, released = [], []
    for t in margins:
        axes = [layout.axis(v) for v in t.variables]
        order = np.argsort(axes)
        margin_axes.append(tuple(int(axes[i]) for i in order))
        released.append(np.transpose(t.counts, order))
    warnings = []
    unused = [v for a, v in enumerate(layout.names) if not any(a in ax for ax in margin_axes)]
    if unused:
        warnings.append(f"variable(s) {', '.join(unused)} appear in no margin and are fitted as uniform")
    if structzero_mode not in ("seed", "syn.ipf"):
        raise ParameterError(f"structzero_mode: must be 'seed' or 'syn.ipf', got {structzero_mode!r}")
    zero_sets = _zero_sets(layout, structural_zeros)
    post_fit_zeros = structzero_mode == "syn.ipf"
    fit_zero_sets = [] if post_fit_zeros else zero_sets

    # prior on the cells that are not entirely structural zeros; a positive released count there is a contradiction
    targets, priors = [], []
    for name, axes, rel in zip(names, margin_axes, released, strict=True):
        covered = _covered(layout, axes, zero_sets)
        bad = covered & (rel > 0)
        if bad.any():
            first = np.argwhere(bad)[0]
            cell = ", ".join(f"{layout.names[a]}={layout.levels[a][c]}" for a, c in zip(axes, first, strict=True))
            text = (
                f"structural_zeros contradict margin {name!r}: {int(bad.sum())} cell(s) with a positive released "
                f"count, e.g. ({cell}), contain only structural-zero cells"
            )
            if not post_fit_zeros:
                raise ParameterError(text)
            warnings.append(text + " (syn.ipf mode: they are fitted, then set to 0)")
        if post_fit_zeros:
            covered = np.zeros_like(covered)
        k = int((~covered).sum())
        add = priorn / k if k else 0.0
        targets.append(np.where(covered, 0.0, rel + add))
        priors.append(add * k)

    groups = plan_groups(margin_axes, layout.shape, group_cells)
    max_acc = max(math.prod(layout.shape[a] for a in grp.axes) for grp in groups)
    eng = _make_engine(
        layout, engine, priorn, margin_axes, released, fit_zero_sets, int(max_cells), memory_limit, chunk_cells,
        max_acc, executor,
    )  # fmt: skip
    if eng.kind != "sparse":
        for axes, mask in fit_zero_sets:
            eng.run(apply=Factor(axes, (~mask).astype(np.float64)))
    compat = _compatibility(names, margin_axes, targets, float(n))
    totals = [float(t.sum()) for t in targets]
    consistent = all(abs(totals[i - 1] - totals[i]) <= TOL_MARGINS for i in range(1, len(totals)))
    if not consistent:
        # mipfp: "Target not consistents - shifting to probabilities!"
        targets = [t / s if s > 0 else t for t, s in zip(targets, totals, strict=True)]
        eng.divide(eng.run(acc=()).margin.item())
    if not compat.compatible:
        warnings.append(
            f"the margins are not mutually compatible (totals differ by up to {compat.max_total_diff:.6g}; shared "
            f"sub-margins differ by up to {compat.max_shared_diff_n:.6g} persons on the n scale, worst "
            f"{compat.worst_pair}): no table matches all of them; IPF settles on a stable end-of-cycle table that "
            "fits the last margin in the order exactly and the others approximately (see max_abs_dev_n)"
        )

    m = eng.run(acc=groups[0].axes, save=True).margin
    history: list[float] = []
    converged = False
    for _ in range(int(max_iter)):
        for gi, grp in enumerate(groups):
            g = _local_fit(m, grp, margin_axes, targets)
            last = gi == len(groups) - 1
            res = eng.run(apply=Factor(grp.axes, g), acc=groups[(gi + 1) % len(groups)].axes, crit=last, save=last)
            m = res.margin
        crit = res.max_change if tol_type == "absolute" else res.max_change / max(res.max_value, np.finfo(float).tiny)
        history.append(crit)
        if crit < tol:
            converged = True
            break
    if not converged:
        warnings.append(f"IPF did not converge in {max_iter} cycles (last criterion {history[-1]:.3g}, tol {tol:g})")

    fitted = _group_margins(eng, groups, margin_axes)
    # mipfp's error.margins: the fit itself, before any post-fit zeros
    max_abs_devs = [float(np.max(np.abs(targets[j] - fitted[j]))) for j in range(len(margins))]
    if post_fit_zeros and zero_sets:
        for axes, mask in zero_sets:
            eng.run(apply=Factor(axes, (~mask).astype(np.float64)))
        fitted = _group_margins(eng, groups, margin_axes)
    total = float(fitted[0].sum())
    eng.divide(total)
    fits, fitted_tables = [], []
    for j, t in enumerate(margins):
        rel_n = released[j] * (n / released[j].sum()) if released[j].sum() > 0 else released[j]
        fit_n = fitted[j] * (n / total)
        unreachable = int(((fitted[j] == 0) & (released[j] > 0)).sum())
        if unreachable:
            warnings.append(f"margin {t.name!r}: {unreachable} positive released cell(s) cannot be reached (fitted 0)")
        fits.append(
            MarginFit(
                t.name,
                int(released[j].size),
                float(released[j].sum()),
                priors[j],
                max_abs_devs[j],
                float(np.max(np.abs(rel_n - fit_n))),
                float(0.5 * np.abs(rel_n - fit_n).sum()),
            )
        )
        back = np.argsort(np.argsort([layout.axis(v) for v in t.variables]))
        fitted_tables.append(t.with_counts(np.transpose(fit_n, back)))
    report = FitReport(
        converged=converged,
        iterations=len(history),
        stopping=tuple(history),
        tol=float(tol),
        tol_type=tol_type,
        scale="counts" if consistent else "probabilities",
        engine=eng.kind,
        n=float(n),
        full_cells=layout.n_cells,
        fitted_cells=eng.n_cells,
        memory_bytes=eng.n_cells * eng.bytes_per_cell,
        order=tuple(names),
        passes_per_cycle=len(groups),
        margins=tuple(fits),
        compatibility=compat,
        warnings=tuple(warnings),
        elapsed_s=time.perf_counter() - started,
    )
    return IpfFit(layout, eng, report, tuple(fitted_tables))
