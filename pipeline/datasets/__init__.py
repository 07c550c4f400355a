"""Bundled demo data: SD2011 (synthpop) and CEdata (IdentificationRiskCalculation).

See ``PROVENANCE.md`` in this folder for where each file comes from and its licence.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.errors import DataError

if TYPE_CHECKING:  # listing the bundled data (sdc-pipeline demo-data) imports no Dask
    from pipeline.data.dataset import Dataset

#: name -> (file, schema file, special missing codes)
ORIGINALS: dict[str, tuple[str, str, dict[str, float]]] = {
    "sd2011": ("sd2011.csv", "sd2011.schema.json", {"income": -8.0}),
    "sd2011_subset": ("sd2011_subset.csv", "sd2011_subset.schema.json", {"income": -8.0}),
    "cedata": ("cedata.csv", "cedata_syn.schema.json", {}),
}
#: name -> (file pattern with {i}, number of sets, original it was made from)
SYNTHETIC: dict[str, tuple[str, int, str]] = {
    "sd2011_cart": ("sd2011_cart_syn{i}.csv", 5, "sd2011_subset"),
    "cedata_syn_income": ("cedata_syn_income_{i}.csv", 5, "cedata"),
}


def demo_path(filename: str) -> Path:
    """Path of a bundled file."""
    return Path(str(files("pipeline.datasets").joinpath(filename)))


def load_demo(name: str) -> Dataset:
    """Load a bundled original data set (``sd2011``, ``sd2011_subset`` or ``cedata``)."""
    if name not in ORIGINALS:
        raise DataError(f"unknown demo data set {name!r}; available originals: {', '.join(sorted(ORIGINALS))}")
    from pipeline.data.dataset import read_dataset

    file, schema, codes = ORIGINALS[name]
    return read_dataset(demo_path(file), schema=demo_path(schema), name=name, missing_codes=codes or None)


def load_demo_synthetic(name: str) -> list[Dataset]:
    """Load the bundled synthetic sets ``name`` (``sd2011_cart`` or ``cedata_syn_income``)."""
    if name not in SYNTHETIC:
        raise DataError(f"unknown demo synthetic data {name!r}; available: {', '.join(sorted(SYNTHETIC))}")
    pattern, m, original = SYNTHETIC[name]
    _, schema, codes = ORIGINALS[original]
    from pipeline.data.dataset import read_dataset

    return [
        read_dataset(
            demo_path(pattern.format(i=i)), schema=demo_path(schema), name=f"{name}_{i}", missing_codes=codes or None
        )
        for i in range(1, m + 1)
    ]
