"""Attack rows for people: the plot of main, control and baseline success rates with their
Wilson intervals, and the report's attacks section (rates, risk per attack, warnings).

Fed by tidy rows (the results table or ``Result.tidy()``), one attack setting at a time; only
aggregates (rates and counts of attacks) are shown.
"""

from __future__ import annotations

import html
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from pipeline.report.markup import figure_html, number_text, table_html
from pipeline.results import per_set
from pipeline.row_params import UNIT, param_columns, unit_groups, value_text

#: attack -> (label, colour, x offset)
ATTACKS = {"main": ("main (training)", "#d95f02", -0.15), "control": ("control (holdout)", "#1b9e77", 0.0),
           "baseline": ("baseline (random)", "0.5", 0.15)}  # fmt: skip


def plot_attack_rows(rows: pd.DataFrame, title: str = "") -> Figure:
    """Success rates per synthetic set with their intervals: the main attack well above the control
    means the synthesis adds risk; the baseline at or above the main attack means the attack says nothing."""
    fig = Figure(figsize=(6.0, 3.2))
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
    fig.tight_layout()
    return fig


#: the report's warning when random guessing does at least as well as the attack
NOT_INFORMATIVE = "the baseline (random) attack does at least as well as the main attack: the attack is not informative"


def _interval(value: pd.Series, name: str) -> str:
    got = value.get(name)
    if got is None or pd.isna(got):
        return "–"
    return f"{number_text(got)} [{number_text(value[f'{name}_lower'])}, {number_text(value[f'{name}_upper'])}]"


def attack_table(rows: pd.DataFrame) -> pd.DataFrame:
    """One line per synthetic set: the three success rates and the risk, each with its interval,
    the number of attacks, and the verdict (attention when the risk interval is above 0)."""
    out = []
    for synthetic, sub in per_set(rows).groupby("synthetic", sort=False):
        value = sub.set_index("measure")["value"]
        out.append(
            {
                "synthetic": synthetic,
                "attacks": number_text(value.get("main_attacks", float("nan"))),
                "main rate": _interval(value, "main_rate"),
                "control rate": _interval(value, "control_rate"),
                "baseline rate": _interval(value, "baseline_rate"),
                "risk": _interval(value, "risk"),
                "status": "attention" if value.get("risk_lower", 0.0) > 0 else "pass",
                "informative": "no" if value.get("baseline_beats_main") == 1 else "yes",
            }
        )
    return pd.DataFrame(out)


def attack_section(results: pd.DataFrame, outcome: Any = None) -> list[str]:
    """The report's attacks section: per dataset, source, measure entry and setting (first
    repetition in the plot, every repetition in the table), the rates with intervals, the risk
    with its interval, and a warning line for every set where the attack is not informative."""
    out = []
    rows = param_columns(results)
    for (dataset, source, name), unit, sub in unit_groups(rows, ["dataset", "source", "measure_name"]):
        setting = value_text(sub[UNIT].iloc[0])
        title = f"{name}: {dataset}" + (f" / {source}" if source else "") + (f" ({unit})" if unit else "")
        first = sub[sub["repetition"] == sub["repetition"].min()]
        out.append(figure_html(plot_attack_rows(first, title), f"{title}: success rates ({setting})"))
        for rep, cell in sub.groupby("repetition", sort=True):
            table = attack_table(cell)
            label = f"{title}" + (f", repetition {rep}" if rep else "")
            out.append(f"<h3>{html.escape(label)}</h3>" + table_html(table, cell_classes={"status": ""}))
            for synthetic in table.loc[table["informative"] == "no", "synthetic"]:
                out.append(f'<p class="warning">{html.escape(label)}, synthetic set {synthetic}: {NOT_INFORMATIVE}</p>')
    return out
