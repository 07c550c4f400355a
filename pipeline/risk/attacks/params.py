"""Parameters of the ``linkability``, ``inference`` and ``singling_out`` measures (the only validation of them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import Field, field_validator, model_validator

from pipeline.config_io import Seed
from pipeline.evaluation.base import Params

#: attacks (records attacked, predicates built, neighbours searched) a task may ask for
MAX_ATTACKS = 10_000_000
#: predicates a singling-out search may try
MAX_ATTEMPTS = 1_000_000_000


class RateParams(Params):
    """What every attack takes: ``seed`` and the ``confidence_level`` of the Wilson intervals and
    of the risk's interval."""

    seed: Seed = 0
    confidence_level: float = Field(0.95, gt=0, lt=1)


class AttackParams(RateParams):
    """What the attacks on records (linkability, inference) take.

    Attributes
    ----------
    n_attacks : int or None
        Records attacked in the training records and in the holdout (each drawn without
        replacement, seeded); None attacks every record.  A set with fewer records is attacked
        in full (the rows give the number of attacks of each).
    block_on : list of str
        Factors the attacker knows exactly (added to every auxiliary column set): a target's
        nearest synthetic records are searched only among those with the same values of these
        (on key blocks of them, so the search scales with the block sizes).
    """

    n_attacks: int | None = Field(500, ge=1, le=MAX_ATTACKS)
    block_on: list[str] = Field(default_factory=list)


def _distinct(names: list[str]) -> list[str]:
    return list(dict.fromkeys(names))


class LinkabilityParams(AttackParams):
    """``aux_cols``: the two column sets the attacker holds; ``n_neighbors``: synthetic neighbours
    of each half that may link them."""

    aux_cols: tuple[list[str], list[str]]
    n_neighbors: int = Field(1, ge=1, le=MAX_ATTACKS)

    @field_validator("aux_cols")
    @classmethod
    def _two_non_empty(cls, value: tuple[list[str], list[str]]) -> tuple[list[str], list[str]]:
        if not value[0] or not value[1]:
            raise ValueError("both sets of auxiliary columns need at least one variable")
        return (_distinct(value[0]), _distinct(value[1]))

    def variables(self) -> list[str]:
        return _distinct([*self.block_on, *self.aux_cols[0], *self.aux_cols[1]])


class InferenceParams(AttackParams):
    """``aux_cols``: what the attacker knows; ``secret``: what it guesses; ``tolerance``: a numeric
    guess is right when ``|guess - secret| <= tolerance * |guess|`` (anonymeter's relative rule)."""

    aux_cols: list[str] = Field(min_length=1)
    secret: str
    tolerance: float = Field(0.05, ge=0)

    @field_validator("aux_cols")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        return _distinct(value)

    @model_validator(mode="after")
    def _secret_not_known(self) -> InferenceParams:
        if self.secret in self.aux_cols or self.secret in self.block_on:
            raise ValueError(f"the secret {self.secret!r} cannot be one of the auxiliary or block_on columns")
        return self

    def variables(self) -> list[str]:
        return _distinct([*self.block_on, *self.aux_cols, self.secret])


class SinglingOutParams(RateParams):
    """anonymeter's singling-out attack.

    Attributes
    ----------
    mode : {"multivariate", "univariate"}
        Predicates combining ``n_cols`` columns of synthetic records, or predicates on the rare
        values (and extremes) of single columns of the synthetic set.
    cols : list of str or None
        The variables predicates may use; None: every variable of the data.
    n_attacks : int
        Predicates to build (every rate is over this number, as anonymeter reports it).
    n_cols : int
        Columns per predicate (multivariate mode and its baseline).
    max_attempts : int or None
        Predicates tried at most in the multivariate mode before settling for fewer than
        ``n_attacks`` (at most :data:`MAX_ATTEMPTS`; no limit is refused: the search could not end).
    footing : {"equal", "size_corrected"}
        When the training records and the holdout differ in size: "equal" (default since issue
        32) counts the main and baseline attacks in a seeded subsample of the training records
        of the holdout's size (or the control in one of the holdout of the training's size), so
        both attacks meet as many records; "size_corrected" (anonymeter 1.1.0) counts in every
        training record and rescales the control count by a fitted curve, which on real data
        halves it at 2:1 and quarters it at 4:1 and so reports risk where there is none
        (docs/attacks.md).
    """

    mode: Literal["multivariate", "univariate"] = "multivariate"
    cols: list[str] | None = Field(None, min_length=1)
    n_attacks: int = Field(500, ge=1, le=MAX_ATTACKS)
    n_cols: int = Field(3, ge=1)
    max_attempts: int | None = Field(10_000_000, ge=1, le=MAX_ATTEMPTS)
    footing: Literal["equal", "size_corrected"] = "equal"

    @field_validator("max_attempts")
    @classmethod
    def _bounded(cls, value: int | None) -> int | None:
        if value is None:
            raise ValueError(
                "give a number (default 10000000): with no limit the search never ends when the data hold fewer "
                "than n_attacks distinct predicates"
            )
        return value

    @field_validator("cols")
    @classmethod
    def _unique(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else _distinct(value)

    def variables(self) -> list[str]:
        return list(self.cols or [])


@dataclass(frozen=True)
class Columns:
    """The attacked variables: factors first, then numerics (the records matrix's columns), and the
    numerics' special missing codes."""

    factors: list[str]
    numerics: list[str]
    missing_codes: dict[str, tuple[float, ...]]

    @property
    def names(self) -> list[str]:
        return [*self.factors, *self.numerics]

    @property
    def is_numeric(self) -> np.ndarray:
        return np.arange(len(self.names)) >= len(self.factors)
