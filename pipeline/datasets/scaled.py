"""Benchmark data scaled like the anchors: the bundled sets repeated, numeric values nudged.

The R anchors of the benchmarks were timed on the bundled SD2011 and CEdata sets repeated to
the wanted size with their numeric values slightly changed, so that a larger survey has more
distinct values (a tiling of exact copies lets duplicate-merging shortcuts turn millions of
records into a few thousand weighted ones and flatters every timing).  This module builds the
same kind of data, once, as Parquet folders that every benchmark reuses:

* copy 0 is the bundled set itself; copy ``c >= 1`` is the bundled set with
  - integer-valued variables (SD2011 ``age``, ``depress``; CEdata ``Age``) moved by -1 or +1
    and clipped to the variable's range in the bundled set,
  - money (SD2011 ``income``; CEdata ``Expenditure``, ``Income``) multiplied by a factor drawn
    uniformly from [0.98, 1.02] and rounded to whole units (zero stays zero),
  - missing values and special missing codes (``income == -8``) left alone, factors unchanged;
* the draws of copy ``c`` come from ``numpy.random.default_rng([seed, c])`` and are the same
  for the original and its synthetic sets (the same record of the same copy gets the same
  nudge), so row-aligned partially synthetic sets (CEdata) stay row-aligned: their
  unsynthesised variables stay equal to the original's;
* the data do not depend on how they are split into files.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.data.schema import Schema
from pipeline.datasets.bundled import demo_path
from pipeline.results import json_text

#: bump when the generated values change, so stale folders are rebuilt
GENERATOR_VERSION = 1
#: records per Parquet file
FILE_ROWS = 250_000
#: money factors are drawn from [1 - MONEY_NUDGE, 1 + MONEY_NUDGE]
MONEY_NUDGE = 0.02


@dataclass(frozen=True)
class Family:
    """A bundled original with its synthetic sets and the rules for nudging them."""

    original: str
    schema: str
    synthetic: tuple[str, ...]
    integers: tuple[str, ...]
    money: tuple[str, ...]
    special: dict[str, tuple[float, ...]]


FAMILIES: dict[str, Family] = {
    "sd2011": Family(
        original="sd2011_subset.csv",
        schema="sd2011_subset.schema.json",
        synthetic=tuple(f"sd2011_cart_syn{i}.csv" for i in range(1, 6)),
        integers=("age", "depress"),
        money=("income",),
        special={"income": (-8.0,)},
    ),
    "cedata": Family(
        original="cedata.csv",
        schema="cedata_syn.schema.json",
        # Expenditure and Income synthesised (row-aligned), the identification-risk scenario
        synthetic=("cedata_syn_incexp_1.csv",),
        integers=("Age",),
        money=("Expenditure", "Income"),
        special={},
    ),
}


@dataclass(frozen=True)
class ScaledData:
    """Where a generated family lives: ``original/``, ``syn1/``.. Parquet folders and the schema."""

    folder: Path
    family: str
    rows: int
    n_synthetic: int

    @property
    def schema_path(self) -> Path:
        return self.folder / f"{self.family}.schema.json"

    @property
    def schema(self) -> Schema:
        return Schema.from_json(self.schema_path)

    def path(self, name: str) -> Path:
        """Folder of ``"original"`` or ``"syn1"``, ``"syn2"``, ..."""
        return self.folder / name


def family_schema(family: str) -> Schema:
    """The schema of a family's data, special missing codes included."""
    spec = FAMILIES[family]
    return Schema.from_json(demo_path(spec.schema)).with_missing_codes(spec.special)


def _bundled(family: Family, n_synthetic: int) -> tuple[Schema, list[pd.DataFrame]]:
    schema = Schema.from_json(demo_path(family.schema))
    files = [family.original, *family.synthetic[:n_synthetic]]
    frames = [
        schema.apply(pd.read_csv(demo_path(f), dtype=str, keep_default_na=False, na_values=[""]), f) for f in files
    ]
    return schema, frames


def _nudgeable(values: np.ndarray, special: tuple[float, ...]) -> np.ndarray:
    return np.isfinite(values) & ~np.isin(values, special)


