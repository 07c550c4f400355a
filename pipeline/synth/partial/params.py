"""Settings of the partial synthesiser (``synthesise: {kind: partial, ...}`` in a task file)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from pipeline.errors import ParameterError
from pipeline.synth.base import SynthesisParams

Method = Literal["", "sample", "cart", "normrank", "norm", "logreg", "polyreg"]
#: methods synthpop accepts for a factor / a numeric variable
FACTOR_METHODS: tuple[str, ...] = ("", "sample", "cart", "logreg", "polyreg")
NUMERIC_METHODS: tuple[str, ...] = ("", "sample", "cart", "norm", "normrank")


class PartialParams(SynthesisParams):
    """Parameters of a partial synthesis with synthpop ``syn()`` semantics.

    Attributes
    ----------
    kind : "partial"
        Selects this synthesiser in a task's ``synthesise`` section.
    method : dict of str to method
        Method of each synthesised variable (``sample``, ``cart``, ``norm``, ``normrank``,
        ``logreg``, ``polyreg``); every variable not named is kept (method ``""``).
    keep : list of str
        Variables kept unchanged, stated explicitly (an error if one also has a method).
    variables : list of str, optional
        Columns of the synthetic sets, in order (default: every column of the original).
    visit_sequence : list of str or "kept_first", optional
        Order in which variables are visited (default: ``variables``' order, synthpop's
        ``1:p``). Variables not visited are kept and predict nothing. ``kept_first``: the kept
        variables in column order, then the synthesised ones, so that every synthesised
        variable is predicted by all kept ones (synthpop's default gives a synthesised variable
        only the variables before it in column order: none when it is the first column).
    predictors : dict of str to list of str, optional
        Predictors of a synthesised variable (a row of synthpop's ``predictor.matrix``);
        default: every variable visited before it. A synthesised predictor visited after
        the variable is dropped, as synthpop does.
    m : int
        Number of synthetic sets (>= 1).
    seed : int, optional
        Seed; set ``i`` draws from its own stream ``SeedSequence(seed, spawn_key=(i,))``.
    cart_minbucket, cart_cp : int, float
        ``syn.cart``'s tree settings (``minsplit = 3 * minbucket``; minbucket >= 1, cp >= 0).
    smoothing : dict of str to {"", "density"}
        synthpop's ``smoothing`` per numeric variable synthesised by ``cart`` or ``normrank``:
        ``density`` adds normal noise with the Sheather-Jones bandwidth of the drawn values
        (:mod:`pipeline.synth.partial.smooth`); ``""`` (default) none.
    output_format : list of {"parquet", "csv"}

    The bounds are field constraints and the checks that need no data (a variable both kept and
    synthesised, nothing synthesised) are the model's, so invalid settings are refused when a
    task is loaded; :func:`~pipeline.synth.partial.syn.plan_synthesis` checks them against the data.
    """

    kind: Literal["partial"] = "partial"
    method: dict[str, Method] = Field(min_length=1)
    keep: list[str] = Field(default_factory=list)
    variables: list[str] | None = None
    visit_sequence: list[str] | Literal["kept_first"] | None = None
    predictors: dict[str, list[str]] | None = None
    cart_minbucket: int = Field(5, ge=1)
    cart_cp: float = Field(1e-8, ge=0)
    smoothing: dict[str, Literal["", "density"]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _something_synthesised(self) -> PartialParams:
        both = [v for v in self.keep if self.method.get(v, "") != ""]
        if both:
            raise ParameterError(
                f"variable(s) {', '.join(map(repr, both))} both kept ('keep') and synthesised ('method')"
            )
        if not self.synthesised:
            raise ParameterError("method: give at least one variable a synthesis method (all are kept)")
        return self

    @property
    def synthesised(self) -> list[str]:
        """The variables with a method other than ``""``, in the order given."""
        return [v for v, meth in self.method.items() if meth != ""]
