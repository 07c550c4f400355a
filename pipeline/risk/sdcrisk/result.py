"""Result of ``sdc_risk``: sdcMicro's risk measures of the original and of every synthetic set.

Rows carry params ``{"keys": [...]}`` plus what the value depends on (``{"k": 3, "weighted":
true}``, ``{"sensitive": "ls"}``, ``{"variable": "age"}``, ``{"method": "IPF"}``).  Only
aggregates go into rows and summaries; per-record values come from the Python API
(:mod:`pipeline.risk.sdcrisk.api`), which maps each record to its key combination's values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from pipeline.evaluation.base import Result, Row
from pipeline.risk.sdcrisk.assemble import DIS_SCORE, SCORE, FileRisk, N
from pipeline.risk.sdcrisk.frequencies import FK

#: the rows of the risk figures (name in the results table -> FileRisk.risk key)
RISK_ROWS = {
    "global_risk": "global_risk",
    "expected_reidentifications": "global_risk_ER",
    "risk_threshold": "threshold",
    "sample_uniques": "n1",
    "sample_pairs": "n2",
    "household_risk": "hier_risk",
    "household_expected_reidentifications": "hier_risk_ER",
}
#: the l-diversity columns summarised per sensitive variable
LDIVERSITY_KINDS = ("Distinct", "Entropy", "Recursive")


def _weighted_mean(values: np.ndarray, counts: np.ndarray) -> float:
    ok = ~np.isnan(values)
    return float(np.sum(values[ok] * counts[ok]) / np.sum(counts[ok])) if ok.any() else float("nan")


@dataclass(frozen=True)
class SdcRiskResult(Result):
    """sdcMicro's risk measures of one key set for every file.

    Attributes
    ----------
    keys : tuple of str
    files : tuple of FileRisk
        The original first, then the synthetic sets 1..m.
    labels : tuple of str
        "original", "1".."m".
    """

    keys: tuple[str, ...]
    files: tuple[FileRisk, ...]
    labels: tuple[str, ...]

    @property
    def original(self) -> FileRisk:
        return self.files[0]

    def unique_matches(self, i: int) -> float:
        """Records of synthetic set ``i`` that are sample uniques (fk = 1) on a key combination
        that is a sample unique of the original too (complete keys only)."""
        syn, orig = self.files[i].key_table, self.original.key_table
        keys = list(self.keys)
        u_syn = syn[(syn[FK] == 1) & syn[keys].notna().all(axis=1)][keys]
        u_orig = orig[(orig[FK] == 1) & orig[keys].notna().all(axis=1)][keys]
        return float(len(u_syn.merge(u_orig, on=keys, how="inner")))

    def file_rows(self, i: int) -> list[Row]:
        """The rows of one file."""
        f, label = self.files[i], self.labels[i]
        base: dict[str, Any] = {"keys": list(self.keys)}
        rows = [Row(label, "records", float(f.records), base)]
        rows += [Row(label, name, float(f.risk[key]), base) for name, key in RISK_ROWS.items() if key in f.risk]
        for (k, weighted), count in f.kanon.items():
            rows.append(Row(label, "kanon_violations", float(count), {**base, "k": k, "weighted": weighted}))
        if f.ldiversity is not None:
            rows += self._ldiversity_rows(f, label, base)
        if f.suda is not None:
            n = f.suda[N].to_numpy()
            score, dis = f.suda[SCORE].to_numpy(), f.suda[DIS_SCORE].to_numpy()
            rows += [
                Row(label, "suda_records", float(n[score > 0].sum()), base),
                Row(label, "suda_score_mean", float(np.sum(score * n) / n.sum()), base),
                Row(label, "suda_score_max", float(score.max(initial=0.0)), base),
                Row(label, "dis_suda_mean", float(np.sum(dis * n) / n.sum()), base),
                Row(label, "dis_suda_max", float(dis.max(initial=0.0)), base),
            ]
            contributions = f.suda_contributions if f.suda_contributions is not None else pd.Series(dtype=float)
            rows += [
                Row(label, "suda_contribution", float(v), {**base, "variable": str(var)})
                for var, v in contributions.items()
            ]
        for m in f.model:
            p = {**base, "method": m.method}
            rows += [Row(label, "modrisk_gr1", m.gr1, p), Row(label, "modrisk_gr2", m.gr2, p)]
        if i > 0:
            matches = self.unique_matches(i)
            rows.append(Row(label, "uniques_matching_original_uniques_pct", 100.0 * matches / f.records, base))
        return rows

    @staticmethod
    def _ldiversity_rows(f: FileRisk, label: str, base: dict[str, Any]) -> list[Row]:
        table = f.ldiversity
        assert table is not None
        n = table[N].to_numpy()
        rows = []
        sensitive = [c[: -len("_Distinct_Ldiversity")] for c in table.columns if c.endswith("_Distinct_Ldiversity")]
        for s in sensitive:
            p = {**base, "sensitive": s}
            distinct = table[f"{s}_Distinct_Ldiversity"].to_numpy()
            rows.append(Row(label, "ldiversity_distinct_min", float(np.nanmin(distinct)), p))
            rows.append(Row(label, "ldiversity_single_value_records", float(n[distinct == 1].sum()), p))
            for kind in LDIVERSITY_KINDS:
                values = table[f"{s}_{kind}_Ldiversity"].to_numpy()
                rows.append(Row(label, f"ldiversity_{kind.lower()}_mean", _weighted_mean(values, n), p))
        if "MultiEntropy_Ldiversity" in table:
            p = {**base, "sensitive": sensitive}
            rows.append(Row(label, "ldiversity_multi_entropy_min", float(table["MultiEntropy_Ldiversity"].min()), p))
            rows.append(
                Row(label, "ldiversity_multi_recursive_min", float(table["MultiRecursive_Ldiversity"].min()), p)
            )
        return rows

    def rows(self) -> list[Row]:
        return [r for i in range(len(self.files)) for r in self.file_rows(i)]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"keys": list(self.keys), "files": {}}
        for i, label in enumerate(self.labels):
            f = self.files[i]
            entry: dict[str, Any] = {"records": f.records, **{k: float(v) for k, v in f.risk.items()}}
            entry["kanon_violations"] = [{"k": k, "weighted": w, "records": c} for (k, w), c in f.kanon.items()]
            if f.suda_contributions is not None:
                entry["suda_contributions"] = {str(k): float(v) for k, v in f.suda_contributions.items()}
            if f.model:
                entry["modrisk"] = {
                    m.method: {"gr1": m.gr1, "gr2": m.gr2, "cells": m.cells, "converged": m.converged} for m in f.model
                }
            out["files"][label] = entry
        return out


__all__ = ["SdcRiskResult"]
