"""Plots per measure family, made from the tidy results (and the run's inputs where needed)."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import pandas as pd

from pipeline.report.html import figure_html


def profile_section(results: pd.DataFrame, outcome: Any) -> list[str]:
    """Key-combination size distribution, original vs synthetic sets."""
    out = []
    dist = results[(results["measure"] == "combinations") & results["setting"].str.contains("size")]
    for (dataset, source, name), sub in dist.groupby(["dataset", "source", "measure_name"], sort=False):
        fig, ax = plt.subplots(figsize=(7, 3.2))
        piv = sub.pivot_table(index="setting", columns="synthetic", values="value", sort=False)
        piv.index = [s.split(";")[-1].removeprefix("size=").removeprefix("size") for s in piv.index]
        piv.plot.bar(ax=ax, rot=0)
        ax.set_xlabel("records per key combination")
        ax.set_ylabel("key combinations")
        ax.set_title(f"{dataset} / {source}: key-combination sizes")
        out.append(figure_html(fig, f"{name}: key-combination sizes of {dataset}, original vs synthetic {source}"))
    return out


SECTIONS = {"profile": profile_section}
