"""l-diversity of sensitive variables within key groups (sdcMicro ``ldiversity``), as pure kernels.

Input is a count table: the distinct combinations of the keys and the sensitive variables with
their record counts ``n`` (:func:`~pipeline.risk.sdcrisk.frequencies.key_table` over keys and
sensitive variables together), so the measure is a sum over partitions plus this kernel.

sdcMicro's conventions (5.8.0, ``measure_risk_cpp``), kept here:

* a key group is the records with equal keys; a record with a missing key value is a group of its
  own (the C++ compares keys with ``!=``, and NaN differs from everything);
* a missing *sensitive* value (NaN) is a category of its own for every record that has it (the
  same comparison); a value equal to the ``missing`` code (-999) is counted apart and adds one
  category (and its share to the entropy) only when the group has another value;
* distinct l-diversity is the number of categories; entropy l-diversity is ``exp(entropy)``;
  recursive (c, l)-diversity is ``1 + #{j >= 1 : c * (r_j + ... + r_m) > r_1}`` for the category
  counts sorted down;
* with two or more sensitive variables, multi l-diversity: for each variable, the entropy and
  recursive l-diversity within each sub-group of equal other sensitive values (a record with a
  missing other value is a sub-group of its own), the smallest over sub-groups and variables; the
  multi entropy is single precision as in sdcMicro (``float``).

A group whose only values are the ``missing`` code has no recursive l-diversity (sdcMicro leaves
the previous group's value there); it is NaN here.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

#: the record count column of the input table
COUNT = "n"
_GROUP = "_group"


def _categories(groups: np.ndarray, values: np.ndarray, counts: np.ndarray, missing: float) -> pd.DataFrame:
    """One row per (group, category): its count; NaN values are one category per record and
    ``missing`` codes are flagged."""
    frame = pd.DataFrame({_GROUP: groups, "v": values, COUNT: counts})
    summed = frame.groupby([_GROUP, "v"], dropna=False, sort=False)[COUNT].sum().reset_index()
    nan = summed["v"].isna().to_numpy()
    singles = summed[nan]
    expanded = pd.DataFrame(
        {_GROUP: np.repeat(singles[_GROUP].to_numpy(), singles[COUNT].to_numpy()), COUNT: 1, "missing": False}
    )
    valued = summed[~nan]
    valued = pd.DataFrame(
        {
            _GROUP: valued[_GROUP].to_numpy(),
            COUNT: valued[COUNT].to_numpy(),
            "missing": valued["v"].to_numpy() == missing,
        }
    )
    return pd.concat([valued, expanded], ignore_index=True)


def _diversity(cats: pd.DataFrame, size: pd.Series, c: float) -> pd.DataFrame:
    """Distinct, entropy and recursive l-diversity per group from its categories and size."""
    present = cats[~cats["missing"]]
    miss = cats[cats["missing"]].groupby(_GROUP)[COUNT].sum().reindex(size.index, fill_value=0)
    count = present.groupby(_GROUP).size().reindex(size.index, fill_value=0)
    p = present[COUNT].to_numpy() / size.loc[present[_GROUP]].to_numpy()
    plogp = pd.Series(p * np.log(p)).groupby(present[_GROUP].to_numpy()).sum().reindex(size.index, fill_value=0.0)
    with_missing = (miss > 0) & (count > 0)
    pm = (miss / size).where(with_missing, 1.0)
    entropy = plogp + np.where(with_missing, pm * np.log(pm), 0.0)
    # recursive: the counts sorted down, the tail sums after the first
    ordered = present.sort_values([_GROUP, COUNT], ascending=[True, False], kind="stable")
    g = ordered[_GROUP].to_numpy()
    r = ordered[COUNT].to_numpy().astype(float)
    tail = pd.Series(r[::-1]).groupby(g[::-1]).cumsum().to_numpy()[::-1]
    first = pd.Series(r).groupby(g).transform("first").to_numpy()
    rank = pd.Series(np.ones(len(g))).groupby(g).cumsum().to_numpy() - 1
    above = pd.Series((rank >= 1) & (c * tail > first)).groupby(g).sum().reindex(size.index, fill_value=0)
    recursive = (1 + above).astype(float).where(count > 0, np.nan)
    return pd.DataFrame(
        {
            "distinct": (count + with_missing).astype(float),
            "entropy": np.exp(-entropy),
            "recursive": recursive,
        }
    )


def ldiversity(
    table: pd.DataFrame, keys: Sequence[str], sensitive: Sequence[str], c: float = 2.0, missing: float = -999
) -> pd.DataFrame:
    """Per row of ``table``: the l-diversity of its key group, with sdcMicro's column names.

    Parameters
    ----------
    table : DataFrame
        Keys, sensitive variables (float codes, NaN missing) and the record count ``n``.
    keys, sensitive : sequence of str
        Column names.
    c : float
        The recursive (c, l)-diversity constant (sdcMicro ``l_recurs_c``; 0 means 1 there).
    missing : float
        The special missing code of the sensitive variables (sdcMicro ``missing``).
    """
    c = c or 1.0
    keys, sensitive = list(keys), list(sensitive)
    counts = table[COUNT].to_numpy()
    complete = ~table[keys].isna().any(axis=1).to_numpy()
    gid = np.full(len(table), -1, dtype=np.int64)
    gid[complete] = table.loc[complete, keys].groupby(keys, sort=True).ngroup().to_numpy()
    n_groups = int(gid.max()) + 1 if complete.any() else 0
    size = pd.Series(
        np.bincount(gid[complete], weights=counts[complete], minlength=n_groups), index=np.arange(n_groups)
    )
    out = {}
    for s in sensitive:
        values = table[s].to_numpy(dtype=float)
        d = _diversity(_categories(gid[complete], values[complete], counts[complete], missing), size, c)
        single_missing = values == missing
        for name, col in d.items():
            per_row = np.full(len(table), np.nan)
            per_row[complete] = col.to_numpy()[gid[complete]]
            # a record with a missing key is a group of one
            alone = {"distinct": np.where(single_missing, 0.0, 1.0), "entropy": 1.0}.get(
                name, np.where(single_missing, np.nan, 1.0)
            )
            per_row[~complete] = np.broadcast_to(alone, len(table))[~complete]
            out[f"{s}_{name.capitalize()}_Ldiversity"] = per_row
    if len(sensitive) >= 2:
        entropy, recursive = _multi(table, gid, complete, sensitive, c, missing, n_groups)
        out["MultiEntropy_Ldiversity"], out["MultiRecursive_Ldiversity"] = entropy, recursive
    return pd.DataFrame(out, index=table.index)


def _multi(
    table: pd.DataFrame,
    gid: np.ndarray,
    complete: np.ndarray,
    sensitive: list[str],
    c: float,
    missing: float,
    n_groups: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Multi entropy and recursive l-diversity per row (the smallest over variables and sub-groups)."""
    counts = table[COUNT].to_numpy()
    entropy = np.full(n_groups, np.inf, dtype=np.float32)
    recursive = np.full(n_groups, np.inf)
    for s in sensitive:
        others = [o for o in sensitive if o != s]
        rows = complete & ~table[others].isna().any(axis=1).to_numpy()
        # a record with a missing other value is a sub-group of one: entropy and recursive 1
        has_single = np.bincount(gid[complete & ~rows], minlength=n_groups) > 0
        sub_frame = table.loc[rows, others].assign(_g=gid[rows])
        sub = sub_frame.groupby(["_g", *others], sort=True).ngroup().to_numpy()
        sub_group = sub_frame.groupby(["_g", *others], sort=True)["_g"].first().to_numpy()
        size = pd.Series(np.bincount(sub, weights=counts[rows], minlength=sub_group.size))
        d = _diversity(_categories(sub, table.loc[rows, s].to_numpy(dtype=float), counts[rows], missing), size, c)
        ent = pd.Series(d["entropy"].to_numpy().astype(np.float32)).groupby(sub_group).min()
        rec = pd.Series(d["recursive"].to_numpy()).groupby(sub_group).min()
        entropy[ent.index] = np.minimum(entropy[ent.index], ent.to_numpy())
        recursive[rec.index] = np.minimum(recursive[rec.index], rec.to_numpy())
        entropy[has_single] = np.minimum(entropy[has_single], np.float32(1.0))
        recursive[has_single] = np.minimum(recursive[has_single], 1.0)
    e_row, r_row = np.ones(len(table)), np.ones(len(table))
    e_row[complete] = entropy[gid[complete]].astype(float)
    r_row[complete] = recursive[gid[complete]]
    return e_row, r_row


__all__ = ["COUNT", "ldiversity"]
