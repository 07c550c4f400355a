"""Attack rows for people: the plot of main, control and baseline success rates with their
Wilson intervals (the report's attacks section is :mod:`pipeline.report.attacks`).

Fed by tidy rows (the results table or ``Result.tidy()``), one attack setting at a time; only
aggregates (rates and counts of attacks) are shown.
"""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

#: attack -> (label, colour, x offset)
ATTACKS = {"main": ("main (training)", "#d95f02", -0.15), "control": ("control (holdout)", "#1b9e77", 0.0),
           "baseline": ("baseline (random)", "0.5", 0.15)}  # fmt: skip


def plot_attack_rows(rows: pd.DataFrame, title: str = "") -> Figure:
    """Success rates per synthetic set with their intervals: the main attack well above the control
    means the synthesis adds risk; the baseline at or above the main attack means the attack says nothing."""
    fig = Figure(figsize=(6.0, 3.2), layout="constrained")
    ax = fig.subplots()
    value = rows.set_index(["synthetic", "measure"])["value"]
    sets = sorted(rows.loc[rows["measure"] == "main_rate", "synthetic"].unique(), key=lambda s: (len(s), s))
    for attack, (label, color, offset) in ATTACKS.items():
        if (sets[0] if sets else None, f"{attack}_rate") not in value.index:
            continue
        x = [i + offset for i in range(len(sets))]
        y = [value[(s, f"{attack}_rate")] for s in sets]
        low = [y_ - value[(s, f"{attack}_rate_lower")] for s, y_ in zip(sets, y, strict=True)]
        high = [value[(s, f"{attack}_rate_upper")] - y_ for s, y_ in zip(sets, y, strict=True)]
        ax.errorbar(x, y, yerr=[low, high], linestyle="", marker="o", color=color, capsize=3, label=label)
    ax.set_xticks(range(len(sets)), sets)
    ax.set_xlabel("synthetic set")
    ax.set_ylabel("success rate")
    ax.set_ylim(0, 1)
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, frameon=False)
    return fig
