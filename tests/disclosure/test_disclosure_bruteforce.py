"""Random data and options against a direct dense-table transcription of synthpop's algorithm.

The reference below follows R/disclosure.R step by step with full ``t x q`` tables (aligned
by label), independently of the block kernel; the measures must agree to 1e-9 and the
exclusion counts exactly.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pipeline.risk.disclosure import disclosure


def _tables(frame: pd.DataFrame, keys: list[str], target: str) -> pd.DataFrame:
    q = frame[keys].astype(object).fillna("Missing").astype(str).agg(" | ".join, axis=1)
    t = frame[target].astype(object).fillna("Missing").astype(str)
    return pd.crosstab(t, q)


def _exclude(x: pd.DataFrame, opts: dict, keys: list[str], gt_has_missing_target: bool) -> tuple[pd.DataFrame, list]:
    x = x.copy()
    total = int(x.values.sum())
    out = [0] * 5
    rows, cols = x.index, x.columns
    parts = np.array([c.split(" | ") for c in cols]) if len(cols) else np.zeros((0, len(keys)))
    if opts.get("not_targetlev"):
        m = rows.isin([opts["not_targetlev"]])
        out[0] = int(x.loc[m].values.sum())
        x.loc[m] = 0
    if not opts.get("usetargetNA", True) and gt_has_missing_target:
        m = rows == "Missing"
        out[1] = int(x.loc[m].values.sum())
        x.loc[m] = 0
    for i, k in enumerate(keys):
        if not opts.get("usekeysNA", {}).get(k, True):
            m = parts[:, i] == "Missing"
            out[2] += int(x.loc[:, m].values.sum())
            x.loc[:, m] = 0
    for k, kl, tl in zip(
        opts.get("exclude_keys", []), opts.get("exclude_keylevs", []), opts.get("exclude_targetlevs", []), strict=True
    ):
        m = parts[:, keys.index(k)] == kl
        r = rows == tl
        out[3] += int(x.loc[r, m].values.sum())
        x.loc[r, m] = 0
    if opts.get("exclude_ov_denom_lim"):
        over = x > opts.get("denom_lim", 5)
        out[4] = int(x.values[over.values].sum())
        x = x.mask(over, 0)
    return x, [*out, total - sum(out)]


def _reference(gt: pd.DataFrame, sd: pd.DataFrame, keys: list[str], target: str, opts: dict) -> tuple[dict, list]:
    d, s = _tables(gt, keys, target), _tables(sd, keys, target)
    rows = sorted(set(d.index) | set(s.index))
    cols = sorted(set(d.columns) | set(s.columns))
    d, s = d.reindex(index=rows, columns=cols, fill_value=0), s.reindex(index=rows, columns=cols, fill_value=0)
    nd, ns = len(gt), len(sd)
    pd_, ps_ = d / d.sum().replace(0, np.nan), s / s.sum().replace(0, np.nan)
    pd1, ps1 = (pd_ == 1), (ps_ == 1)
    in_s = s.sum() > 0
    tables = {
        "original": d,
        "synthetic": s,
        "Dorig": d.where(pd1, 0),
        "Dsyn": s.where(ps1, 0),
        "iS": d.where(np.broadcast_to(in_s.values, d.shape), 0),
        "DiS": d.where(np.broadcast_to(ps1.any().values, d.shape), 0),
        "DiSCO": d.where(ps1, 0),
        "DiSDiO": d.where(ps1 & pd1, 0),
    }
    gt_missing = bool(gt[target].isna().any())
    ex, nex = {}, []
    for name, table in tables.items():
        ex[name], counts = _exclude(table, opts, keys, gt_missing)
        nex.append(counts)
    dq, sq = ex["original"].sum(), ex["synthetic"].sum()
    keys_in_s = set(s.columns[s.sum() > 0])
    pdx, psx = ex["original"] / dq.replace(0, np.nan), ex["synthetic"] / sq.replace(0, np.nan)
    disco = ex["DiSCO"].values
    td = d.sum(axis=1)
    out = {
        "UiO": (dq == 1).sum() / nd * 100,
        "UiS": (sq == 1).sum() / ns * 100,
        "UiOiS": ((dq == 1) & dq.index.isin(keys_in_s)).sum() / nd * 100,
        "repU": ((dq == 1) & (sq == 1)).sum() / nd * 100,
        "Dorig": ex["Dorig"].values.sum() / nd * 100,
        "Dsyn": ex["Dsyn"].values.sum() / ns * 100,
        "iS": ex["iS"].values.sum() / nd * 100,
        "DiS": ex["DiS"].values.sum() / nd * 100,
        "DiSCO": disco.sum() / nd * 100,
        "DiSDiO": ex["DiSDiO"].values.sum() / nd * 100,
        "max_denom": disco.max(),
        "mean_denom": disco[disco > 0].mean() if (disco > 0).any() else np.nan,
        "baseCAPd": ((td / nd) ** 2).sum() * 100,
        "CAPd": ((pdx**2).sum() * dq).sum() / nd * 100,
        "CAPs": ((psx**2).sum() * sq).sum() / ns * 100,
        "DCAP": (psx.fillna(0) * ex["original"]).values.sum() / nd * 100,
        "TCAP": disco.sum() / dq[sq > 0].sum() * 100 if dq[sq > 0].sum() else np.nan,
    }
    return out, nex


def _random_data(rng: np.random.Generator, n: int) -> pd.DataFrame:
    def cat(levels, p_missing):
        v = rng.choice(levels, n).astype(object)
        v[rng.random(n) < p_missing] = None
        return pd.Categorical(v, categories=levels)

    return pd.DataFrame(
        {
            "a": cat(["x", "y"], 0.0),
            "b": cat(["p", "q", "r"], 0.08),
            "c": cat(["u", "v", "w"], 0.05),
            "t": cat(["t1", "t2", "t3"], 0.1),
        }
    )


@pytest.mark.parametrize("seed", range(12))
def test_kernel_agrees_with_dense_transcription(seed: int) -> None:
    rng = np.random.default_rng(seed)
    gt = _random_data(rng, int(rng.integers(30, 120)))
    sd = _random_data(rng, int(rng.integers(30, 120)))
    keys = ["a", "b", "c"]
    opts: dict = {}
    if rng.random() < 0.5:
        opts["not_targetlev"] = str(rng.choice(["t1", "t2", "t3"]))
    if rng.random() < 0.5:
        opts["usetargetNA"] = False
    if rng.random() < 0.5:
        opts["usekeysNA"] = {k: bool(rng.random() < 0.5) for k in keys}
    if rng.random() < 0.5:
        opts.update(exclude_keys=["b", "c"], exclude_keylevs=["p", "w"], exclude_targetlevs=["t2", "t1"])
    if rng.random() < 0.5:
        opts.update(exclude_ov_denom_lim=True, denom_lim=int(rng.integers(1, 4)))
    expected, nex = _reference(gt, sd, keys, "t", opts)
    res = disclosure(gt, sd, keys, "t", **opts)
    got = res.measures().iloc[0]
    for name, value in expected.items():
        assert got[name] == pytest.approx(value, abs=1e-9, nan_ok=True), (name, opts)
    assert res.Nexclusions[0].to_numpy().tolist() == nex, opts
