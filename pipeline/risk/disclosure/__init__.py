"""synthpop's disclosure measures (identity: UiO, repU…; attribute: DiSCO, Dorig…) on key blocks.

Public API
----------
disclosure, multi_disclosure
    Measures for one target / several targets with one key set (synthpop ``disclosure``,
    ``multi.disclosure``).
replicated_uniques, remove_uniques
    Uniques shared by the original and a synthetic set, and synthpop ``sdc``'s removal of
    them from the synthetic data.
DisclosureResult, MultiDisclosureResult, ReplicatedUniquesResult, RemovedUniques
    The results (``.rows()`` with params, ``.tidy()``, ``.to_dict()``).

The task measure is :class:`~pipeline.risk.disclosure.measure.DisclosureMeasure` (parameters:
:class:`~pipeline.risk.disclosure.params.DisclosureParams`); the functions above are thin
wrappers of it.  See ``docs/disclosure.md`` and the specification ``shared/spec/disclosure.md``.
"""

from pipeline.risk.disclosure.api import disclosure, multi_disclosure
from pipeline.risk.disclosure.result import DisclosureResult, MultiDisclosureResult
from pipeline.risk.disclosure.uniques import (
    RemovedUniques,
    ReplicatedUniquesResult,
    remove_uniques,
    replicated_uniques,
)

__all__ = [
    "DisclosureResult",
    "MultiDisclosureResult",
    "RemovedUniques",
    "ReplicatedUniquesResult",
    "disclosure",
    "multi_disclosure",
    "remove_uniques",
    "replicated_uniques",
]
