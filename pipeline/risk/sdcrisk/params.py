"""Parameters of the ``sdc_risk`` measure (sdcMicro's names are aliases of each field)."""

from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, Field, FiniteFloat, StrictBool, model_validator

from pipeline.evaluation.base import Params


class SdcRiskParams(Params):
    """Parameters of ``sdc_risk``: sdcMicro's risk measures of one key set, for every file.

    Attributes
    ----------
    keys : list of str
        The key variables (sdcMicro ``keyVars``).
    weights : str or None
        The sampling-weight variable (``w``/``weightVar``); None: unweighted (risk ``1/fk``).
    household : str or None
        The household id (``hid``/``hhId``): adds the household risk.
    sensitive : list of str
        Sensitive variables for l-diversity (``ldiv_index``; at most 5, as sdcMicro).
    k : list of int
        The k of the k-anonymity violation counts (on ``fk`` and, weighted, on ``Fk``).
    alpha : float
        sdcMicro's weight of a missing key value in the frequencies (1: matches any value).
    max_global_risk : float
        The global risk the threshold keeps below (``max_global_risk``).
    l_recurs_c : float
        The c of recursive (c, l)-diversity.
    suda : bool
        Whether to compute SUDA2 scores (``suda2``).
    dis_fraction : float
        The sampling fraction of the DIS-SUDA score (``DisFraction``).
    original_scores : bool
        Elliot's SUDA scores (sdcMicro's default) or the alternative weights.
    missing_dimension : int or None
        The largest MSU size searched; None: all sizes (as sdcMicro); smaller is faster and gives
        lower scores than sdcMicro's.
    modrisk : list of str
        modRisk's methods to estimate (``default``, ``CE``, ``PML``, ``weightedLLM``, ``IPF``);
        empty: none.  The model is the keys' main effects (sdcMicro's ``formulaM = ~ keys``).
    bound : float
        modRisk's ``bound``: cells with more records are left out of its estimates.
    """

    keys: list[str] = Field(min_length=1, validation_alias=AliasChoices("keys", "keyVars"))
    weights: str | None = Field(None, validation_alias=AliasChoices("weights", "w", "weightVar"))
    household: str | None = Field(None, validation_alias=AliasChoices("household", "hid", "hhId"))
    sensitive: list[str] = Field(
        default_factory=list, max_length=5, validation_alias=AliasChoices("sensitive", "ldiv_index")
    )
    k: list[int] = Field(default_factory=lambda: [2, 3, 5], min_length=1)
    alpha: FiniteFloat = Field(1.0, ge=0.0, le=1.0)
    max_global_risk: FiniteFloat = Field(0.01, gt=0.0, lt=1.0)
    l_recurs_c: FiniteFloat = Field(2.0, ge=0.0)
    suda: StrictBool = True
    dis_fraction: FiniteFloat = Field(
        0.01, gt=0.0, lt=1.0, validation_alias=AliasChoices("dis_fraction", "DisFraction")
    )
    original_scores: StrictBool = True
    missing_dimension: int | None = Field(None, ge=1)
    modrisk: list[Literal["default", "CE", "PML", "weightedLLM", "IPF"]] = Field(default_factory=list)
    bound: float = Field(float("inf"), gt=0.0)

    @model_validator(mode="after")
    def _roles_apart(self) -> SdcRiskParams:
        if len(set(self.keys)) != len(self.keys):
            raise ValueError("keys: a variable is named twice")
        if self.modrisk and self.weights is None:
            raise ValueError(
                "modrisk: needs weights (sdcMicro sets missing weights to 1, which makes both estimates NaN: "
                "give a column of ones as weights for that)"
            )
        if any(k < 1 for k in self.k):
            raise ValueError("k: every k must be at least 1")
        others = {
            "weights": self.weights,
            "household": self.household,
            **{f"sensitive {s!r}": s for s in self.sensitive},
        }
        clash = [role for role, v in others.items() if v is not None and v in self.keys]
        if clash:
            raise ValueError(f"keys: a key variable cannot also be the {', '.join(clash)}")
        return self

    def variables(self) -> list[str]:
        extra = [v for v in (self.weights, self.household) if v is not None]
        return list(dict.fromkeys([*self.keys, *self.sensitive, *extra]))


__all__ = ["SdcRiskParams"]
