"""Replicated uniques and their removal (synthpop ``replicated.uniques`` and ``sdc``, spec §13).

A record is *unique* on a set of keys when no other record of its data set has the same
key values.  For each synthetic set:

* ``Original``: key combinations occurring once in the original (% of the original records);
* ``Synthetic``: key combinations occurring once in the synthetic set (% of its records);
* ``Synthetic uniques in original``: synthetic uniques whose combination occurs (any number
  of times) in the original (% of the synthetic records);
* ``Replicated uniques``: combinations unique in both (% of the synthetic records).

Keys are compared by value (numbers are not grouped; a missing value is a value of its
own).  synthpop compares pasted text, which fails for a single key and for numbers printed
with different widths; those defects are not reproduced.

The per-record flags come from the same key blocks as :func:`~pipeline.risk.disclosure.disclosure`:
a block holds whole key combinations, so uniqueness is decided inside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import dask
import numpy as np
import pandas as pd

from pipeline.blocks import ROW_COLUMN, KeyBlocks, add_row_id
from pipeline.data.schema import Schema
from pipeline.errors import ParameterError
from pipeline.results import jsonable, tidy_frame
from pipeline.risk.disclosure.coding import Coder, build_coders, encode_frame, encoded_meta
from pipeline.risk.disclosure.inputs import (
    IN_MEMORY_ROWS,
    Engine,
    first_frame,
    gather_stats,
    prepare_inputs,
    synthetic_list,
    unwrap,
)
from pipeline.risk.disclosure.kernel import key_groups
from pipeline.risk.disclosure.options import as_key_list

ROWS = ("Original", "Synthetic", "Synthetic uniques in original", "Replicated uniques")
#: kinds of rows the uniques kernel returns
_N_UNIQUE, _SYN_U_ROW, _REP_U_ROW = 0, 1, 2


@dataclass(frozen=True)
class ReplicatedUniquesResult:
    """Uniques of the original and of each synthetic set (synthpop ``replicated.uniques``).

    Attributes
    ----------
    keys : tuple of str
    n : int
        Records in the original.
    k : tuple of int
        Records in each synthetic set.
    res_tab : tuple of DataFrame
        Per synthetic set, rows ``Original, Synthetic, Synthetic uniques in original,
        Replicated uniques`` and columns ``Number, from total, %`` (not rounded).
    synU_rm, repU_rm : tuple of numpy bool arrays
        Per synthetic set, which records (by position) are synthetic uniques present in the
        original / replicated uniques.
    """

    keys: tuple[str, ...]
    n: int
    k: tuple[int, ...]
    res_tab: tuple[pd.DataFrame, ...]
    synU_rm: tuple[np.ndarray, ...]
    repU_rm: tuple[np.ndarray, ...]

    def tidy(self, setting: str = "") -> pd.DataFrame:
        rows = []
        for i, tab in enumerate(self.res_tab, start=1):
            for name, r in tab.iterrows():
                rows.append((str(i), setting, f"{name} %", float(r["%"])))
                rows.append((str(i), setting, f"{name} (number)", float(r["Number"])))
        return tidy_frame(rows)

    def to_dict(self) -> dict[str, Any]:
        return jsonable({"keys": list(self.keys), "n": self.n, "k": list(self.k),
                         "res_tab": [t.reset_index(names="").to_dict(orient="records") for t in self.res_tab]})


@dataclass(frozen=True)
class RemovedUniques:
    """Synthetic sets with uniques removed (synthpop ``sdc`` with ``rm.*uniques*``).

    Attributes
    ----------
    synthetic : list
        The synthetic sets without the removed records (same type as given: pandas or Dask).
    removed : tuple of numpy bool arrays
        Per synthetic set, which records (by position in the input) were removed.
    uniques : ReplicatedUniquesResult
        The counts the removal was based on.
    """

    synthetic: list[Any]
    removed: tuple[np.ndarray, ...]
    uniques: ReplicatedUniquesResult

    @property
    def n_removed(self) -> list[int]:
        return [int(r.sum()) for r in self.removed]


def uniques_kernel(original: pd.DataFrame, *synthetic: pd.DataFrame, keys: tuple[str, ...],
                   sizes: tuple[int, ...]) -> pd.DataFrame:
    """Per block: the number of original uniques, and the flagged synthetic records.

    Returns rows ``(set, kind, value)``: kind 0 = number of uniques of the set, 1 = position of
    a synthetic unique present in the original, 2 = position of a replicated unique.
    """
    frames = (original, *synthetic)
    q, _ = key_groups(frames, keys, sizes)
    src = np.repeat(np.arange(len(frames)), [len(f) for f in frames])
    groups, inverse = np.unique(q, return_inverse=True)
    counts = np.bincount(src * len(groups) + inverse, minlength=len(frames) * len(groups)).reshape(len(frames), -1)
    out = [(np.array([0]), _N_UNIQUE, np.array([(counts[0] == 1).sum()]))]
    for j in range(1, len(frames)):
        s = counts[j]
        out.append((np.array([j]), _N_UNIQUE, np.array([(s == 1).sum()])))
        of_row = inverse[src == j]
        position = frames[j][ROW_COLUMN].to_numpy() if ROW_COLUMN in frames[j] else np.arange(len(frames[j]))
        for kind, flag in ((_SYN_U_ROW, (s == 1) & (counts[0] > 0)), (_REP_U_ROW, (s == 1) & (counts[0] == 1))):
            rows = position[flag[of_row]]
            out.append((np.full(len(rows), j), kind, rows))
    return pd.DataFrame({
        "set": np.concatenate([o[0] for o in out]).astype(np.int64),
        "kind": np.concatenate([np.full(len(o[2]), o[1]) for o in out]).astype(np.int64),
        "value": np.concatenate([o[2] for o in out]).astype(np.int64),
    })


def _uniques_meta() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=np.int64) for c in ("set", "kind", "value")})


def replicated_uniques(
    original: Any,
    synthetic: Any,
    keys: str | Sequence[str] | None = None,
    *,
    schema: Schema | None = None,
    n_blocks: int | None = None,
    engine: Engine = "auto",
) -> ReplicatedUniquesResult:
    """Uniques of the original and of each synthetic set on ``keys``, and which are shared.

    Parameters
    ----------
    original, synthetic
        As in :func:`~pipeline.risk.disclosure.disclosure` (pandas, Dask or Datasets).
    keys : str or sequence of str, optional
        Default: every variable of the original.
    schema : Schema, optional
    n_blocks : int, optional
        Number of key blocks on the Dask path.
    engine : {"auto", "pandas", "dask"}
        As in :func:`~pipeline.risk.disclosure.disclosure`.
    """
    key_list = as_key_list(list(unwrap(original, "original")[0].columns) if keys is None else keys)
    inputs = prepare_inputs(original, synthetic, key_list, schema, engine)
    stats = gather_stats(inputs, key_list)
    if engine == "auto" and max(st[key_list[0]].n for st in stats) <= IN_MEMORY_ROWS:
        inputs = inputs.in_memory()
    coders = build_coders(stats, key_list, {}, {}, allow_all_missing=True)
    rows, n = _flag_rows(inputs, coders, key_list, stats, n_blocks)
    k = tuple(st[key_list[0]].n for st in stats[1:])
    orig_uniques = int(rows.loc[(rows["set"] == 0) & (rows["kind"] == _N_UNIQUE), "value"].sum())
    tabs, syn_u, rep_u = [], [], []
    for j, size in enumerate(k, start=1):
        mine = rows[rows["set"] == j]
        flags = []
        for kind in (_SYN_U_ROW, _REP_U_ROW):
            flag = np.zeros(size, dtype=bool)
            flag[mine.loc[mine["kind"] == kind, "value"].to_numpy()] = True
            flags.append(flag)
        syn_u.append(flags[0])
        rep_u.append(flags[1])
        numbers = [orig_uniques, int(mine.loc[mine["kind"] == _N_UNIQUE, "value"].sum()), int(flags[0].sum()),
                   int(flags[1].sum())]
        totals = [n, size, size, size]
        tabs.append(pd.DataFrame({"Number": numbers, "from total": totals,
                                  "%": [x / t * 100 for x, t in zip(numbers, totals, strict=True)]},
                                 index=list(ROWS)))
    return ReplicatedUniquesResult(key_list, n, k, tuple(tabs), tuple(syn_u), tuple(rep_u))


def _flag_rows(inputs: Any, coders: dict[str, Coder], keys: tuple[str, ...], stats: list,
               n_blocks: int | None) -> tuple[pd.DataFrame, int]:
    sizes = tuple(coders[k].size for k in keys)
    n = stats[0][keys[0]].n
    if not inputs.lazy:
        encoded = [encode_frame(f, coders) for f in inputs.frames]
        return uniques_kernel(*encoded, keys=keys, sizes=sizes), n
    meta = encoded_meta(coders)
    encoded = [f.map_partitions(encode_frame, coders, meta=meta) for f in inputs.frames]
    blocks = n_blocks or max(f.npartitions for f in inputs.frames)
    aligned = KeyBlocks(list(keys), blocks).partition(encoded[0], encoded[1:], with_row_id=True)
    (rows,) = dask.compute(aligned.map(uniques_kernel, _uniques_meta(), keys=keys, sizes=sizes))
    return rows, n


def remove_uniques(
    original: Any,
    synthetic: Any,
    keys: str | Sequence[str] | None = None,
    *,
    rm_uniques_in_orig: bool = False,
    rm_replicated_uniques: bool = False,
    schema: Schema | None = None,
    n_blocks: int | None = None,
    engine: Engine = "auto",
) -> RemovedUniques:
    """Remove uniques from the synthetic sets (synthpop ``sdc``, spec §13.2 step 2).

    Parameters
    ----------
    keys : optional
        Default: every variable of the (first) synthetic set, as in synthpop.
    rm_uniques_in_orig : bool
        Remove synthetic uniques whose key values occur in the original (recommended for
        low-fidelity synthetic data; includes the replicated uniques).
    rm_replicated_uniques : bool
        Remove replicated uniques only (high-fidelity data).  Ignored when
        ``rm_uniques_in_orig`` is set.

    Returns
    -------
    RemovedUniques
        The reduced sets (all their columns) and, per set, which record positions went.
    """
    if not (isinstance(rm_uniques_in_orig, bool) and isinstance(rm_replicated_uniques, bool)):
        raise ParameterError("rm_uniques_in_orig and rm_replicated_uniques must be True or False")
    if not (rm_uniques_in_orig or rm_replicated_uniques):
        raise ParameterError("nothing to remove: set rm_uniques_in_orig or rm_replicated_uniques")
    sets = synthetic_list(synthetic)
    key_list = list(first_frame(sets).columns) if keys is None else keys
    found = replicated_uniques(original, sets, key_list, schema=schema, n_blocks=n_blocks, engine=engine)
    removed = found.synU_rm if rm_uniques_in_orig else found.repU_rm
    kept = [_drop_rows(unwrap(s, f"synthetic set {i}")[0], r)
            for i, (s, r) in enumerate(zip(sets, removed, strict=True), start=1)]
    return RemovedUniques(kept, tuple(removed), found)


def _drop_rows(frame: Any, removed: np.ndarray) -> Any:
    """The records of ``frame`` whose position is not flagged in ``removed``."""
    if isinstance(frame, pd.DataFrame):
        return frame[~removed]
    positions = np.flatnonzero(removed)
    with_row = add_row_id(frame)
    meta = frame._meta

    def keep(part: pd.DataFrame) -> pd.DataFrame:
        return part[~np.isin(part[ROW_COLUMN].to_numpy(), positions)].drop(columns=ROW_COLUMN)

    return with_row.map_partitions(keep, meta=meta)