def nudged_copy(frames: list[pd.DataFrame], family: Family, copy: int, seed: int) -> list[pd.DataFrame]:
    """Copy ``copy`` of every frame of a family (copy 0 is the frames themselves).

    Parameters
    ----------
    frames : list of pandas.DataFrame
        The bundled original and synthetic sets (cast to their schema), all of equal length.
    family : Family
    copy : int
    seed : int

    Returns
    -------
    list of pandas.DataFrame
        One frame per input, the same nudges applied to each.
    """
    if copy == 0:
        return [f.copy() for f in frames]
    n = len(frames[0])
    rng = np.random.default_rng([seed, copy])
    steps = {v: rng.choice(np.array([-1.0, 1.0]), n) for v in family.integers}
    factors = {v: rng.uniform(1 - MONEY_NUDGE, 1 + MONEY_NUDGE, n) for v in family.money}
    out = []
    for frame in frames:
        new = frame.copy()
        for v, step in steps.items():
            values = frame[v].to_numpy(dtype=float)
            ok = _nudgeable(values, family.special.get(v, ()))
            lo, hi = np.min(values[ok]), np.max(values[ok])
            new[v] = np.where(ok, np.clip(values + step, lo, hi), values)
        for v, factor in factors.items():
            values = frame[v].to_numpy(dtype=float)
            ok = _nudgeable(values, family.special.get(v, ()))
            new[v] = np.where(ok, np.round(values * factor), values)
        out.append(new)
    return out


def scaled_frames(family: str, rows: int, n_synthetic: int = 1, seed: int = 2011, start: int = 0) -> list[pd.DataFrame]:
    """Records ``start .. start + rows - 1`` of the scaled original and synthetic sets, in memory.

    The same records as :func:`write_scaled` writes, for tests and small benchmarks.
    """
    spec = FAMILIES[family]
    return _scaled(_bundled(spec, n_synthetic)[1], spec, rows, seed, start)


def _scaled(base: list[pd.DataFrame], spec: Family, rows: int, seed: int, start: int) -> list[pd.DataFrame]:
    size = len(base[0])
    first, last = start // size, (start + rows - 1) // size
    parts = [nudged_copy(base, spec, c, seed) for c in range(first, last + 1)]
    frames = [pd.concat([p[i] for p in parts], ignore_index=True) for i in range(len(base))]
    offset = start - first * size
    return [f.iloc[offset : offset + rows].reset_index(drop=True) for f in frames]


def write_scaled(
    folder: Path, family: str, rows: int, n_synthetic: int = 1, seed: int = 2011, file_rows: int = FILE_ROWS
) -> ScaledData:
    """Write (once) the scaled original and ``n_synthetic`` synthetic sets of ``rows`` records each.

    Parameters
    ----------
    folder : Path
        Parent folder; the data go to ``folder / f"{family}_{rows}_s{seed}"``.  A folder written
        before with the same parameters and generator version is reused as it is.
    family : {"sd2011", "cedata"}
    rows : int
        Records per data set.
    n_synthetic : int
        Synthetic sets (SD2011: up to 5 CART syntheses; CEdata: 1).
    seed : int
    file_rows : int
        Records per Parquet file (does not change the data).

    Returns
    -------
    ScaledData
    """
    spec = FAMILIES[family]
    if not 1 <= n_synthetic <= len(spec.synthetic):
        raise ValueError(f"{family}: n_synthetic must be in 1..{len(spec.synthetic)}, got {n_synthetic}")
    target = folder / f"{family}_{rows}_s{seed}"
    out = ScaledData(target, family, rows, n_synthetic)
    manifest = {"version": GENERATOR_VERSION, "family": family, "rows": rows, "seed": seed,
                "n_synthetic": n_synthetic}  # fmt: skip
    done = target / "manifest.json"
    if done.exists() and json.loads(done.read_text()) == manifest:
        return out
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    family_schema(family).to_json(out.schema_path)
    names = ["original"] + [f"syn{i + 1}" for i in range(n_synthetic)]
    for name in names:
        out.path(name).mkdir()
    base = _bundled(spec, n_synthetic)[1]
    for i, start in enumerate(range(0, rows, file_rows)):
        frames = _scaled(base, spec, min(file_rows, rows - start), seed, start)
        for name, frame in zip(names, frames, strict=True):
            # factors stored as plain labels, as a user's files would be; the schema makes them factors again
            labels = frame.astype({c: object for c in frame.columns if isinstance(frame[c].dtype, pd.CategoricalDtype)})
            labels.to_parquet(out.path(name) / f"part-{i:04d}.parquet", index=False)
    done.write_text(json_text(manifest))
    return out


def write_scaled_sd2011(folder: Path, rows: int, n_synthetic: int = 2, files: int = 8) -> Path:
    """SD2011 and ``n_synthetic`` CART syntheses scaled to ``rows`` records in ``files`` files each.

    Returns the folder holding ``original/``, ``syn1/``.. and ``sd2011.schema.json``.
    """
    data = write_scaled(folder, "sd2011", rows, n_synthetic, file_rows=-(-rows // files))
    return data.folder
