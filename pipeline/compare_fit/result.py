"""The result of ``compare_fit``: synthpop's fit, summary and comparison tables as tidy rows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from pipeline.evaluation.base import Result, Row
from pipeline.evaluation.comparison import HOLDOUT

if TYPE_CHECKING:
    from pipeline.compare_fit.inference import Combined, Comparison
    from pipeline.compare_fit.params import CompareFitParams
    from pipeline.rmodels.regression import FittedModel


@dataclass(frozen=True)
class CompareFitResult(Result):
    """Fits to the original and the m synthetic sets, synthpop's summary and comparison.

    Attributes
    ----------
    params : CompareFitParams
    original : FittedModel
        The fit to the original (``coef.obs`` and ``real.varcov`` of ``compare.fit.synds``).
    fits : tuple of FittedModel
        The fit to each synthetic set (``analyses``, ``mcoef``, ``mvar``).
    summary : Combined
        ``summary.fit.synds`` with the requested ``population_inference``.
    comparison : Comparison
        ``compare.fit.synds``.
    n, k : int
        Records of the original and of a synthetic set.
    incomplete : bool
        synthpop's ``incomplete`` as the fit object records it (the summary and comparison may
        override it: population inference with m = 1).
    written : tuple of str
        The coefficient names the rows carry: R's, with levels of fewer than 10 complete
        original records coarsened (:mod:`pipeline.compare_fit.names`).
    not_synthesised : tuple of str
        The formula's variables taken as kept from the original (given, or read from the
        pipeline's synthesis).
    holdout : Comparison or None
        With holdout records: ``compare.fit.synds`` of the holdout's fit in the place of one
        fully synthetic set (what a fresh sample of its size gets); rows with ``role`` holdout.
    holdout_n : int or None
        Records of the holdout.
    """

    params: CompareFitParams
    original: FittedModel
    fits: tuple[FittedModel, ...]
    summary: Combined
    comparison: Comparison
    n: int
    k: int
    incomplete: bool
    written: tuple[str, ...]
    not_synthesised: tuple[str, ...] = ()
    holdout: Comparison | None = None
    holdout_n: int | None = None

    @property
    def names(self) -> tuple[str, ...]:
        return self.original.names

    def _setting(self) -> dict[str, Any]:
        p = self.params
        setting: dict[str, Any] = {"formula": p.formula, "model": p.fitting_function}
        if p.fitting_function == "glm":
            setting["family"] = p.family
        setting["population_inference"] = p.population_inference
        return setting

    def rows(self) -> list[Row]:
        base = self._setting()
        out: list[Row] = []

        def coef_rows(label: str, measure: str, values: np.ndarray) -> None:
            out.extend(Row(label, measure, float(v), {**base, "coefficient": c})
                       for c, v in zip(self.written, values, strict=True))  # fmt: skip

        for label, fit in [("original", self.original), *((str(i), f) for i, f in enumerate(self.fits, start=1))]:
            coef_rows(label, "coef", fit.coefficients)
            coef_rows(label, "se", fit.se)
            coef_rows(label, "z", fit.coefficients / fit.se)
        s, c = self.summary, self.comparison
        for measure, values in [("qbar", s.qbar), ("ubar", s.ubar), ("b", s.b), ("summary_se", s.se),
                                ("summary_z", s.z), ("summary_p", s.p), ("compare_se", c.syn_se),
                                ("compare_z", c.syn_z), ("diff", c.diff), ("std_diff", c.std_diff),
                                ("ci_overlap", c.ci_overlap)]:  # fmt: skip
            coef_rows("mean", measure, values)
        scalars = [
            ("mean_ci_overlap", c.mean_ci_overlap),
            ("mean_abs_std_diff", c.mean_abs_std_diff),
            ("incomplete", float(c.incomplete)),
            ("m", float(len(self.fits))),
            ("ncoef", float(len(self.names))),
        ]
        if c.lof_excluded:
            scalars.append(("lof_excluded", float(c.lof_excluded)))
        if c.lack_of_fit is not None:
            scalars += [("lack_of_fit", c.lack_of_fit), ("lof_pvalue", c.lof_pvalue),
                        ("lof_ratio", c.lack_of_fit / c.lof_df[0]), ("lof_df", float(c.lof_df[0]))]  # fmt: skip
            if len(c.lof_df) > 1:
                scalars.append(("lof_df2", float(c.lof_df[1])))
        out.extend(Row("mean", measure, float(v), dict(base)) for measure, v in scalars)
        if self.holdout is not None:
            out.extend(self._holdout_rows(base))
        return out

    def _holdout_rows(self, base: dict[str, Any]) -> list[Row]:
        """The comparison's figures with the holdout in the synthetic sets' place: the same
        (synthetic, measure, params) keys as the observed rows, ``role`` holdout."""
        h = self.holdout
        assert h is not None
        out = [Row("mean", measure, float(v), {**base, "coefficient": c}, role=HOLDOUT)
               for measure, values in (("diff", h.diff), ("std_diff", h.std_diff), ("ci_overlap", h.ci_overlap))
               for c, v in zip(self.written, values, strict=True)]  # fmt: skip
        scalars = [("mean_ci_overlap", h.mean_ci_overlap), ("mean_abs_std_diff", h.mean_abs_std_diff)]
        if h.lack_of_fit is not None:
            scalars += [("lack_of_fit", h.lack_of_fit), ("lof_pvalue", h.lof_pvalue)]
        return out + [Row("mean", measure, float(v), dict(base), role=HOLDOUT) for measure, v in scalars]

    def to_dict(self) -> dict[str, Any]:
        c = self.comparison
        return {
            "formula": self.params.formula,
            "model": self.params.fitting_function,
            "family": self.params.family if self.params.fitting_function == "glm" else None,
            "m": len(self.fits),
            "n": self.n,
            "k": self.k,
            "incomplete": c.incomplete,
            "not_synthesised": list(self.not_synthesised),
            "population_inference": self.params.population_inference,
            "coefficients": list(self.written),
            "mean_ci_overlap": c.mean_ci_overlap,
            "mean_abs_std_diff": c.mean_abs_std_diff,
            "lack_of_fit": c.lack_of_fit,
            "lof_test": c.lof_test,
            "lof_df": list(c.lof_df),
            "lof_pvalue": c.lof_pvalue,
            "lof_rank": c.lof_rank,
            "lof_excluded": c.lof_excluded,
            "holdout": None
            if self.holdout is None
            else {
                "n": self.holdout_n,
                "mean_ci_overlap": self.holdout.mean_ci_overlap,
                "mean_abs_std_diff": self.holdout.mean_abs_std_diff,
                "lack_of_fit": self.holdout.lack_of_fit,
                "lof_pvalue": self.holdout.lof_pvalue,
            },
        }
