"""From combined block statistics to synthpop's measures, flags and exclusion counts.

Every measure is a ratio of exact integer counts (spec §5–§9); they are divided here in the
same order of operations as synthpop (``count / N * 100``), so results match R to the last
bits where R's own arithmetic is exact.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from pipeline.risk.disclosure.coding import Coder
from pipeline.risk.disclosure.kernel import T_DORIG, T_ORIGINAL, TOTAL_STEP, Stat, StatRows
from pipeline.risk.disclosure.params import (
    ATTRIB_MEASURES,
    IDENT_MEASURES,
    NEXCLUSION_COLUMNS,
    TABLES,
    DisclosureOptions,
)
from pipeline.risk.disclosure.result import (
    ATTRIB_COLUMNS,
    CAP_COLUMNS,
    CHECK_1WAY_COLUMNS,
    CHECK_2WAY_COLUMNS,
    IDENT_COLUMNS,
    SAME_COUNT_COLUMNS,
    DisclosureResult,
    MultiDisclosureResult,
)

Summary = Mapping[tuple[int, int], StatRows]
_NONE = np.zeros(0, dtype=np.int64)
_EMPTY = StatRows(_NONE, _NONE, _NONE, _NONE)


def _rows(summary: Summary, set_: int, stat: Stat) -> StatRows:
    return summary.get((set_, int(stat)), _EMPTY)


def _scalar(summary: Summary, set_: int, stat: Stat) -> int:
    return int(_rows(summary, set_, stat).value.sum())


def _by_code(summary: Summary, set_: int, stat: Stat) -> dict[int, int]:
    rows = _rows(summary, set_, stat)
    return dict(zip(rows.a.tolist(), rows.value.tolist(), strict=True))


def _ratio_sum(summary: Summary, set_: int, stat: Stat) -> float:
    """Sum over key groups of numerator/denominator, from the (a, b) -> count histogram."""
    rows = _rows(summary, set_, stat)
    return math.fsum((rows.value * (rows.a / rows.b)).tolist())


def _nexclusions(summary: Summary, j: int) -> pd.DataFrame:
    out = np.zeros((len(TABLES), len(NEXCLUSION_COLUMNS)), dtype=np.int64)
    counts = {}
    for set_ in (0, j):
        rows = _rows(summary, set_, Stat.NEXCL)
        counts[set_] = dict(zip(zip(rows.a.tolist(), rows.b.tolist(), strict=True), rows.value.tolist(), strict=True))
    for table in range(len(TABLES)):
        by_step = counts[0 if table in (T_ORIGINAL, T_DORIG) else j]
        removed = [by_step.get((table, step), 0) for step in range(TOTAL_STEP)]
        out[table, :TOTAL_STEP] = removed
        out[table, TOTAL_STEP] = by_step.get((table, TOTAL_STEP), 0) - sum(removed)
    return pd.DataFrame(out, index=list(TABLES), columns=list(NEXCLUSION_COLUMNS))


def _r_row_order(target: Coder, j: int) -> list[int]:
    """Target codes in the row order of synthpop's excluded DiSCO table for synthetic set j.

    synthpop keeps the original factor's level order unless the synthetic factor has a level
    the original lacks; then the padded table is re-sorted by label.
    """
    original, synthetic = target.r_levels[0], target.r_levels[j]
    if set(synthetic) - set(original):
        return sorted(set(original) | set(synthetic), key=lambda c: target.labels[c])
    return list(original)


def _check_1way(summary: Summary, j: int, target: Coder, thresh: tuple[float, float]) -> pd.DataFrame | None:
    n_dis = _by_code(summary, j, Stat.DISCO_T)
    rows = _r_row_order(target, j)
    total = sum(n_dis.values())
    level = max(rows, key=lambda c: n_dis.get(c, 0))  # first of the largest, in row order
    n_level = n_dis.get(level, 0)
    pct_dis = n_level / total * 100 if total else math.nan
    if not (n_level > thresh[0] and pct_dis > thresh[1]):
        return None
    remaining = _by_code(summary, 0, Stat.GT_T_EXCL)
    all_records = sum(remaining.values())
    return pd.DataFrame(
        [[target.labels[level], all_records, remaining.get(level, 0) / all_records * 100, total, n_level, pct_dis]],
        columns=list(CHECK_1WAY_COLUMNS),
    )


class _OriginalKeyTarget:
    """Original records per (key, key level) and per (key, key level, target level), looked up vectorised."""

    def __init__(self, summary: Summary) -> None:
        rows = _rows(summary, 0, Stat.GT_KT)  # sorted by (a, b, c)
        self.width = (int(rows.b.max()) + 1 if len(rows.b) else 1, int(rows.c.max()) + 1 if len(rows.c) else 1)
        self.cell = (rows.a * self.width[0] + rows.b) * self.width[1] + rows.c
        self.count = rows.value
        level = rows.a * self.width[0] + rows.b
        starts = np.flatnonzero(np.r_[True, level[1:] != level[:-1]]) if len(level) else level
        self.level, self.level_total = level[starts], np.add.reduceat(rows.value, starts) if len(starts) else level

    @staticmethod
    def _find(sorted_keys: np.ndarray, values: np.ndarray, wanted: np.ndarray) -> np.ndarray:
        pos = np.searchsorted(sorted_keys, wanted).clip(0, max(len(sorted_keys) - 1, 0))
        found = sorted_keys[pos] == wanted if len(sorted_keys) else np.zeros(len(wanted), dtype=bool)
        return np.where(found, values[pos] if len(values) else 0, 0)

    def totals(self, key: np.ndarray, level: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(records with the key level, records with the key level and the target level)."""
        lv = key * self.width[0] + level
        return self._find(self.level, self.level_total, lv), self._find(
            self.cell, self.count, lv * self.width[1] + target
        )


