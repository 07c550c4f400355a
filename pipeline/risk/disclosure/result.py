"""Results of ``disclosure()`` and ``multi_disclosure()`` (the R objects' components).

Each is a :class:`~pipeline.evaluation.base.Result`: its :meth:`rows` carry the setting as
params ``{"keys": [...keys in data order...], "target": name}``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from pipeline.evaluation.base import Result, Row
from pipeline.results import jsonable
from pipeline.risk.disclosure.params import DisclosureOptions

IDENT_COLUMNS = ("UiO", "UiS", "UiOiS", "repU")
ATTRIB_COLUMNS = ("Dorig", "Dsyn", "iS", "DiS", "DiSCO", "DiSDiO", "max_denom", "mean_denom")
CAP_COLUMNS = ("baseCAPd", "CAPd", "CAPs", "DCAP", "TCAP")
#: measures that depend on the original only (identical for every synthetic set)
ORIGINAL_ONLY = ("UiO", "Dorig", "baseCAPd", "CAPd")
CHECK_1WAY_COLUMNS = ("Level", "All", "PctLevelAll", "totalDisclosive", "nLevelDis", "PctLevelDis")
CHECK_2WAY_COLUMNS = ("target_key_levs", "npairs", "key", "key_target_total", "key_total", "PctTargetKeyLevel")
#: per set, whether it has the original's record count in every key group (after exclusions: then
#: repU = UiO) and in every (key group, target level) cell (then DiSCO = Dorig): true of keys (and a
#: target) released unchanged, as in a partial synthesis that keeps them
SAME_COUNT_COLUMNS = ("same_key_counts", "same_key_target_counts")


@dataclass(frozen=True)
class DisclosureResult(Result):
    """Identity and attribute disclosure measures for one target (synthpop ``disclosure``).

    All measures are percentages of the original records (``UiS`` and ``Dsyn``: of the
    synthetic records).  Tables have one row per synthetic set, indexed 1..m.

    Attributes
    ----------
    keys : tuple of str
        Keys in the original's column order (the order of the labels in ``q``).
    target : str
    Norig : int
        Records in the original.
    ident : DataFrame
        ``UiO, UiS, UiOiS, repU``.
    attrib : DataFrame
        ``Dorig, Dsyn, iS, DiS, DiSCO, DiSDiO, max_denom, mean_denom``.
    allCAPs : DataFrame
        ``baseCAPd, CAPd, CAPs, DCAP, TCAP``.
    check_1way, check_2way : tuple
        Per synthetic set, the flag table (see spec §9) or None when nothing is flagged.
        ``check_2way`` tables are indexed by synthpop's row numbers.
    check1, check2 : str
        The message of the last synthetic set that raised the flag ("" if none).
    Nexclusions : tuple of DataFrame
        Per synthetic set, the 8 x 6 table of records excluded at each step.
    options : DisclosureOptions
        The validated options.
    same_counts : DataFrame
        Per synthetic set, :data:`SAME_COUNT_COLUMNS` (booleans; not synthpop's): the set has the
        original's number of records in every key group after exclusions (``repU = UiO`` by
        construction) and in every key group and target level (``DiSCO = Dorig``).
    """

    keys: tuple[str, ...]
    target: str
    Norig: int
    ident: pd.DataFrame
    attrib: pd.DataFrame
    allCAPs: pd.DataFrame
    check_1way: tuple[pd.DataFrame | None, ...]
    check1: str
    check_2way: tuple[pd.DataFrame | None, ...]
    check2: str
    Nexclusions: tuple[pd.DataFrame, ...]
    options: DisclosureOptions = field(repr=False)
    same_counts: pd.DataFrame

    @property
    def m(self) -> int:
        return len(self.ident)

    def measures(self) -> pd.DataFrame:
        """``ident``, ``attrib`` and ``allCAPs`` side by side (one row per synthetic set)."""
        return pd.concat([self.ident, self.attrib, self.allCAPs], axis=1)

    def short(self) -> pd.DataFrame:
        """synthpop's default print: ``UiO``/``Dorig`` of the original, ``repU``/``DiSCO`` per set."""
        rows = [("Original", self.ident["UiO"].iloc[0], self.attrib["Dorig"].iloc[0])]
        rows += [
            (f"Synthesis {i}", r, d)
            for i, r, d in zip(self.ident.index, self.ident["repU"], self.attrib["DiSCO"], strict=True)
        ]
        out = pd.DataFrame(rows, columns=["", "Identity (UiO/repU)", "Attrib (Dorig/DiSCO)"])
        return out.set_index("")

    @property
    def row_params(self) -> dict[str, Any]:
        """The setting of this result's rows: the keys (data order) and the target."""
        return {"keys": list(self.keys), "target": self.target}

    def rows(self) -> list[Row]:
        """Per-set measures for sets "1".."m", original-only measures once as "original", and the
        flags per set (``check_1way``: 0/1, ``check_2way``: number of flagged pairs,
        ``same_key_counts`` and ``same_key_target_counts``: 0/1)."""
        params = self.row_params
        table = self.measures()
        rows = [Row("original", name, float(table[name].iloc[0]), params) for name in ORIGINAL_ONLY]
        for i, row in table.iterrows():
            rows += [Row(str(i), name, float(v), params) for name, v in row.items() if name not in ORIGINAL_ONLY]
            rows.append(Row(str(i), "check_1way", float(self.check_1way[int(i) - 1] is not None), params))
            c2 = self.check_2way[int(i) - 1]
            rows.append(Row(str(i), "check_2way", float(0 if c2 is None else len(c2)), params))
            rows += [Row(str(i), name, float(self.same_counts.loc[i, name]), params) for name in SAME_COUNT_COLUMNS]
        return rows

    def to_dict(self) -> dict[str, Any]:
        return jsonable(
            {
                "keys": list(self.keys),
                "target": self.target,
                "Norig": self.Norig,
                "m": self.m,
                "ident": self.ident.to_dict(orient="list"),
                "attrib": self.attrib.to_dict(orient="list"),
                "allCAPs": self.allCAPs.to_dict(orient="list"),
                "check_1way": [None if c is None else c.to_dict(orient="records") for c in self.check_1way],
                "check1": self.check1,
                "check_2way": [None if c is None else c.to_dict(orient="records") for c in self.check_2way],
                "check2": self.check2,
                "Nexclusions": [n.to_dict(orient="index") for n in self.Nexclusions],
                "same_counts": self.same_counts.astype(bool).to_dict(orient="list"),
                "options": self.options.to_dict(),
            }
        )


