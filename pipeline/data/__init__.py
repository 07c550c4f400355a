"""Data layer: schema, readers, and the original-vs-synthetic compatibility check."""

from pipeline.lazy import lazy_exports

# imported on first use: importing one light module of the package (its params, the schema) must not
# load the heavy ones (Dask, numba kernels, SciPy)
__getattr__ = lazy_exports(
    __name__,
    {
        "Dataset": "pipeline.data.dataset",
        "Schema": "pipeline.data.schema",
        "Variable": "pipeline.data.schema",
        "align_synthetic": "pipeline.data.compare",
        "compare_schemas": "pipeline.data.compare",
        "read_dataset": "pipeline.data.dataset",
        "write_dataset": "pipeline.data.dataset",
    },
)

__all__ = ["Dataset", "Schema", "Variable", "align_synthetic", "compare_schemas", "read_dataset", "write_dataset"]
