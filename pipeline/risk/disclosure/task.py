"""Task integration: the ``disclosure`` measure of a task file.

A task asks for one target (``target``: synthpop ``disclosure``) or several
(``targets``, or neither: every variable that is not a key; synthpop ``multi.disclosure``),
with one key set or several (``keys: [[sex, age], [sex, edu, marital]]``)::

    - type: disclosure
      keys: [sex, age, edu, marital]
      targets: [ls, depress, smoke]
      usekeysNA: {age: false}
      cont_na: {income: -8}

Tidy settings are ``keys=<k1+k2+...>;target=<name>``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import dask
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from pipeline.data.dataset import Dataset
from pipeline.results import jsonable
from pipeline.risk.disclosure.api import disclosure, multi_disclosure
from pipeline.risk.disclosure.result import DisclosureResult, MultiDisclosureResult

Level = str
PerKey = dict[str, Any]


class DisclosureParams(BaseModel):
    """Parameters of the ``disclosure`` measure (synthpop names, python style)."""

    model_config = ConfigDict(extra="forbid")

    keys: list[str] | list[list[str]] = Field(min_length=1, description="one key set, or a list of key sets")
    target: str | None = Field(None, description="one target: synthpop disclosure()")
    targets: list[str] | None = Field(None, description="several targets: multi.disclosure() (default: all non-keys)")
    denom_lim: int = Field(5, ge=1)
    exclude_ov_denom_lim: bool = False
    not_targetlev: Level | list[Level] | dict[str, Level] | None = None
    usetargetNA: bool | dict[str, bool] = True
    usekeysNA: bool | list[bool] | dict[str, bool] = True
    exclude_keys: list[str] | dict[str, list[str]] | None = None
    exclude_keylevs: list[str] | dict[str, list[str]] | None = None
    exclude_targetlevs: list[str] | dict[str, list[str]] | None = None
    ngroups_target: int | dict[str, int] | None = None
    ngroups_keys: int | list[int] | dict[str, int] | None = None
    thresh_1way: tuple[float, float] = (50, 90)
    thresh_2way: tuple[float, float] = (4, 80)
    cont_na: dict[str, float | list[float]] | None = None
    ident_meas: Literal["repU", "UiOiS", "UiSiO", "baseCAPd"] = "repU"
    attrib_meas: Literal["DiSCO", "DiSDiO", "DCAP"] = "DiSCO"
    style: Literal["quantile", "equal"] = "quantile"
    n_blocks: int | None = Field(None, ge=1)
    engine: Literal["auto", "pandas", "dask"] = "auto"

    @field_validator("keys")
    @classmethod
    def _non_empty_key_sets(cls, v: list) -> list:
        if isinstance(v[0], list) and any(len(ks) == 0 for ks in v):
            raise ValueError("every key set needs at least one key")
        return v

    @model_validator(mode="after")
    def _one_or_several_targets(self) -> DisclosureParams:
        if self.target is not None and self.targets is not None:
            raise ValueError("give either target (one) or targets (several), not both")
        for keys in self.key_sets:
            clash = [t for t in ([self.target] if self.target else self.targets or []) if t in keys]
            if clash:
                raise ValueError(f"target(s) {clash} cannot also be keys {keys}")
        if self.target is not None:
            per_target = [name for name in ("not_targetlev", "usetargetNA", "exclude_keys", "exclude_keylevs",
                                            "exclude_targetlevs", "ngroups_target")
                          if isinstance(getattr(self, name), dict)]
            if per_target:
                raise ValueError(f"{', '.join(per_target)}: a mapping per target needs 'targets', not 'target'")
        return self

    @property
    def key_sets(self) -> list[list[str]]:
        return [list(k) for k in self.keys] if isinstance(self.keys[0], list) else [list(self.keys)]  # type: ignore


@dataclass(frozen=True)
class DisclosureTaskResult:
    """One result per key set (a :class:`DisclosureResult` or :class:`MultiDisclosureResult`)."""

    results: tuple[tuple[tuple[str, ...], DisclosureResult | MultiDisclosureResult], ...]

    def tidy(self) -> pd.DataFrame:
        parts = []
        for keys, res in self.results:
            setting = f"keys={'+'.join(keys)}"
            if isinstance(res, DisclosureResult):
                setting += f";target={res.target}"
            parts.append(res.tidy(setting))
        return pd.concat(parts, ignore_index=True)

    def to_dict(self) -> dict[str, Any]:
        return jsonable({"key_sets": [{"keys": list(k), **r.to_dict()} for k, r in self.results]})


def evaluate(original: Dataset, synthetic: list[Dataset], params: DisclosureParams) -> DisclosureTaskResult:
    """Run the disclosure measures of ``params`` for every key set (Datasets carry their schema).

    Data sets of one partition (or all, with ``engine: pandas``) are brought into memory once
    for all key sets (the measures would do it per call); otherwise each measure decides.
    """
    data: tuple[Any, Any] = (original, synthetic)
    if params.engine == "pandas" or (params.engine == "auto" and all(
            d.frame.npartitions == 1 for d in (original, *synthetic))):
        frames = dask.compute(*[d.frame for d in (original, *synthetic)])
        data = (frames[0], list(frames[1:]))
    out = []
    for keys in params.key_sets:
        common = dict(
            denom_lim=params.denom_lim, exclude_ov_denom_lim=params.exclude_ov_denom_lim, usekeysNA=params.usekeysNA,
            ngroups_keys=params.ngroups_keys, thresh_1way=params.thresh_1way, thresh_2way=params.thresh_2way,
            cont_na=params.cont_na, style=params.style, n_blocks=params.n_blocks, schema=original.schema,
            engine=params.engine,
        )
        if params.target is not None:
            res: DisclosureResult | MultiDisclosureResult = disclosure(
                *data, keys, params.target, not_targetlev=params.not_targetlev,
                usetargetNA=params.usetargetNA, exclude_keys=params.exclude_keys,
                exclude_keylevs=params.exclude_keylevs, exclude_targetlevs=params.exclude_targetlevs,
                ngroups_target=params.ngroups_target, **common,
            )
        else:
            res = multi_disclosure(
                *data, keys, params.targets, not_targetslev=params.not_targetlev,
                usetargetsNA=params.usetargetNA, exclude_keys=params.exclude_keys,
                exclude_keylevs=params.exclude_keylevs, exclude_targetlevs=params.exclude_targetlevs,
                ngroups_targets=params.ngroups_target, ident_meas=params.ident_meas, attrib_meas=params.attrib_meas,
                **common,
            )
        out.append((tuple(res.keys), res))
    return DisclosureTaskResult(tuple(out))