@dataclass(frozen=True)
class MultiDisclosureResult(Result):
    """``disclosure()`` over several targets with one key set (synthpop ``multi.disclosure``).

    Attributes
    ----------
    keys : tuple of str
        Keys in data order.
    Norig, m : int
    ident_meas, attrib_meas : str
        The summarised measures (``repU`` and ``DiSCO`` by default).
    ident_table : DataFrame
        Per target: ``ident_orig`` (mean ``UiO``) and ``ident_syn`` (mean of ``ident_meas``
        over **all** m synthetic sets; synthpop takes synthesis 1 only).
    attrib_table : DataFrame
        synthpop's ``attrib.table``: ``target, attrib_orig, attrib_syn, check1, Npairs,
        check2``, sorted by ``attrib_syn``, row names "<rank> <target>[ <n>way checks]".
    results : dict
        target -> :class:`DisclosureResult` (synthpop's ``output.list``).
    """

    keys: tuple[str, ...]
    Norig: int
    m: int
    ident_meas: str
    attrib_meas: str
    ident_table: pd.DataFrame
    attrib_table: pd.DataFrame
    results: dict[str, DisclosureResult]

    @property
    def targets(self) -> list[str]:
        return list(self.results)

    @property
    def ident_orig(self) -> pd.Series:
        return self.ident_table["ident_orig"]

    @property
    def ident_syn(self) -> pd.Series:
        return self.ident_table["ident_syn"]

    def rows(self) -> list[Row]:
        """Every target's rows plus the means over the m sets (synthetic "mean") of
        ``ident_meas`` and ``attrib_meas``."""
        rows = []
        by_target = self.attrib_table.set_index("target")
        for target, res in self.results.items():
            rows += res.rows()
            rows += [
                Row("mean", self.ident_meas, float(self.ident_table.loc[target, "ident_syn"]), res.row_params),
                Row("mean", self.attrib_meas, float(by_target.loc[target, "attrib_syn"]), res.row_params),
            ]
        return rows

    def to_dict(self) -> dict[str, Any]:
        return jsonable(
            {
                "keys": list(self.keys),
                "Norig": self.Norig,
                "m": self.m,
                "ident_meas": self.ident_meas,
                "attrib_meas": self.attrib_meas,
                "ident_table": self.ident_table.reset_index().to_dict(orient="records"),
                "attrib_table": self.attrib_table.reset_index(names="row").to_dict(orient="records"),
                "results": {t: r.to_dict() for t, r in self.results.items()},
            }
        )


@dataclass(frozen=True)
class DisclosureResults(Result):
    """The ``disclosure`` measure's result: one result per key set, in the order of the key sets.

    With one key set it answers as that key set's result does (``.ident``, ``.attrib``,
    ``.ident_table``, ...: synthpop's names); with several, take one of :attr:`results`.
    Its rows name each key set's keys in the order the task gives them (``given_keys``), not in
    the data's column order, so that a key set has one setting and one gate key in every source.
    """

    results: tuple[DisclosureResult | MultiDisclosureResult, ...]
    given_keys: tuple[tuple[str, ...], ...] = ()

    def __getattr__(self, name: str) -> Any:
        # only for names the class lacks: the only key set's attributes (never while unpickling)
        if name.startswith("_") or name == "results":
            raise AttributeError(name)
        if len(self.results) != 1:
            n = len(self.results)
            raise AttributeError(f"{name!r}: this result holds {n} key sets; take one of .results[0..{n - 1}]")
        return getattr(self.results[0], name)

    def __repr__(self) -> str:
        def one(res: DisclosureResult | MultiDisclosureResult) -> str:
            targets = res.targets if isinstance(res, MultiDisclosureResult) else [res.target]
            return f"keys [{', '.join(res.keys)}] x {len(targets)} target(s)"

        m = self.results[0].m if self.results else 0
        return f"DisclosureResults({'; '.join(one(r) for r in self.results)}; m={m})"

    def rows(self) -> list[Row]:
        if not self.given_keys:
            return [row for res in self.results for row in res.rows()]
        return [
            replace(row, params={**row.params, "keys": list(given)})
            for res, given in zip(self.results, self.given_keys, strict=True)
            for row in res.rows()
        ]

    def to_dict(self) -> dict[str, Any]:
        return {"key_sets": [res.to_dict() for res in self.results]}
