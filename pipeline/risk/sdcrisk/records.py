"""sdcMicro-shaped objects with per-record values (the Python API's returns), mapped from a
file's tables: each record takes the values of its key combination (pure pandas merges)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from pipeline.data.schema import Schema
from pipeline.risk.sdcrisk.assemble import DIS_SCORE, RISK, SCORE, FileRisk, N
from pipeline.risk.sdcrisk.frequencies import FK, FK_WEIGHTED, per_record
from pipeline.risk.sdcrisk.individual import household_risk
from pipeline.risk.sdcrisk.suda import integer_values


def _codes(frame: pd.DataFrame, schema: Schema, variables: Sequence[str]) -> pd.DataFrame:
    from pipeline.risk.sdcrisk.compute import code_columns

    return code_columns(frame, schema, variables).reset_index(drop=True)


@dataclass(frozen=True)
class FreqCalc:
    """sdcMicro ``freqCalc``: per record ``fk`` and ``Fk``; ``n1``/``n2`` records with fk 1 / 2."""

    keyVars: tuple[str, ...]
    fk: np.ndarray
    Fk: np.ndarray
    n1: int
    n2: int
    alpha: float
    weighted: bool


@dataclass(frozen=True)
class IndivRisk:
    """sdcMicro ``indivRisk``: per record risk ``rk`` (NaN method/qual when ``survey = FALSE``)."""

    rk: np.ndarray
    method: str | None
    qual: float | None
    fk: np.ndarray
    knames: tuple[str, ...]


@dataclass(frozen=True)
class MeasureRisk:
    """sdcMicro ``measure_risk``: ``Res`` (risk, fk, Fk[, hier_risk] per record) and the globals."""

    Res: pd.DataFrame
    global_risk: float
    global_risk_ER: float
    global_risk_pct: float
    global_threshold: float
    max_global_risk: float
    hier_risk: float | None = None
    hier_risk_ER: float | None = None
    hier_risk_pct: float | None = None


@dataclass(frozen=True)
class Suda2:
    """sdcMicro ``suda2``: per record scores and contributions, and the attribute tables."""

    score: np.ndarray
    disScore: np.ndarray
    contributionPercent: pd.DataFrame
    attribute_contributions: pd.DataFrame
    attribute_level_contributions: pd.DataFrame = field(repr=False)


def freq_calc(file: FileRisk, frame: pd.DataFrame, schema: Schema, alpha: float) -> FreqCalc:
    """Per-record frequencies of ``frame`` (the file ``file`` was computed from)."""
    keys = list(file.keys)
    got = per_record(_codes(frame, schema, keys), file.key_table)
    fk, big = got[FK].to_numpy(dtype=float), got[FK_WEIGHTED].to_numpy(dtype=float)
    return FreqCalc(file.keys, fk, big, int(np.sum(fk == 1)), int(np.sum(fk == 2)), alpha, file.weighted)


def measure_risk_records(
    file: FileRisk, frame: pd.DataFrame, schema: Schema, household: str | None, max_global_risk: float
) -> MeasureRisk:
    """sdcMicro's ``measure_risk`` object for ``frame``."""
    keys = list(file.keys)
    codes = _codes(frame, schema, [*keys, *([household] if household else [])])
    got = per_record(codes[keys], file.key_table)
    res = pd.DataFrame(
        {"risk": got[RISK].to_numpy(), "fk": got[FK].to_numpy(dtype=float), "Fk": got[FK_WEIGHTED].to_numpy()}
    )
    r = file.risk
    extra = {}
    if household is not None:
        res["hier_risk"] = household_risk(res["risk"].to_numpy(), codes[household].to_numpy())
        extra = {
            "hier_risk": r["hier_risk"],
            "hier_risk_ER": r["hier_risk_ER"],
            "hier_risk_pct": 100.0 * r["hier_risk"],
        }
    return MeasureRisk(
        res, r["global_risk"], r["global_risk_ER"], r["global_risk_pct"], r["threshold"], max_global_risk, **extra
    )


def ldiversity_records(file: FileRisk, frame: pd.DataFrame, schema: Schema, sensitive: Sequence[str]) -> pd.DataFrame:
    """sdcMicro's ``ldiversity`` matrix for ``frame`` (one row per record)."""
    assert file.ldiversity is not None
    columns = [*file.keys, *sensitive]
    got = _codes(frame, schema, columns).merge(file.ldiversity.drop(columns=[N]), on=columns, how="left", sort=False)
    return got.drop(columns=columns)


def suda_records(file: FileRisk, frame: pd.DataFrame, schema: Schema) -> Suda2:
    """sdcMicro's ``suda2`` object for ``frame``."""
    assert file.suda is not None and file.suda_contributions is not None and file.suda_level_contributions is not None
    keys = list(file.keys)
    codes = _codes(frame, schema, keys)
    ints = pd.DataFrame(integer_values(codes, keys)[:, : len(keys)].astype(float), columns=keys).where(
        codes.notna().to_numpy()
    )
    got = ints.merge(file.suda, on=keys, how="left", sort=False)
    contribution = got[[f"{k}_contribution" for k in keys]]
    attribute = pd.DataFrame({"variable": keys, "contribution": file.suda_contributions.to_numpy()})
    levels = file.suda_level_contributions.copy()
    levels["attribute"] = [_level_label(schema, v, c) for v, c in zip(levels["variable"], levels["level"], strict=True)]
    return Suda2(
        got[SCORE].to_numpy(),
        got[DIS_SCORE].to_numpy(),
        contribution,
        attribute,
        levels[["variable", "attribute", "contribution"]],
    )


def _level_label(schema: Schema, variable: str, code: float) -> str | float:
    """A factor's level label, or the number itself (as R's sort(unique(x)) shows them)."""
    levels = schema[variable].levels
    return levels[int(code) - 1] if levels else float(code)


__all__ = [
    "FreqCalc",
    "IndivRisk",
    "MeasureRisk",
    "Suda2",
    "freq_calc",
    "ldiversity_records",
    "measure_risk_records",
    "suda_records",
]
