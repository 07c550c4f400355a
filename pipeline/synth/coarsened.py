"""The coarsened-margins synthesiser (``synthesise: {kind: margins}``): safe synthetic data from
coarsened margins (Raab), end to end.

Ground truth -> SDC of the variables -> margins counted -> margins made safe (V1/V2/V3)
-> IPF on the released margins only -> m multinomial draws -> synthetic data sets.

Everything after :func:`~pipeline.synth.control.control_margins` sees only the released margins,
their levels and n, which is the method's guarantee.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pipeline import notices
from pipeline.data.dataset import Dataset
from pipeline.data.schema import Schema
from pipeline.errors import ParameterError
from pipeline.evaluation.base import Result, Row
from pipeline.evaluation.data import EvalData, Frame
from pipeline.evaluation.execution import Executor
from pipeline.evaluation.reporting import ReportSection
from pipeline.synth.base import OutputFormat, Synthesiser
from pipeline.synth.coarsened_params import MarginsParams
from pipeline.synth.control import (
    ControlledMargins,
    MarginTotal,
    control_margins,
)
from pipeline.synth.dp import DpRecord, check_dp, margin_noise
from pipeline.synth.ipf import FitReport, fit_ipf
from pipeline.synth.margins import Layout, MarginTable, rare_levels, tabulate, write_margins
from pipeline.synth.release import write_release
from pipeline.synth.sample import draw_synthetic, output_schema
from pipeline.synth.sdc import SdcResult, apply_sdc


@dataclass(frozen=True)
class SyntheticMarginFit:
    """How close one synthetic set's margin is to the released margin rescaled to k records."""

    synthetic: int
    margin: str
    max_abs_dev: float
    tvd: float


@dataclass(frozen=True, eq=False)
class SynthesisResult(Result):
    """Synthetic data sets plus everything needed to publish and audit them.

    A :class:`~pipeline.evaluation.base.Result`: :meth:`rows` are the synthesis unit's rows in
    a task's results table.

    Attributes
    ----------
    synthetic : list of pandas DataFrame
        The m synthetic sets, in the output ``schema``'s in-memory form.
    schema : Schema
    margins : ControlledMargins
        The released margins and how their totals moved.
    fit : FitReport
        IPF diagnostics.
    fitted_margins : tuple of MarginTable
        n * p-hat summed to each margin.
    synthetic_margins : tuple of SyntheticMarginFit
        Per set and margin, distance to the released margin.
    sdc : tuple of dict
        The SDC step records.
    layout : Layout
    bins : dict
        Breaks/labels/codes of each categorised numeric variable.
    n, k, seed : int
    params : MarginsParams
    dp : DpRecord, optional
        The privacy budget the release spent and the noise of each margin.
    """

    synthetic: list[pd.DataFrame]
    schema: Schema
    margins: ControlledMargins
    fit: FitReport
    fitted_margins: tuple[MarginTable, ...]
    synthetic_margins: tuple[SyntheticMarginFit, ...]
    sdc: tuple[dict[str, Any], ...]
    layout: Layout
    bins: dict[str, dict[str, Any]]
    n: int
    k: int
    seed: int
    params: MarginsParams
    dp: DpRecord | None = None
    #: per variable, the levels held by fewer than ``limit`` original records: counted, not named,
    #: in the summary and the fit report (the released margins and sets name every level)
    unnamed_levels: dict[str, tuple[int, ...]] = field(default_factory=dict)

    def datasets(self, prefix: str = "syn") -> list[Dataset]:
        """The synthetic sets as :class:`Dataset` objects named ``syn1``, ``syn2``, ..."""
        return [Dataset.from_pandas(f, self.schema, name=f"{prefix}{i + 1}") for i, f in enumerate(self.synthetic)]

    def rows(self) -> list[Row]:
        """Tidy rows: n and k, how far the released margins' totals moved, the IPF diagnostics
        (``synthetic="original"``: they describe the released margins and the fit, shared by all
        sets), and per set and margin the distance of the synthetic margin to the released one.
        Per-margin rows carry ``{"margin": name}``."""
        per_set = [
            Row(str(s.synthetic), measure, value, {"margin": s.margin})
            for s in self.synthetic_margins
            for measure, value in (("syn_margin_max_abs_dev", s.max_abs_dev), ("syn_margin_tvd", s.tvd))
        ]
        return [
            Row("original", "n", float(self.n)),
            Row("original", "k", float(self.k)),
            *self.margins.rows(),
            *(self.dp.rows() if self.dp is not None else []),
            *self.fit.rows(),
            *per_set,
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": "coarsened margins + IPF (Raab)",
            "variables": list(self.layout.names),
            "n": self.n,
            "k": self.k,
            "m": len(self.synthetic),
            "seed": self.seed,
            "params": self.params.model_dump(mode="json"),
            "layout": self.layout.to_dict(self.unnamed_levels),
            "sdc": list(self.sdc),
            "bins": self.bins,
            "margin_control": self.margins.to_dict(),
            "dp": self.dp.to_dict() if self.dp is not None else None,
            "fit": self.fit.to_dict(),
            "synthetic_margins": [s.__dict__.copy() for s in self.synthetic_margins],
        }

    def write(
        self, out_dir: str | Path, overwrite: bool = False, formats: Sequence[OutputFormat] | None = None
    ) -> Path:
        """Write the synthetic sets, the released margins and the report, atomically.

        Layout of ``out_dir``: ``synthetic/syn<i>.{parquet,csv}`` (+ ``.schema.json``),
        ``margins/margins.json`` + one long table per margin, ``fit_report.json``.
        Everything is written to a temporary sibling directory that is renamed at the end.
        ``formats`` default to the parameters' ``output_format``.
        """
        formats = formats or self.params.output_format

        def margins(folder: Path) -> None:
            write_margins(
                self.margins.tables,
                folder / "margins",
                formats,
                {
                    "rule": self.margins.rule(),
                    "layout": self.layout.to_dict(),
                    **self.margins.to_dict(),
                    "dp": self.dp.to_dict() if self.dp is not None else None,
                },
            )

        report = ("fit_report.json", self.to_dict())
        return write_release(out_dir, self.synthetic, self.schema, formats, report, overwrite, extra=margins)


