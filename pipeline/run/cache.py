"""What running a unit gives (:class:`UnitOutput`) and the caches under ``<out>/.units``.

* a measure unit: ``<fingerprint>.parquet`` (its rows) + ``<fingerprint>.json`` (summary and
  seconds, written last: the unit is complete);
* a synthesis unit: ``synthesis/<fingerprint>/`` with ``release/`` (the m sets as Parquet, the
  released margins, the report), ``rows.parquet`` and ``summary.json`` (written last).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from pipeline.data.dataset import Dataset, read_dataset
from pipeline.data.schema import Schema
from pipeline.results import atomic_write_parquet, atomic_write_text, json_text
from pipeline.synth.base import SynthesisOutput
from pipeline.tasks import SynthesisUnit, Unit


@dataclass(frozen=True)
class UnitOutput:
    """What running a unit gives: its rows, its public summary, seconds, whether it came from the
    cache, and the warnings it raised (:mod:`pipeline.notices`; kept in the cache with it)."""

    table: pd.DataFrame
    summary: dict[str, Any]
    seconds: float
    cached: bool = False
    warnings: tuple[str, ...] = ()


def unit_paths(cache: Path, unit: Unit) -> tuple[Path, Path]:
    return cache / f"{unit.fingerprint}.parquet", cache / f"{unit.fingerprint}.json"


def synthesis_folder(cache: Path, unit: SynthesisUnit) -> Path:
    """Where a synthesis unit's output is cached."""
    return cache / "synthesis" / unit.fingerprint


def synthesis_paths(cache: Path, unit: SynthesisUnit) -> tuple[Path, Path]:
    folder = synthesis_folder(cache, unit)
    return folder / "rows.parquet", folder / "summary.json"


def cached_output(table_path: Path, summary_path: Path) -> UnitOutput | None:
    """A finished unit's output from the cache (its summary is written last), else None."""
    if table_path.exists() and summary_path.exists():
        cached = json.loads(summary_path.read_text(encoding="utf-8"))
        return UnitOutput(
            pd.read_parquet(table_path),
            cached["summary"],
            cached["seconds"],
            cached=True,
            warnings=tuple(cached.get("warnings", ())),
        )
    return None


def is_cached(paths: tuple[Path, Path]) -> bool:
    """Whether a unit's cache (its table and summary paths) holds its finished output."""
    return all(p.exists() for p in paths)


def cached_outputs(
    syntheses: Sequence[SynthesisUnit], units: Sequence[Unit], cache: Path
) -> tuple[dict[tuple[str, str, int], UnitOutput], dict[int, UnitOutput]] | None:
    """Every unit's cached output — the syntheses' by key, the measure units' by index — or None
    when any unit (a synthesis or a measure unit) has not finished yet."""
    if not all(is_cached(synthesis_paths(cache, s)) for s in syntheses) or not all(
        is_cached(unit_paths(cache, u)) for u in units
    ):
        return None
    found = {s.key: cached_output(*synthesis_paths(cache, s)) for s in syntheses}
    evaluated = {u.index: cached_output(*unit_paths(cache, u)) for u in units}
    if any(o is None for o in [*found.values(), *evaluated.values()]):  # removed since (another process)
        return None
    return {k: o for k, o in found.items() if o is not None}, {i: o for i, o in evaluated.items() if o is not None}


def store_output(output: UnitOutput, table_path: Path, summary_path: Path) -> UnitOutput:
    """Cache a unit's table and summary (the summary last: the unit is complete)."""
    atomic_write_parquet(output.table, table_path)
    kept = {"summary": output.summary, "seconds": output.seconds, "warnings": list(output.warnings)}
    atomic_write_text(json_text(kept), summary_path)
    return replace(output, cached=False)


def store_synthesis(unit: SynthesisUnit, result: SynthesisOutput, output: UnitOutput, cache: Path) -> UnitOutput:
    """Cache a synthesis: its release (always with Parquet sets: the measure units read them
    back), then its rows and, last, its summary."""
    formats = ["parquet", *unit.params.output_format]
    result.write(synthesis_folder(cache, unit) / "release", overwrite=True, formats=formats)
    return store_output(output, *synthesis_paths(cache, unit))


def synthesised_frames(unit: SynthesisUnit, cache: Path) -> list[pd.DataFrame]:
    """The m synthetic sets of a finished synthesis unit as pandas frames in their schema, read
    straight from the cached Parquet files (the same frames as :func:`synthesised_sets` computed:
    a repetition group's sets are small and a Dask read costs ~8x a direct one per set)."""
    return [
        Schema.from_json(p.with_name(f"{p.stem}.schema.json")).apply(pd.read_parquet(p), str(p))
        for p in _set_paths(unit, cache)
    ]


def synthesised_sets(unit: SynthesisUnit, cache: Path) -> list[Dataset]:
    """The m synthetic sets of a finished synthesis unit, read back from its cached Parquet files
    (with the synthesised schema written beside them)."""
    return [read_dataset(p, name=f"{unit.source}_{i + 1}") for i, p in enumerate(_set_paths(unit, cache))]


def _set_paths(unit: SynthesisUnit, cache: Path) -> list[Path]:
    """The cached Parquet files of a synthesis unit's m sets (each with its schema beside it)."""
    synthetic = synthesis_folder(cache, unit) / "release" / "synthetic"
    return [synthetic / f"syn{i + 1}.parquet" for i in range(unit.synthesiser.m)]
