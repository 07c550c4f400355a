"""Utility of synthetic data: synthpop's ``utility.gen``, ``utility.tab`` and ``utility.tables``.

Public API
----------
utility_gen
    Propensity-score utility (pMSE, S_pMSE, SPECKS, PO50, U) with a logit model (IRLS equal to
    R's ``glm``, distributed over Dask partitions) or an rpart-compatible CART.
utility_tab, utility_tables
    Table-based utility (VW, FT, JSD, G, pMSE, ... for one table or every low-order table).
utility_by_set
    Per-set pMSE and S_pMSE of a result (for utility–risk plots).
"""

from pipeline.utility.gen import UtilityGenResult, utility_by_set, utility_gen
from pipeline.utility.tab import TAB_STATS, UtilityTablesResult, UtilityTabResult, utility_tab, utility_tables

__all__ = [
    "TAB_STATS",
    "UtilityGenResult",
    "UtilityTabResult",
    "UtilityTablesResult",
    "utility_by_set",
    "utility_gen",
    "utility_tab",
    "utility_tables",
]
