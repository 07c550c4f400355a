"""One file's sdcMicro risk measures from its table of counts (pure functions, no executor).

The input is a file's tally: the distinct combinations of keys, sensitive variables and
household id with record count ``n`` and weight sum ``w``
(:func:`~pipeline.risk.sdcrisk.compute.tally`).  Every measure is computed on tables summed
from it, each row standing for ``n`` records; per-record values are those of the record's row.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from pipeline.data.schema import Schema
from pipeline.risk.sdcrisk.diversity import ldiversity
from pipeline.risk.sdcrisk.frequencies import FK, FK_WEIGHTED, group_sum, matched_frequencies
from pipeline.risk.sdcrisk.individual import global_risk, household_risk, individual_risk, risk_threshold
from pipeline.risk.sdcrisk.modrisk import ModelRisk, model_risks
from pipeline.risk.sdcrisk.params import SdcRiskParams
from pipeline.risk.sdcrisk.suda import integer_values, suda2

N = "n"
W = "w"
W_INV = "w_inv"
RISK = "risk"
SCORE = "suda_score"
DIS_SCORE = "dis_suda_score"


@dataclass(frozen=True)
class FileRisk:
    """sdcMicro's risk measures of one file.

    Attributes
    ----------
    records : int
    keys : tuple of str
    weighted : bool
    key_table : DataFrame
        One row per distinct key combination (missing values kept): ``n`` records, ``fk``,
        ``Fk`` (after the missing-value matching) and the individual ``risk``.
    risk : dict
        ``global_risk``, ``global_risk_ER``, ``global_risk_pct``, ``threshold`` (NaN: sdcMicro's
        NA), ``n1``, ``n2``, and with a household id ``hier_risk``, ``hier_risk_ER``.
    kanon : dict
        ``(k, weighted) -> records violating k-anonymity``.
    ldiversity : DataFrame or None
        Per (keys, sensitive values) row: ``n`` and sdcMicro's l-diversity columns.
    suda : DataFrame or None
        Per distinct (integer) key combination: ``n``, the SUDA and DIS-SUDA scores and each
        variable's share of the score.
    suda_contributions : Series or None
        sdcMicro's ``attribute_contributions`` (percent per variable).
    suda_level_contributions : DataFrame or None
        sdcMicro's ``attribute_level_contributions`` (variable, level code, percent).
    model : tuple of ModelRisk
        modRisk's estimates per method.
    """

    records: int
    keys: tuple[str, ...]
    weighted: bool
    key_table: pd.DataFrame
    risk: dict[str, float]
    kanon: dict[tuple[int, bool], int]
    ldiversity: pd.DataFrame | None = None
    suda: pd.DataFrame | None = None
    suda_contributions: pd.Series | None = None
    suda_level_contributions: pd.DataFrame | None = None
    model: tuple[ModelRisk, ...] = field(default=())


def _sum_by(table: pd.DataFrame, columns: list[str], values: list[str]) -> pd.DataFrame:
    """``values`` summed per combination of ``columns`` (the tally itself when it has no other column)."""
    if set(columns) | set(values) | {N, W, W_INV} == set(table.columns):
        return table[[*columns, *values]]
    return group_sum(table, columns, values)


def key_risks(table: pd.DataFrame, keys: list[str], weighted: bool, alpha: float) -> pd.DataFrame:
    """The key table: per distinct key combination its records ``n``, ``fk``, ``Fk`` and ``risk``."""
    raw = _sum_by(table, keys, [N, W])
    matched = matched_frequencies(raw.assign(**{FK: raw[N], FK_WEIGHTED: raw[W]})[[*keys, FK, FK_WEIGHTED]], alpha)
    out = raw[[*keys, N]].assign(**{FK: matched[FK].to_numpy(), FK_WEIGHTED: matched[FK_WEIGHTED].to_numpy()})
    out[RISK] = individual_risk(out[FK].to_numpy(), out[FK_WEIGHTED].to_numpy(), weighted=weighted)
    return out


def suda_table(
    table: pd.DataFrame, keys: list[str], params: SdcRiskParams
) -> tuple[pd.DataFrame, pd.Series, pd.DataFrame]:
    """SUDA2 on the file's distinct integer key combinations, with sdcMicro's attribute and
    attribute-level contributions (percent of the file's total score)."""
    values = integer_values(table, keys)[:, : len(keys)].astype(float)
    coded = pd.DataFrame(values, columns=keys).where(~table[keys].isna().to_numpy())
    combos = _sum_by(coded.assign(**{N: table[N].to_numpy()}), keys, [N])
    got = suda2(
        combos,
        keys,
        dis_fraction=params.dis_fraction,
        original_scores=params.original_scores,
        max_size=params.missing_dimension,
    )
    out = combos.assign(**{SCORE: got.score, DIS_SCORE: got.dis_score})
    n = out[N].to_numpy()
    weighted_share = got.contribution.to_numpy() * (got.score * n)[:, None]
    total = float(np.sum(got.score * n))
    per_variable = pd.Series(100.0 * weighted_share.sum(axis=0) / total if total else np.nan, index=keys)
    levels = []
    for j, v in enumerate(keys):
        by_level = pd.Series(weighted_share[:, j]).groupby(out[v].to_numpy()).sum()
        column_total = weighted_share[:, j].sum()
        levels.append(
            pd.DataFrame(
                {"variable": v, "level": by_level.index, "contribution": 100.0 * by_level.to_numpy() / column_total}
            )
        )
    for v in keys:
        out[f"{v}_contribution"] = got.contribution[v].to_numpy()
    return out, per_variable, pd.concat(levels, ignore_index=True)


def file_risk(table: pd.DataFrame, params: SdcRiskParams, schema: Schema) -> FileRisk:
    """All of one file's measures from its tally (see the module docstring)."""
    keys = list(params.keys)
    weighted = params.weights is not None
    kt = key_risks(table, keys, weighted, params.alpha)
    n = kt[N].to_numpy()
    records = int(n.sum())
    risk = global_risk(kt[RISK].to_numpy(), counts=n)
    risk["threshold"] = risk_threshold(kt[RISK].to_numpy(), params.max_global_risk, counts=n)
    risk["n1"] = float(n[kt[FK].to_numpy() == 1].sum())
    risk["n2"] = float(n[kt[FK].to_numpy() == 2].sum())
    kanon = {}
    for k in params.k:
        kanon[(k, False)] = int(n[kt[FK].to_numpy() < round(k)].sum())
        if weighted:
            kanon[(k, True)] = int(n[kt[FK_WEIGHTED].to_numpy() < round(k)].sum())
    if params.household is not None:
        hh = _sum_by(table, [params.household, *keys], [N])
        hh = hh.merge(kt[[*keys, RISK]], on=keys, how="left", sort=False)
        per_row = household_risk(hh[RISK].to_numpy(), hh[params.household].to_numpy(), counts=hh[N].to_numpy())
        hier_er = float(np.nansum(per_row * hh[N].to_numpy()))
        risk["hier_risk_ER"], risk["hier_risk"] = hier_er, hier_er / records
    ldiv = None
    if params.sensitive:
        lt = _sum_by(table, [*keys, *params.sensitive], [N])
        ldiv = pd.concat([lt, ldiversity(lt, keys, params.sensitive, params.l_recurs_c)], axis=1)
    suda = contributions = level_contributions = None
    if params.suda:
        suda, contributions, level_contributions = suda_table(table, keys, params)
    model = ()
    if params.modrisk:
        model = model_risks(_sum_by(table, keys, [N, W, W_INV]), keys, params.modrisk, schema, params.bound)
    return FileRisk(
        records, tuple(keys), weighted, kt, risk, kanon, ldiv, suda, contributions, level_contributions, model
    )


__all__ = ["DIS_SCORE", "RISK", "SCORE", "FileRisk", "file_risk", "key_risks", "suda_table"]
