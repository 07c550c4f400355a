"""The attacks family's part of the report: per attack entry and setting, the plot of the success rates,
a table of the rates and the risk with their intervals, and a warning for every set where the
attack is not informative (random guessing does at least as well).

Fed by tidy rows only (aggregates: rates and counts of attacks).
"""

from __future__ import annotations

import pandas as pd

from pipeline.evaluation.reporting import Block, Figure, Paragraph, ReportedRun, Table, number_text
from pipeline.results import per_set
from pipeline.risk.attacks.plots import plot_attack_rows
from pipeline.row_params import UNIT, param_columns, unit_groups, value_text

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


def attack_section(results: pd.DataFrame, run: ReportedRun | None = None) -> list[Block]:
    """The report's attacks section: per dataset, source, measure entry and setting (first
    repetition in the plot, every repetition in the table), the rates with intervals, the risk
    with its interval, and a warning line for every set where the attack is not informative."""
    out: list[Block] = []
    rows = param_columns(results)
    for (dataset, source, name), unit, sub in unit_groups(rows, ["dataset", "source", "measure_name"]):
        setting = value_text(sub[UNIT].iloc[0])
        title = f"{name}: {dataset}" + (f" / {source}" if source else "") + (f" ({unit})" if unit else "")
        first = sub[sub["repetition"] == sub["repetition"].min()]
        out.append(Figure(f"{title}: success rates ({setting})", plot_attack_rows, (first, title)))
        for rep, cell in sub.groupby("repetition", sort=True):
            table = attack_table(cell)
            label = f"{title}" + (f", repetition {rep}" if rep else "")
            out.append(Table(table, label, status_columns=("status",)))
            for synthetic in table.loc[table["informative"] == "no", "synthetic"]:
                out.append(Paragraph(f"{label}, synthetic set {synthetic}: {NOT_INFORMATIVE}", "warning"))
    return out
