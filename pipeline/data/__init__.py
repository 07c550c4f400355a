"""Data layer: schema, readers, and the original-vs-synthetic compatibility check."""

from pipeline.data.compare import align_synthetic, compare_schemas
from pipeline.data.dataset import Dataset, read_dataset, write_dataset
from pipeline.data.schema import Schema, Variable

__all__ = ["Dataset", "Schema", "Variable", "align_synthetic", "compare_schemas", "read_dataset", "write_dataset"]