def _check_2way(
    summary: Summary,
    j: int,
    keys: Sequence[str],
    coders: Mapping[str, Coder],
    target: Coder,
    thresh: tuple[float, float],
    original: list,
) -> pd.DataFrame | None:
    pairs = _rows(summary, j, Stat.PAIRS)
    if not len(pairs.value):
        return None
    if not original:  # built once, and only when some cell is large enough to be checked
        original.append(_OriginalKeyTarget(summary))
    key_total, key_target_total = original[0].totals(pairs.a, pairs.b, pairs.c)
    found = pd.DataFrame(
        {
            "key_index": pairs.a,
            "label": [
                f"{target.labels[t]}|{coders[keys[i]].labels[v]}"
                for i, v, t in zip(pairs.a.tolist(), pairs.b.tolist(), pairs.c.tolist(), strict=True)
            ],
            "npairs": pairs.value,
            "key_target_total": key_target_total,
            "key_total": key_total,
        }
    )
    # synthpop builds the pairs key by key, labels sorted (a label names one pair unless levels contain "|")
    found = found.groupby(["key_index", "label"], sort=True).agg(
        npairs=("npairs", "sum"), key_target_total=("key_target_total", "first"), key_total=("key_total", "first")
    )
    table = pd.DataFrame(
        {
            "target_key_levs": found.index.get_level_values("label"),
            "npairs": found["npairs"].to_numpy(),
            "key": [keys[i] for i in found.index.get_level_values("key_index")],
            "key_target_total": found["key_target_total"].to_numpy(),
            "key_total": found["key_total"].to_numpy(),
        },
        index=pd.RangeIndex(1, len(found) + 1),
    )
    table["PctTargetKeyLevel"] = table["key_target_total"] * 100 / table["key_total"]
    table = table[list(CHECK_2WAY_COLUMNS)].sort_values("npairs", ascending=False, kind="stable")
    flagged = table[table["PctTargetKeyLevel"] > thresh[1]]
    return flagged if len(flagged) else None


