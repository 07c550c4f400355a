"""Drawing synthetic records from the fitted table.

Each synthetic set l = 0..m-1 is one draw of Multinomial(k, p-hat), made reproducible and
independent of chunking, worker and thread counts:

* the random streams are numpy ``SeedSequence`` children with fixed spawn keys:
  ``(l,)`` for the set, and below it ``(l, 0)`` for stage 1, ``(l, 1)`` for the row order,
  ``(l, 2, v)`` for the values of numeric variable v, ``(l, 3, r)`` for cell range r;
* the multinomial is decomposed over fixed ranges of SLAB_CELLS consecutive cells (flat index
  for the dense table, support position for the sparse one): stage 1 draws the number of
  records per range from Multinomial(k, range masses); stage 2 draws each range's records as
  i.i.d. cells with probabilities proportional to the range's p-hat (inverse CDF). Together
  this is exactly one Multinomial(k, p-hat) draw;
* the records are then put in random order.

Numeric variables are re-created from their bins without touching any original value:
uniformly within the interval (default) or at its midpoint; special missing codes give the
code; the NA level gives NaN.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from pipeline.data.schema import Schema, Variable
from pipeline.synth.sdc import Bins, SdcResult

if TYPE_CHECKING:  # the schema of a synthesis (validate) needs no IPF engine
    from pipeline.synth.ipf import IpfFit

STAGE1, ORDER, VALUES, CELLS = 0, 1, 2, 3


def stream(root: np.random.SeedSequence, *key: int) -> np.random.Generator:
    """A generator for the child of ``root`` with spawn key ``key`` (same as spawning, but addressable)."""
    return np.random.default_rng(np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, *key)))


def sample_cells(fit: IpfFit, k: int, root: np.random.SeedSequence) -> np.ndarray:
    """Level codes (k x p) of k records drawn from Multinomial(k, p-hat), in random order."""
    eng = fit.engine
    masses = eng.slab_sums()
    per_range = stream(root, STAGE1).multinomial(k, masses / masses.sum())
    cells = []
    for r in np.flatnonzero(per_range):
        vals, ids = eng.slab_values(int(r))
        cum = np.cumsum(vals)
        u = stream(root, CELLS, int(r)).random(int(per_range[r])) * cum[-1]
        pos = np.searchsorted(cum, u, side="right")
        # u * cum[-1] can round up to cum[-1]: such a draw belongs to the last cell with mass
        pos = np.minimum(pos, int(np.flatnonzero(vals)[-1]))
        cells.append(ids[pos])
    flat = np.concatenate(cells) if cells else np.zeros(0, dtype=np.int64)
    flat = flat[stream(root, ORDER).permutation(flat.size)]
    return eng.codes(flat)


def output_schema(sdc: SdcResult, numeric_output: str) -> Schema:
    """Schema of the synthetic data: factors keep their (post-SDC) levels; binned numerics are
    numbers again (``numeric_output`` "uniform"/"midpoint") or factors of the bins ("bin")."""
    out = []
    for v in sdc.schema:
        if v.name in sdc.bins and numeric_output != "bin":
            out.append(v)
        else:
            out.append(Variable(v.name, "factor", tuple(sdc.levels[v.name]), v.ordered if v.is_factor else False))
    return Schema(tuple(out))


def records_frame(
    codes: np.ndarray,
    names: Sequence[str],
    n_levels: Sequence[int],
    schema: Schema,
    bins: dict[str, Bins],
    root: np.random.SeedSequence,
    numeric_output: str,
) -> pd.DataFrame:
    """Turn level codes into a frame in the output schema's in-memory form.

    ``n_levels[i]`` is the number of non-NA levels of variable i; a code equal to it is NA.
    """
    cols = {}
    for i, name in enumerate(names):
        c = codes[:, i].astype(np.int64) if codes.size else np.zeros(0, dtype=np.int64)
        c = np.where(c >= n_levels[i], -1, c)
        var = schema[name]
        if var.is_factor:
            cols[name] = pd.Categorical.from_codes(c, dtype=var.dtype)
        else:
            cols[name] = bins[name].values(c, stream(root, VALUES, i), numeric_output)
    return pd.DataFrame(cols)


def draw_synthetic(
    fit: IpfFit,
    sdc: SdcResult,
    k: int,
    m: int,
    seed: int | None,
    numeric_output: str = "uniform",
) -> tuple[list[pd.DataFrame], list[np.ndarray], Schema, int]:
    """m synthetic sets of k records each.

    Returns
    -------
    frames : list of pandas DataFrame
    codes : list of ndarray
        The records' level codes (k x p, layout order), e.g. to tabulate the synthetic margins.
    schema : Schema
        Output schema (see :func:`output_schema`).
    seed : int
        The seed used (drawn from fresh entropy when ``seed`` is None, so that it can be reported).
    """
    root = np.random.SeedSequence(seed)
    used = int(root.entropy)
    schema = output_schema(sdc, numeric_output)
    names = list(fit.layout.names)
    n_levels = [len(sdc.levels[v]) for v in names]
    frames, all_codes = [], []
    for set_index in range(m):
        set_root = np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, set_index))
        codes = sample_cells(fit, k, set_root)
        frames.append(records_frame(codes, names, n_levels, schema, sdc.bins, set_root, numeric_output))
        all_codes.append(codes)
    return frames, all_codes, schema, used
