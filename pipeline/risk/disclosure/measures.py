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
from pipeline.risk.disclosure.options import NEXCLUSION_COLUMNS, TABLES, DisclosureOptions
from pipeline.risk.disclosure.result import (
    ATTRIB_COLUMNS,
    CAP_COLUMNS,
    CHECK_1WAY_COLUMNS,
    CHECK_2WAY_COLUMNS,
    IDENT_COLUMNS,
    DisclosureResult,
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


def _original_key_target_counts(summary: Summary) -> tuple[dict, dict]:
    """Original records per (key, key level) and per (key, key level, target level)."""
    rows = _rows(summary, 0, Stat.GT_KT)
    per_cell = dict(zip(zip(rows.a.tolist(), rows.b.tolist(), rows.c.tolist(), strict=True), rows.value.tolist(),
                        strict=True))
    levels = pd.Series(rows.value).groupby([rows.a, rows.b]).sum()
    return dict(zip(levels.index.tolist(), levels.tolist(), strict=True)), per_cell


def _check_2way(
    summary: Summary, j: int, keys: Sequence[str], coders: Mapping[str, Coder], target: Coder,
    thresh: tuple[float, float], original_counts: dict,
) -> pd.DataFrame | None:
    pairs = _rows(summary, j, Stat.PAIRS)
    if not len(pairs.value):
        return None
    if not original_counts:  # built once, and only when some cell is large enough to be checked
        original_counts["levels"], original_counts["cells"] = _original_key_target_counts(summary)
    per_level, per_cell = original_counts["levels"], original_counts["cells"]
    built = []
    for i, key in enumerate(keys):  # synthpop builds the pairs key by key, labels sorted
        labels = coders[key].labels
        mine = pairs.a == i
        per_label: dict[str, list[int]] = {}
        for v, t, n in zip(pairs.b[mine].tolist(), pairs.c[mine].tolist(), pairs.value[mine].tolist(), strict=True):
            per_label.setdefault(f"{target.labels[t]}|{labels[v]}", [v, t, 0])[2] += n
        for label in sorted(per_label):
            v, t, n = per_label[label]
            total, with_target = per_level.get((i, v), 0), per_cell.get((i, v, t), 0)
            built.append((label, n, key, with_target, total, with_target * 100 / total))
    table = pd.DataFrame(built, columns=list(CHECK_2WAY_COLUMNS), index=pd.RangeIndex(1, len(built) + 1))
    table = table.sort_values("npairs", ascending=False, kind="stable")
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
    ident, attrib, caps, nexcl, check_1way, check_2way = [], [], [], [], [], []
    check1 = check2 = ""
    original_counts: dict = {}
    for j in range(1, m + 1):
        n_syn = _scalar(summary, j, Stat.N_ROWS)
        ex = _nexclusions(summary, j)
        nexcl.append(ex)
        remaining = ex["remaining"]
        ident.append([uio, _scalar(summary, j, Stat.UIS) / n_syn * 100,
                      _scalar(summary, j, Stat.UIOIS) / n_orig * 100, _scalar(summary, j, Stat.REPU) / n_orig * 100])
        nnz = _scalar(summary, j, Stat.NNZ_DISCO)
        attrib.append([
            remaining["Dorig"] / n_orig * 100, remaining["Dsyn"] / n_syn * 100, remaining["iS"] / n_orig * 100,
            remaining["DiS"] / n_orig * 100, remaining["DiSCO"] / n_orig * 100, remaining["DiSDiO"] / n_orig * 100,
            _scalar(summary, j, Stat.MAX_DISCO), remaining["DiSCO"] / nnz if nnz else math.nan,
        ])
        tcap_den = _scalar(summary, j, Stat.TCAP_DEN)
        caps.append([
            base_capd, capd, _ratio_sum(summary, j, Stat.CAPS) / n_syn * 100,
            _ratio_sum(summary, j, Stat.DCAP) / n_orig * 100,
            remaining["DiSCO"] / tcap_den * 100 if tcap_den else math.nan,
        ])
        one = _check_1way(summary, j, target, options.thresh_1way)
        if one is not None:
            check1 = f"Check  {options.target}  level  {one['Level'].iloc[0]}"
        two = _check_2way(summary, j, keys, coders, target, options.thresh_2way, original_counts)
        if two is not None:
            check2 = f"{len(two)} pairs need checks"
        check_1way.append(one)
        check_2way.append(two)
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
    )
