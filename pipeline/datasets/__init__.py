"""Bundled demo data: SD2011 (synthpop) and CEdata (IdentificationRiskCalculation), and generated
demo data: a population register of any size with its synthetic twin (:mod:`.register`).

See ``PROVENANCE.md`` in this folder for where each file comes from and its licence.  Generated
data are written once to :func:`~pipeline.datasets.register.cache_folder` and reused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.datasets.bundled import demo_path
from pipeline.errors import DataError

if TYPE_CHECKING:  # listing the bundled data (sdc-pipeline demo-data) imports no Dask
    from pipeline.data.dataset import Dataset
    from pipeline.datasets.scaled import ScaledData

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

#: generated originals: name -> description (their size is the task's ``rows``)
GENERATED: dict[str, str] = {
    "register": "population register, 300 municipalities in 12 regions, sex, age 0-100, edu, marital, employment, "
    "income, expenditure (generated; rows: records, default 1,000,000)",
}
#: generated synthetic sets: name -> the generated original they are made with
GENERATED_SYNTHETIC: dict[str, str] = {"register_twin": "register"}
#: generated holdouts: name -> the generated original whose population they are drawn from
GENERATED_HOLDOUTS: dict[str, str] = {"register_holdout": "register"}
#: records of a generated demo when the task gives no ``rows``
DEFAULT_GENERATED_ROWS = 1_000_000


def load_demo(name: str, rows: int | None = None) -> Dataset:
    """Load a bundled original data set (``sd2011``, ``sd2011_subset`` or ``cedata``) or a generated
    one (``register``, ``rows`` records, default :data:`DEFAULT_GENERATED_ROWS`)."""
    from pipeline.data.dataset import read_dataset

    if name in GENERATED:
        data = _generated(rows)
        return read_dataset(data.path("original"), schema=data.schema, name=name)
    if name not in ORIGINALS:
        known = ", ".join(sorted([*ORIGINALS, *GENERATED]))
        raise DataError(f"unknown demo data set {name!r}; available originals: {known}")

    file, schema, codes = ORIGINALS[name]
    return read_dataset(demo_path(file), schema=demo_path(schema), name=name, missing_codes=codes or None)


def load_demo_synthetic(name: str, rows: int | None = None) -> list[Dataset]:
    """Load the bundled synthetic sets ``name`` (``sd2011_cart`` or ``cedata_syn_income``) or the
    generated ``register_twin`` of the ``rows``-record register."""
    from pipeline.data.dataset import read_dataset

    if name in GENERATED_SYNTHETIC:
        data = _generated(rows)
        return [read_dataset(data.path("syn1"), schema=data.schema, name=f"{name}_1")]
    if name not in SYNTHETIC:
        known = ", ".join(sorted([*SYNTHETIC, *GENERATED_SYNTHETIC]))
        raise DataError(f"unknown demo synthetic data {name!r}; available: {known}")
    pattern, m, original = SYNTHETIC[name]
    _, schema, codes = ORIGINALS[original]

    return [
        read_dataset(
            demo_path(pattern.format(i=i)), schema=demo_path(schema), name=f"{name}_{i}", missing_codes=codes or None
        )
        for i in range(1, m + 1)
    ]


def load_demo_holdout(name: str, rows: int | None = None) -> Dataset:
    """The generated holdout ``register_holdout`` of the ``rows``-record register: records of the
    same population that neither the register nor its twin holds
    (:func:`~pipeline.datasets.register.write_register_holdout`)."""
    from pipeline.data.dataset import read_dataset
    from pipeline.datasets.register import cache_folder, write_register_holdout

    if name not in GENERATED_HOLDOUTS:
        raise DataError(f"unknown demo holdout {name!r}; available: {', '.join(sorted(GENERATED_HOLDOUTS))}")
    try:
        data = write_register_holdout(cache_folder(), DEFAULT_GENERATED_ROWS if rows is None else rows)
    except ValueError as e:
        raise DataError(str(e)) from None
    return read_dataset(data.path("holdout"), schema=data.schema, name=name)


def _generated(rows: int | None) -> ScaledData:
    """The register of ``rows`` records and its twin, written to the cache folder on first use."""
    from pipeline.datasets.register import cache_folder, write_register

    try:
        return write_register(cache_folder(), DEFAULT_GENERATED_ROWS if rows is None else rows)
    except ValueError as e:
        raise DataError(str(e)) from None
