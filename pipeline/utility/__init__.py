"""Utility of synthetic data: synthpop's ``utility.gen``, ``utility.tab`` and ``utility.tables``.

Public API
----------
utility_gen
    Propensity-score utility (pMSE, S_pMSE, SPECKS, PO50, U) with a logit model (IRLS equal to
    R's ``glm``, also by rounds over partitions) or an rpart-compatible CART.
utility_tab, utility_tables
    Table-based utility (VW, FT, JSD, G, pMSE, ... for one table or every low-order table).
utility_by_set
    Per-set pMSE and S_pMSE of a result (for utility–risk plots).
utility_synds
    synthpop 1.2-1's ``utility.synds``: several propensity models per call, deviance, pairwise null.
compare_synds, multi_compare
    synthpop's ``compare.synds`` (per-variable distributions) and ``multi.compare`` (one variable by group).

The task-file measures (``utility_gen``, ``utility_tab``, ``utility_tables``, ``utility_synds``) are the
classes of :mod:`pipeline.utility.measure`; the functions above (:mod:`pipeline.utility.api`) are thin
wrappers over them.
"""

from pipeline.lazy import lazy_exports

# imported on first use: importing one light module of the package (its params, the schema) must not
# load the heavy ones (Dask, numba kernels, SciPy)
__getattr__ = lazy_exports(
    __name__,
    {
        "MultiCompareResult": "pipeline.utility.result",
        "TAB_STATS": "pipeline.utility.params",
        "UtilityGenResult": "pipeline.utility.gen",
        "UtilitySyndsResult": "pipeline.utility.result",
        "UtilityTabResult": "pipeline.utility.result",
        "UtilityTablesResult": "pipeline.utility.result",
        "compare_synds": "pipeline.utility.api",
        "multi_compare": "pipeline.utility.api",
        "utility_by_set": "pipeline.utility.gen",
        "utility_gen": "pipeline.utility.api",
        "utility_synds": "pipeline.utility.api",
        "utility_tab": "pipeline.utility.api",
        "utility_tables": "pipeline.utility.api",
    },
)

__all__ = [
    "TAB_STATS",
    "MultiCompareResult",
    "UtilityGenResult",
    "UtilitySyndsResult",
    "UtilityTabResult",
    "UtilityTablesResult",
    "compare_synds",
    "multi_compare",
    "utility_by_set",
    "utility_gen",
    "utility_synds",
    "utility_tab",
    "utility_tables",
]
