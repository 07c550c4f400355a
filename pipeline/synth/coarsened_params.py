"""The settings of the coarsened-margins synthesiser (``synthesise: {kind: margins}``): the model
a task file's ``synthesise`` section is validated with, apart from the synthesiser
(:mod:`pipeline.synth.coarsened`) so that loading a task loads no IPF engine or numba kernel."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from pipeline.errors import ParameterError
from pipeline.synth.base import SynthesisParams
from pipeline.synth.control import Adjust, Rounding, Ties, Variant
from pipeline.synth.dp import DpParams, check_dp
from pipeline.synth.margins import MarginOrder, margin_sets
from pipeline.synth.sdc import SdcStep

#: IPF engine (see :func:`~pipeline.synth.ipf.fit_ipf`)
EngineName = Literal["auto", "dense", "sparse", "dask"]
TolType = Literal["absolute", "relative"]
StructZeroMode = Literal["seed", "syn.ipf"]

NumericOutput = Literal["uniform", "midpoint", "bin"]


class MarginsParams(SynthesisParams):
    """Parameters of the ``synthesise`` section of a task file.

    Attributes
    ----------
    kind : "margins"
        The default synthesiser (:mod:`pipeline.synthesisers`).
    variables : list of str
        Variables to synthesise (factors, or numerics categorised by an ``sdc`` step).
    sdc : list of steps
        ``{"step": "top_bottom_coding" | "categorise" | "merge_levels", "variable": ..., ...}``.
    margins : {"oneway", "twoway", "threeway", "fourway"} or None
        All margins of that order (synthpop ``gmargins``), in ``combn`` order.
    extra_margins : list of list of str
        Further margins appended in the given order (synthpop ``othmargins``).
    variant : {"V1", "V2", "V3", "none"}
        Margin disclosure control (see :mod:`pipeline.synth.control`); "none" is unsafe parity mode.
    limit, small_value, rounding, ties, adjust
        The disclosure limit L (a positive integer) and the details of the variant.
    priorn : float
        syn.ipf prior mass added to every margin.
    structural_zeros : list of {variable: [levels]}
        Cells that must be empty.
    structzero_mode : {"seed", "syn.ipf"}
        "seed" (default): zeros in the IPF seed, so the fitted margins respect them; "syn.ipf":
        synthpop's order (fit, then zero the cells and renormalise) for checking against R.
    tol, tol_type, max_iter, max_cells, engine, chunk_cells
        IPF stopping rule, size guard, storage and Dask block size (see :func:`~pipeline.synth.ipf.fit_ipf`).
    m, k, seed
        Number of synthetic sets (>= 1), records per set (>= 1, default n), seed.
    numeric_output : {"uniform", "midpoint", "bin"}
        How categorised numeric variables are released.
    dp : DpParams, optional
        Differentially private margins (see :mod:`pipeline.synth.dp`): ``epsilon``, ``delta``,
        ``noise``, ``order`` ("noise_only" needs ``variant: none``; "noise_then_coarsen" a
        V1/V2/V3 variant), ``weights``.
    output_format : list of {"parquet", "csv"}
        Formats written by :meth:`SynthesisResult.write`.

    The bounds are field constraints and the settings that need no data (the margins name known
    variables once each, ``dp`` fits the variant and the number of margins) are checked by the
    model, so invalid settings are refused when a task is loaded.
    """

    kind: Literal["margins"] = "margins"
    variables: list[str] = Field(min_length=1)
    sdc: list[SdcStep] = Field(default_factory=list)
    margins: MarginOrder | None = "twoway"
    extra_margins: list[list[str]] = Field(default_factory=list)
    variant: Variant = "V3"
    limit: int = Field(10, gt=0, strict=True, description="the disclosure limit L")
    small_value: float | None = None
    rounding: Rounding = "nearest"
    ties: Ties = "half_even"
    adjust: Adjust = "shift"
    priorn: float = Field(1.0, ge=0, allow_inf_nan=False)
    structural_zeros: list[dict[str, list[str | None]]] = Field(default_factory=list)
    structzero_mode: StructZeroMode = "seed"
    tol: float = Field(1e-8, gt=0)
    tol_type: TolType = "relative"
    max_iter: int = Field(5000, ge=1)
    max_cells: int = Field(10**8, ge=1)
    engine: EngineName = "auto"
    chunk_cells: int = 1 << 24
    k: int | None = Field(None, ge=1, description="records per synthetic set")
    numeric_output: NumericOutput = "uniform"
    dp: DpParams | None = None

    @model_validator(mode="after")
    def _margins_and_dp(self) -> MarginsParams:
        margins = margin_sets(list(self.variables), self.margins, self.extra_margins)
        if self.dp is not None:
            if self.dp.order == "noise_only" and self.variant != "none":
                raise ParameterError(
                    f"dp.order 'noise_only' releases the noisy margins as they are: set variant: none "
                    f"(got {self.variant!r}), or use order 'noise_then_coarsen' to coarsen them"
                )
            if self.dp.order == "noise_then_coarsen" and self.variant == "none":
                raise ParameterError("dp.order 'noise_then_coarsen' needs a variant V1, V2 or V3 (got 'none')")
            check_dp(self.dp, len(margins))
        return self

    def margin_sets(self) -> list[tuple[str, ...]]:
        """The margins to release, in fitting order."""
        return margin_sets(list(self.variables), self.margins, self.extra_margins)