def _synthetic_margin_fits(
    codes: list[np.ndarray], layout: Layout, released: tuple[MarginTable, ...], k: int
) -> tuple[SyntheticMarginFit, ...]:
    out = []
    for i, c in enumerate(codes):
        for t in released:
            axes = [layout.axis(v) for v in t.variables]
            shape = t.counts.shape
            flat = np.ravel_multi_index(tuple(c[:, a].astype(np.int64) for a in axes), shape)
            syn = np.bincount(flat, minlength=math.prod(shape)).reshape(shape)
            target = t.counts * (k / t.total) if t.total > 0 else t.counts
            out.append(
                SyntheticMarginFit(
                    i + 1, t.name, float(np.abs(syn - target).max()), float(0.5 * np.abs(syn - target).sum())
                )
            )
    return tuple(out)


def _noisy_release(
    gt_tables: Sequence[MarginTable], n: int, params: MarginsParams, seed: int
) -> tuple[ControlledMargins, DpRecord, float]:
    """DP margins: the released margins, the budget record and the prior the fit still adds.

    "noise_only" follows syn.ipf (prior, noise, makepos; the fit adds no further prior);
    "noise_then_coarsen" noises the ground-truth counts, rounds them to integers and applies
    the variant, then the fit adds the prior as in the coarsened path.
    """
    assert params.dp is not None
    if params.dp.order == "noise_only":
        noisy, record = margin_noise(gt_tables, params.dp, params.priorn, seed)
        totals = tuple(MarginTotal(t.name, float(n), t.total, t.total - n, 0.0) for t in noisy)
        released = ControlledMargins(
            tuple(noisy), totals, "none", params.limit, None, params.rounding, params.ties, params.adjust, n
        )
        return released, record, 0.0
    noisy, record = margin_noise(gt_tables, params.dp, 0.0, seed)
    released = control_margins(
        [t.with_counts(np.rint(t.counts)) for t in noisy], n, params.variant, params.limit, params.small_value,
        params.rounding, params.ties, params.adjust,
    )  # fmt: skip
    return released, record, params.priorn


def _sdc(frame: Frame, schema: Schema, params: MarginsParams, executor: Executor) -> tuple[Frame, SdcResult]:
    """The ground truth in the executor's chosen form, and the SDC steps resolved on it."""
    frame = executor.prepare(EvalData((frame,), schema)).original
    return frame, apply_sdc(frame, schema, list(params.variables), params.sdc, executor)


