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

The task-file measures (``utility_gen``, ``utility_tab``, ``utility_tables``, ``utility_synds``) are the
classes of :mod:`pipeline.utility.measure`; the functions above (:mod:`pipeline.utility.api`) are thin
wrappers over them.
"""

from pipeline.utility.api import utility_gen, utility_synds, utility_tab, utility_tables
from pipeline.utility.gen import UtilityGenResult, utility_by_set
from pipeline.utility.params import TAB_STATS
from pipeline.utility.result import UtilitySyndsResult, UtilityTablesResult, UtilityTabResult

__all__ = [
    "TAB_STATS",
    "UtilityGenResult",
    "UtilitySyndsResult",
    "UtilityTabResult",
    "UtilityTablesResult",
    "utility_by_set",
    "utility_gen",
    "utility_synds",
    "utility_tab",
    "utility_tables",
]
