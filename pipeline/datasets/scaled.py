"""Scaled-up copies of the bundled SD2011 data for benchmarks and scale tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.datasets import load_demo, load_demo_synthetic


def write_scaled_sd2011(folder: Path, rows: int, n_synthetic: int = 2, files: int = 8) -> Path:
    """SD2011 (and its CART syntheses) resampled to ``rows`` records each, as Parquet folders.

    Records are drawn with replacement (fixed seeds) and ``age`` jittered by up to 3 years, so
    the key combinations are many and realistic.  Writes ``original/``, ``syn1/``..,
    ``sd2011.schema.json``; returns ``folder``.
    """
    folder.mkdir(parents=True, exist_ok=True)
    original = load_demo("sd2011_subset")
    original.schema.to_json(folder / "sd2011.schema.json")
    sources = {"original": original}
    sources.update({f"syn{i + 1}": s for i, s in enumerate(load_demo_synthetic("sd2011_cart")[:n_synthetic])})
    for seed, (name, ds) in enumerate(sources.items()):
        pdf = ds.to_pandas()
        rng = np.random.default_rng(seed)
        big = pdf.iloc[rng.integers(0, len(pdf), rows)].reset_index(drop=True)
        big["age"] = (big["age"] + rng.integers(-3, 4, rows)).clip(16, 97)
        # stored as plain labels, as a user's files would be; the schema makes them factors again
        big = big.astype({c: object for c in big.columns if isinstance(big[c].dtype, pd.CategoricalDtype)})
        (folder / name).mkdir(exist_ok=True)
        for i, part in enumerate(np.array_split(np.arange(rows), files)):
            big.iloc[part].to_parquet(folder / name / f"part-{i:03d}.parquet", index=False)
    return folder