def build_result(
    summary: Summary,
    m: int,
    keys: Sequence[str],
    coders: Mapping[str, Coder],
    options: DisclosureOptions,
) -> DisclosureResult:
    """The :class:`DisclosureResult` of one target from the combined statistics."""
    target = coders[options.target]
    n_orig = _scalar(summary, 0, Stat.N_ROWS)
    margin = _by_code(summary, 0, Stat.GT_T)
    base_capd = math.fsum((np.array(list(margin.values()), dtype=np.float64) / n_orig) ** 2) * 100
    capd = _ratio_sum(summary, 0, Stat.CAPD) / n_orig * 100
    uio = _scalar(summary, 0, Stat.UIO) / n_orig * 100
    ident, attrib, caps, nexcl, check_1way, check_2way, same = [], [], [], [], [], [], []
    check1 = check2 = ""
    original_counts: list = []
    for j in range(1, m + 1):
        n_syn = _scalar(summary, j, Stat.N_ROWS)
        ex = _nexclusions(summary, j)
        nexcl.append(ex)
        remaining = ex["remaining"]
        ident.append(
            [
                uio,
                _scalar(summary, j, Stat.UIS) / n_syn * 100,
                _scalar(summary, j, Stat.UIOIS) / n_orig * 100,
                _scalar(summary, j, Stat.REPU) / n_orig * 100,
            ]
        )
        nnz = _scalar(summary, j, Stat.NNZ_DISCO)
        attrib.append(
            [
                remaining["Dorig"] / n_orig * 100,
                remaining["Dsyn"] / n_syn * 100,
                remaining["iS"] / n_orig * 100,
                remaining["DiS"] / n_orig * 100,
                remaining["DiSCO"] / n_orig * 100,
                remaining["DiSDiO"] / n_orig * 100,
                _scalar(summary, j, Stat.MAX_DISCO),
                remaining["DiSCO"] / nnz if nnz else math.nan,
            ]
        )
        tcap_den = _scalar(summary, j, Stat.TCAP_DEN)
        caps.append(
            [
                base_capd,
                capd,
                _ratio_sum(summary, j, Stat.CAPS) / n_syn * 100,
                _ratio_sum(summary, j, Stat.DCAP) / n_orig * 100,
                remaining["DiSCO"] / tcap_den * 100 if tcap_den else math.nan,
            ]
        )
        one = _check_1way(summary, j, target, options.thresh_1way)
        if one is not None:
            check1 = f"Check  {options.target}  level  {one['Level'].iloc[0]}"
        two = _check_2way(summary, j, keys, coders, target, options.thresh_2way, original_counts)
        if two is not None:
            check2 = f"{len(two)} pairs need checks"
        check_1way.append(one)
        check_2way.append(two)
        same.append([_scalar(summary, j, Stat.KEYS_DIFFER) == 0, _scalar(summary, j, Stat.CELLS_DIFFER) == 0])
    index = pd.RangeIndex(1, m + 1)
    return DisclosureResult(
        keys=tuple(keys),
        target=options.target,
        Norig=n_orig,
        ident=pd.DataFrame(ident, columns=list(IDENT_COLUMNS), index=index),
        attrib=pd.DataFrame(attrib, columns=list(ATTRIB_COLUMNS), index=index).astype({"max_denom": np.int64}),
        allCAPs=pd.DataFrame(caps, columns=list(CAP_COLUMNS), index=index),
        check_1way=tuple(check_1way),
        check1=check1,
        check_2way=tuple(check_2way),
        check2=check2,
        Nexclusions=tuple(nexcl),
        options=options,
        same_counts=pd.DataFrame(same, columns=list(SAME_COUNT_COLUMNS), index=index),
    )


def multi_result(results: Mapping[str, DisclosureResult], ident_meas: str, attrib_meas: str) -> MultiDisclosureResult:
    """synthpop ``multi.disclosure``'s summary of the results of several targets (one key set).

    ``ident_syn`` and ``attrib_syn`` are means over all m synthetic sets (synthpop's
    ``ident.syn`` is the first set's only, spec §12).
    """
    ident_col, orig_col = IDENT_MEASURES[ident_meas], ATTRIB_MEASURES[attrib_meas]

    def mean(values: pd.Series) -> float:
        return math.fsum(values.tolist()) / len(values)

    ident_rows, attrib_rows = [], []
    for t, r in results.items():
        table = r.measures()
        ident_rows.append((t, mean(table["UiO"]), mean(table[ident_col])))
        last_pairs = next((len(c) for c in reversed(r.check_2way) if c is not None), 0)
        attrib_rows.append((t, mean(table[orig_col]), mean(table[attrib_meas]), r.check1, last_pairs, r.check2))
    ident_table = pd.DataFrame(ident_rows, columns=["target", "ident_orig", "ident_syn"]).set_index("target")
    attrib = pd.DataFrame(attrib_rows, columns=["target", "attrib_orig", "attrib_syn", "check1", "Npairs", "check2"])
    attrib = attrib.sort_values("attrib_syn", kind="stable").reset_index(drop=True)
    width = len(str(len(attrib)))
    suffix = np.select(
        [(attrib["check1"] != "") & (attrib["check2"] != ""), attrib["check2"] != "", attrib["check1"] != ""],
        [" 1&2way checks", " 2way checks", " 1way checks"],
        default="",
    )
    attrib.index = [f"{i + 1:0{width}d} {t}{s}" for i, (t, s) in enumerate(zip(attrib["target"], suffix, strict=True))]
    first = next(iter(results.values()))
    return MultiDisclosureResult(
        keys=first.keys,
        Norig=first.Norig,
        m=first.m,
        ident_meas=ident_col,
        attrib_meas=attrib_meas,
        ident_table=ident_table,
        attrib_table=attrib,
        results=dict(results),
    )
