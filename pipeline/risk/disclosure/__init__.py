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

from pipeline.lazy import lazy_exports

# imported on first use: importing one light module of the package (its params, the schema) must not
# load the heavy ones (Dask, numba kernels, SciPy)
__getattr__ = lazy_exports(
    __name__,
    {
        "DisclosureResult": "pipeline.risk.disclosure.result",
        "MultiDisclosureResult": "pipeline.risk.disclosure.result",
        "RemovedUniques": "pipeline.risk.disclosure.uniques",
        "ReplicatedUniquesResult": "pipeline.risk.disclosure.uniques",
        "disclosure": "pipeline.risk.disclosure.api",
        "multi_disclosure": "pipeline.risk.disclosure.api",
        "remove_uniques": "pipeline.risk.disclosure.uniques",
        "replicated_uniques": "pipeline.risk.disclosure.uniques",
    },
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
