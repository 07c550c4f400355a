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

import numpy as np
import pandas as pd

from pipeline.blocks import ROW_COLUMN
from pipeline.data.schema import Schema
from pipeline.errors import ParameterError
from pipeline.evaluation.base import Result, Row
from pipeline.evaluation.data import EvalData, as_eval_data
from pipeline.evaluation.execution import Executor
from pipeline.results import jsonable
from pipeline.risk.disclosure.coding import build_coders, encode_frame, encoded_meta
from pipeline.risk.disclosure.compute import gather_stats
from pipeline.risk.disclosure.kernel import key_groups

ROWS = ("Original", "Synthetic", "Synthetic uniques in original", "Replicated uniques")
#: kinds of rows the uniques kernel returns
_N_UNIQUE, _SYN_U_ROW, _REP_U_ROW = 0, 1, 2


@dataclass(frozen=True)
class ReplicatedUniquesResult(Result):
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

    def rows(self) -> list[Row]:
        """Per synthetic set, each row of ``res_tab`` as "<row> %" and "<row> (number)" (params: the keys)."""
        params = {"keys": list(self.keys)}
        rows = []
        for i, tab in enumerate(self.res_tab, start=1):
            for name, r in tab.iterrows():
                rows.append(Row(str(i), f"{name} %", float(r["%"]), params))
                rows.append(Row(str(i), f"{name} (number)", float(r["Number"]), params))
        return rows

    def to_dict(self) -> dict[str, Any]:
        return jsonable(
            {
                "keys": list(self.keys),
                "n": self.n,
                "k": list(self.k),
                "res_tab": [t.reset_index(names="").to_dict(orient="records") for t in self.res_tab],
            }
        )


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


def uniques_kernel(
    original: pd.DataFrame, *synthetic: pd.DataFrame, keys: tuple[str, ...], sizes: tuple[int, ...]
) -> pd.DataFrame:
    """Per block of key codes (with ``__row__``): the number of uniques, and the flagged synthetic records.

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
        position = frames[j][ROW_COLUMN].to_numpy()
        for kind, flag in ((_SYN_U_ROW, (s == 1) & (counts[0] > 0)), (_REP_U_ROW, (s == 1) & (counts[0] == 1))):
            rows = position[flag[of_row]]
            out.append((np.full(len(rows), j), kind, rows))
    return pd.DataFrame(
        {
            "set": np.concatenate([o[0] for o in out]).astype(np.int64),
            "kind": np.concatenate([np.full(len(o[2]), o[1]) for o in out]).astype(np.int64),
            "value": np.concatenate([o[2] for o in out]).astype(np.int64),
        }
    )


def _uniques_meta() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=np.int64) for c in ("set", "kind", "value")})


def key_names(keys: str | Sequence[str]) -> tuple[str, ...]:
    """Keys as a tuple of distinct names.

    Raises
    ------
    ParameterError
        No key, a key that is not a name, or a key given twice.
    """
    out = (keys,) if isinstance(keys, str) else tuple(keys)
    if not out:
        raise ParameterError("keys: at least one key variable is needed")
    if not all(isinstance(k, str) for k in out):
        raise ParameterError("keys: key variables must be given by name")
    dupes = sorted({k for k in out if out.count(k) > 1})
    if dupes:
        raise ParameterError(f"keys: duplicated key(s) {dupes}")
    return out


def replicated_uniques(
    original: Any,
    synthetic: Any,
    keys: str | Sequence[str] | None = None,
    *,
    schema: Schema | None = None,
    executor: Executor | None = None,
) -> ReplicatedUniquesResult:
    """Uniques of the original and of each synthetic set on ``keys``, and which are shared.

    Parameters
    ----------
    original, synthetic
        As in :func:`~pipeline.risk.disclosure.disclosure` (pandas, Dask or Datasets).
    keys : str or sequence of str, optional
        Default: every variable of the original.
    schema : Schema, optional
    executor : Executor, optional
        Where to compute (default :meth:`Executor.current`).
    """
    data = as_eval_data(original, synthetic, schema)
    return _replicated_uniques(data, data.columns if keys is None else keys, executor or Executor.current())


def _replicated_uniques(data: EvalData, keys: str | Sequence[str], executor: Executor) -> ReplicatedUniquesResult:
    key_list = key_names(keys)
    prepared = executor.prepare(data.select(key_list))
    stats = gather_stats(prepared, executor, key_list, joint=False)
    coders = build_coders(stats, key_list, {}, {}, allow_all_missing=True)
    sizes = tuple(coders[k].size for k in key_list)
    # the records' codes, not their values, decide the blocks: values that share a code share a block
    blocks = executor.derived_key_blocks(
        prepared, key_list, encode_frame, encoded_meta(coders), coders, with_row_id=True
    )
    (rows,) = executor.compute(blocks.map(uniques_kernel, _uniques_meta(), keys=key_list, sizes=sizes))
    n = stats[0][key_list[0]].n
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
        numbers = [
            orig_uniques,
            int(mine.loc[mine["kind"] == _N_UNIQUE, "value"].sum()),
            int(flags[0].sum()),
            int(flags[1].sum()),
        ]
        totals = [n, size, size, size]
        tabs.append(
            pd.DataFrame(
                {
                    "Number": numbers,
                    "from total": totals,
                    "%": [x / t * 100 for x, t in zip(numbers, totals, strict=True)],
                },
                index=list(ROWS),
            )
        )
    return ReplicatedUniquesResult(key_list, n, k, tuple(tabs), tuple(syn_u), tuple(rep_u))


def remove_uniques(
    original: Any,
    synthetic: Any,
    keys: str | Sequence[str] | None = None,
    *,
    rm_uniques_in_orig: bool = False,
    rm_replicated_uniques: bool = False,
    schema: Schema | None = None,
    executor: Executor | None = None,
) -> RemovedUniques:
    """Remove uniques from the synthetic sets (synthpop ``sdc``, spec §13.2 step 2).

    Parameters
    ----------
    keys : optional
        Default: every variable of the (first) synthetic set that the original has, as in
        synthpop.
    rm_uniques_in_orig : bool
        Remove synthetic uniques whose key values occur in the original (recommended for
        low-fidelity synthetic data; includes the replicated uniques).
    rm_replicated_uniques : bool
        Remove replicated uniques only (high-fidelity data).  Ignored when
        ``rm_uniques_in_orig`` is set.
    executor : Executor, optional
        Where to compute (default :meth:`Executor.current`).

    Returns
    -------
    RemovedUniques
        The reduced sets (all their columns, cast to the schema; pandas or Dask as given)
        and, per set, which record positions went.
    """
    if not (isinstance(rm_uniques_in_orig, bool) and isinstance(rm_replicated_uniques, bool)):
        raise ParameterError("rm_uniques_in_orig and rm_replicated_uniques must be True or False")
    if not (rm_uniques_in_orig or rm_replicated_uniques):
        raise ParameterError("nothing to remove: set rm_uniques_in_orig or rm_replicated_uniques")
    data = as_eval_data(original, synthetic, schema)
    if keys is None:
        keys = [str(c) for c in data.synthetic[0].columns if c in data.schema]
    executor = executor or Executor.current()
    found = _replicated_uniques(data, keys, executor)
    removed = found.synU_rm if rm_uniques_in_orig else found.repU_rm
    kept = [executor.keep_rows(s, ~r) for s, r in zip(data.synthetic, removed, strict=True)]
    return RemovedUniques(kept, tuple(removed), found)
