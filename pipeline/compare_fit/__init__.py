"""synthpop's model-based utility: ``glm.synds`` / ``lm.synds`` / ``multinom.synds`` / ``polr.synds``,
``summary.fit.synds`` and ``compare.fit.synds``.

Public API
----------
compare_fit_synds, glm_synds, lm_synds, multinom_synds, polr_synds
    The model fitted to the original and every synthetic set, combined and compared.
CompareFitResult
    The result (``.rows()`` with params, ``.tidy()``, ``.to_dict()``).
CompareFitParams
    The parameters of the task measure ``compare_fit``.

See ``docs/compare_fit.md``.
"""

from pipeline.lazy import lazy_exports

__getattr__ = lazy_exports(
    __name__,
    {
        "CompareFitParams": "pipeline.compare_fit.params",
        "CompareFitResult": "pipeline.compare_fit.result",
        "compare_fit_synds": "pipeline.compare_fit.api",
        "glm_synds": "pipeline.compare_fit.api",
        "lm_synds": "pipeline.compare_fit.api",
        "multinom_synds": "pipeline.compare_fit.api",
        "polr_synds": "pipeline.compare_fit.api",
    },
)
__all__ = ["CompareFitParams", "CompareFitResult", "compare_fit_synds", "glm_synds", "lm_synds", "multinom_synds",
           "polr_synds"]  # fmt: skip