def synthesise_frame(
    frame: Frame, schema: Schema, params: MarginsParams, executor: Executor | None = None
) -> SynthesisResult:
    """:func:`synthesise` on a frame in ``schema``'s in-memory form."""
    executor = executor or Executor.current()
    margins = params.margin_sets()
    names = list(params.variables)
    frame, sdc = _sdc(frame, schema, params, executor)
    layout, gt_tables, n = tabulate(frame, names, [sdc.levels[v] for v in names], margins, executor, sdc.transform)
    if n == 0:
        raise ParameterError("the original data set has no records")
    seed = int(np.random.SeedSequence(params.seed).entropy)
    dp_record, priorn = None, params.priorn
    if params.dp is None:
        released = control_margins(
            gt_tables, n, params.variant, params.limit, params.small_value, params.rounding, params.ties, params.adjust
        )
    else:
        released, dp_record, priorn = _noisy_release(gt_tables, n, params, seed)
    unnamed = rare_levels(layout, gt_tables, params.limit)
    for name, positions in unnamed.items():
        notices.warn(
            f"synthesis: variable {name!r} has {len(positions)} level(s) held by fewer than {params.limit} records; "
            "the release names every level of the schema (its margins and synthetic sets need them): merge such "
            f"levels first (sdc: [{{step: merge_levels, variable: {name}, min_count: {params.limit}}}]) if their "
            "labels are confidential",
            stacklevel=2,
        )
    del gt_tables  # the boundary: from here on only the released margins, their levels and n
    fit = fit_ipf(
        released.tables,
        n,
        layout=layout,
        priorn=priorn,
        structural_zeros=params.structural_zeros,
        structzero_mode=params.structzero_mode,
        tol=params.tol,
        tol_type=params.tol_type,
        max_iter=params.max_iter,
        max_cells=params.max_cells,
        engine=params.engine,
        chunk_cells=params.chunk_cells,
        executor=executor,
    )
    k = params.k or n
    frames, codes, out_schema, seed = draw_synthetic(fit, sdc, k, params.m, seed, params.numeric_output)
    return SynthesisResult(
        synthetic=list(frames),
        schema=out_schema,
        margins=released,
        fit=fit.report,
        fitted_margins=fit.fitted_margins,
        synthetic_margins=_synthetic_margin_fits(codes, layout, released.tables, k),
        sdc=sdc.records,
        layout=layout,
        bins={v: b.to_dict() for v, b in sdc.bins.items()},
        n=n,
        k=k,
        seed=seed,
        params=params,
        dp=dp_record,
        unnamed_levels=unnamed,
    )


def synthesised_schema(original: Dataset, params: MarginsParams, executor: Executor | None = None) -> Schema:
    """The schema of the synthetic sets ``params`` would make from ``original``, without synthesising.

    The variables and their levels after SDC: the settings fix them, except where a step
    derives them from the data (quantile or equal-width breaks, merging levels below
    ``min_count``); for those only the aggregates the step needs (value counts of the original)
    are computed — no margins, no IPF, no draws. Runs the same checks of the SDC steps as
    :func:`synthesise`.

    Raises
    ------
    ParameterError
        As :func:`~pipeline.synth.sdc.apply_sdc`.
    """
    _, sdc = _sdc(original.frame, original.schema, params, executor or Executor.current())
    return output_schema(sdc, params.numeric_output)


def synthesise(original: Dataset, params: MarginsParams, executor: Executor | None = None) -> SynthesisResult:
    """Make synthetic data from coarsened margins of ``original``.

    Parameters
    ----------
    original : Dataset
        The ground truth.
    params : MarginsParams
    executor : Executor, optional
        Where the counting (and a Dask IPF fit) runs: in memory or over the partitions, by its
        policy; default :meth:`Executor.current`.

    Returns
    -------
    SynthesisResult

    Raises
    ------
    ParameterError
        Unknown variables, invalid SDC steps, structural zeros that contradict a released
        margin, a table over the size guard.
    """
    return synthesise_frame(original.frame, original.schema, params, executor)


class MarginsSynthesiser(Synthesiser):
    """The coarsened-margins synthesiser (Raab) as a :class:`~pipeline.synth.base.Synthesiser`."""

    kind = "margins"
    params_model = MarginsParams
    description = "safe synthetic data from coarsened margins (Raab): SDC, V1/V2/V3 or DP margins, IPF, draws"
    report_section = ReportSection(
        "Synthesis from coarsened margins", "pipeline.synth.section:synthesis_section", anchor="synthesis-margins"
    )
    row_measures = frozenset(
        {"n", "k", "ipf_iterations", "ipf_converged", "ipf_stopping_criterion", "ipf_compatible", "ipf_max_abs_dev",
         "ipf_max_abs_dev_n", "ipf_tvd_n", "margin_total_released", "margin_total_moved", "margin_total_moved_rel",
         "margin_adjust_shift", "margin_adjust_scale", "dp_epsilon_spent", "dp_delta_spent", "dp_margin_epsilon",
         "dp_noise_scale", "dp_cells_zeroed", "syn_margin_max_abs_dev", "syn_margin_tvd"}
    )  # fmt: skip
    params: MarginsParams

    def privacy_spend(self) -> tuple[float, float, str] | None:
        dp = self.params.dp
        if dp is None:
            return None
        q = len(self.params.margin_sets())
        delta = dp.delta * q if dp.noise == "gaussian" else 0.0
        return float(check_dp(dp, q).sum()), float(delta), dp.noise

    def schema_of(self, original: Dataset, executor: Executor) -> Schema:
        return synthesised_schema(original, self.params, executor)

    def synthesise_frame(self, frame: Frame, schema: Schema, executor: Executor) -> SynthesisResult:
        return synthesise_frame(frame, schema, self.params, executor)
