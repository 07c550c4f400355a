"""The options of the ``disclosure`` measure: one pydantic model, and their bound form.

:class:`DisclosureParams` is the only validation of disclosure options — for task files and
for the synthpop-named functions alike.  It takes one key set or several, one target
(synthpop ``disclosure``) or several (``multi.disclosure``; by default every variable that
is not a key), and every option once; where ``multi.disclosure`` spells an option
differently (``not.targetslev``, ``usetargetsNA``, ``ngroups_targets``) that spelling is an
alias of the same field.

synthpop takes per-key options (``usekeysNA``, ``ngroups_keys``) as vectors in the order the
keys were given, then re-orders the keys to the data's column order and maps the options
with the wrong permutation.  Here a per-key option is bound to key *names* as soon as it is
read, so the re-ordering of keys cannot misplace it (spec §3.2, worked example 3).

:func:`bind_options` derives the :class:`DisclosureOptions` of one key set and its targets
from validated parameters: a pure function, the one the model's validator runs (for explicit
targets) and the measure's data check runs for default targets (resolved against the data).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BeforeValidator, Field, FiniteFloat, StrictBool, field_validator, model_validator

from pipeline.errors import ParameterError
from pipeline.evaluation.base import Params
from pipeline.rcompat import BinStyle, normalise_cont_na

#: rows and columns of synthpop's ``Nexclusions`` matrices
TABLES = ("original", "synthetic", "Dorig", "Dsyn", "iS", "DiS", "DiSCO", "DiSDiO")
EXCLUSION_STEPS = ("excluded target", "missing target", "missing in  keys", "set to exclude", "over denom_lim")
NEXCLUSION_COLUMNS = (*EXCLUSION_STEPS, "remaining")
#: ``multi.disclosure``'s identity measures -> the column summarised (``UiSiO`` is read as ``UiOiS``)
IDENT_MEASURES = {"repU": "repU", "UiOiS": "UiOiS", "UiSiO": "UiOiS", "baseCAPd": "baseCAPd"}
#: ``multi.disclosure``'s attribute measures -> their counterpart for the original
ATTRIB_MEASURES = {"DiSCO": "Dorig", "DiSDiO": "Dorig", "DCAP": "CAPd"}
#: the options that take one value per target with ``targets`` (field name: synthpop's plural spelling)
PER_TARGET = {"not_targetlev": "not_targetslev", "usetargetNA": "usetargetsNA", "ngroups_target": "ngroups_targets"}
EXCLUDE = ("exclude_keys", "exclude_keylevs", "exclude_targetlevs")


def _not_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("expected a number, not True/False")
    return value


#: a whole number given as an int (or a float without fraction), never a bool
Whole = Annotated[int, BeforeValidator(_not_bool)]
#: a finite number, never a bool
Number = Annotated[FiniteFloat, BeforeValidator(_not_bool)]
#: level label(s) of one target ("" or None: none)
Levels = str | list[str] | None
#: (key, key level, target level) lists: one flat list (one target), or one per target
Exclusion = str | list[str] | list[list[str]] | dict[str, list[str]] | None


def _alias(name: str) -> AliasChoices:
    return AliasChoices(name, PER_TARGET[name])


@dataclass(frozen=True)
class DisclosureOptions:
    """The options of one (key set, target), bound to names (derived from :class:`DisclosureParams`).

    Attributes
    ----------
    keys : tuple of str
        Keys in the order given by the caller (the computation uses data column order).
    target : str
    denom_lim : int
    exclude_ov_denom_lim : bool
    not_targetlev : tuple of str
        Target levels removed everywhere (empty = none).
    usetargetNA : bool
    usekeysNA : dict
        ``key -> bool``.
    exclude : tuple of (key, key level, target level)
        The ``exclude.keys / exclude.keylevs / exclude.targetlevs`` triples.
    ngroups_target : int or None
    ngroups_keys : dict
        ``key -> number of groups`` (0 = do not group).
    thresh_1way, thresh_2way : (float, float)
    cont_na : dict
        ``variable -> special missing codes`` (the schema's codes, overridden by ``cont_na``).
    style : {"quantile", "equal"}
        classInt style for the grouping of numeric variables.
    """

    keys: tuple[str, ...]
    target: str
    denom_lim: int = 5
    exclude_ov_denom_lim: bool = False
    not_targetlev: tuple[str, ...] = ()
    usetargetNA: bool = True
    usekeysNA: Mapping[str, bool] = field(default_factory=dict)
    exclude: tuple[tuple[str, str, str], ...] = ()
    ngroups_target: int | None = None
    ngroups_keys: Mapping[str, int] = field(default_factory=dict)
    thresh_1way: tuple[float, float] = (50.0, 90.0)
    thresh_2way: tuple[float, float] = (4.0, 80.0)
    cont_na: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    style: BinStyle = "quantile"

    def to_dict(self) -> dict[str, Any]:
        return {
            "keys": list(self.keys),
            "target": self.target,
            "denom_lim": self.denom_lim,
            "exclude_ov_denom_lim": self.exclude_ov_denom_lim,
            "not_targetlev": list(self.not_targetlev),
            "usetargetNA": self.usetargetNA,
            "usekeysNA": dict(self.usekeysNA),
            "exclude": [list(t) for t in self.exclude],
            "ngroups_target": self.ngroups_target,
            "ngroups_keys": dict(self.ngroups_keys),
            "thresh_1way": list(self.thresh_1way),
            "thresh_2way": list(self.thresh_2way),
            "cont_na": {k: list(v) for k, v in self.cont_na.items()},
            "style": self.style,
        }


class DisclosureParams(Params):
    """Parameters of ``disclosure`` (synthpop's names; ``multi.disclosure``'s plurals are aliases).

    A task asks for one target (``target``: synthpop ``disclosure``) or several (``targets``,
    or neither: every variable of the original that is not a key; synthpop
    ``multi.disclosure``), with one key set or several (``keys: [[sex, age], [sex, edu]]``).
    Per-key options take one value, a list in the order of the keys, or ``{key: value}``; with
    ``targets``, per-target options take one value, a list in the order of the targets, or
    ``{target: value}``.
    """

    keys: list[str] | list[list[str]] = Field(min_length=1, description="one key set, or a list of key sets")
    target: str | None = Field(None, description="one target: synthpop disclosure()")
    targets: list[str] | None = Field(None, description="several targets: multi.disclosure() (default: all non-keys)")
    denom_lim: Whole = Field(5, ge=1, description="cells over this count are excluded with exclude_ov_denom_lim")
    exclude_ov_denom_lim: StrictBool = False
    not_targetlev: Levels | list[Levels] | dict[str, Levels] = Field(
        None, validation_alias=_alias("not_targetlev"), description="target level(s) excluded everywhere"
    )
    usetargetNA: StrictBool | list[StrictBool] | dict[str, StrictBool] = Field(
        True, validation_alias=_alias("usetargetNA"), description="False excludes the Missing target category"
    )
    usekeysNA: StrictBool | list[StrictBool] | dict[str, StrictBool] = Field(
        True, description="False excludes key groups with that key missing (per key)"
    )
    exclude_keys: Exclusion = None
    exclude_keylevs: Exclusion = None
    exclude_targetlevs: Exclusion = None
    ngroups_target: Whole | list[Whole | None] | dict[str, Whole | None] | None = Field(
        None, validation_alias=_alias("ngroups_target"), description="groups of a numeric target (0/None: none)"
    )
    ngroups_keys: Whole | list[Whole] | dict[str, Whole] | None = Field(
        None, description="groups of numeric keys (0: none; per key)"
    )
    thresh_1way: tuple[Number, Number] = (50.0, 90.0)
    thresh_2way: tuple[Number, Number] = (4.0, 80.0)
    cont_na: dict[str, tuple[float, ...]] | None = Field(
        None, description="special missing codes {variable: code or [codes]}, overriding the schema's"
    )
    ident_meas: Literal["repU", "UiOiS", "UiSiO", "baseCAPd"] = "repU"
    attrib_meas: Literal["DiSCO", "DiSDiO", "DCAP"] = "DiSCO"
    style: Literal["quantile", "equal"] = "quantile"

    @model_validator(mode="before")
    @classmethod
    def _one_spelling(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            both = [f"{name}/{plural}" for name, plural in PER_TARGET.items() if name in data and plural in data]
            if both:
                raise ValueError(f"{', '.join(both)}: one option in two spellings; give one of them")
        return data

    @field_validator("keys", "targets", mode="before")
    @classmethod
    def _one_name(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("cont_na", mode="before")
    @classmethod
    def _codes(cls, value: Any) -> Any:
        try:
            return normalise_cont_na(value)
        except ParameterError as e:
            raise ValueError(str(e)) from None

    @field_validator("thresh_1way", "thresh_2way")
    @classmethod
    def _non_negative(cls, value: tuple[float, float]) -> tuple[float, float]:
        if min(value) < 0:
            raise ValueError(f"thresholds (count, percentage) must not be negative, got {list(value)}")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> DisclosureParams:
        for keys in self.key_sets:
            if not keys:
                raise ValueError("keys: every key set needs at least one key")
            dupes = sorted({k for k in keys if keys.count(k) > 1})
            if dupes:
                raise ValueError(f"keys: duplicated key(s) {dupes}")
        if self.target is not None and self.targets is not None:
            raise ValueError("give either target (one) or targets (several), not both")
        if self.targets is not None:
            if not self.targets:
                raise ValueError("targets: give at least one target (or leave targets out: every non-key)")
            dupes = sorted({t for t in self.targets if self.targets.count(t) > 1})
            if dupes:
                raise ValueError(f"targets: duplicated target(s) {dupes}")
        for keys in self.key_sets:
            clash = [t for t in ([self.target] if self.target is not None else self.targets or []) if t in keys]
            if clash:
                raise ValueError(f"target(s) {clash} cannot also be keys {keys}")
        if self.target is not None:
            per_target = [name for name in (*PER_TARGET, *EXCLUDE) if _is_per_target(name, getattr(self, name))]
            if per_target:
                raise ValueError(f"{', '.join(per_target)}: a value per target needs 'targets', not 'target'")
        all_keys = self.all_keys
        for name in ("usekeysNA", "ngroups_keys"):
            value = getattr(self, name)
            if isinstance(value, dict):
                unknown = [k for k in value if k not in all_keys]
                if unknown:
                    raise ValueError(f"{name}: {unknown} are not among the keys {all_keys}")
        for keys in self.key_sets:
            targets = [self.target] if self.target is not None else self.targets
            if targets is not None:
                bind_options(self, keys, targets)
            else:  # targets are known from the data only: check what does not depend on them
                _key_options(self, keys)
        return self

    @property
    def key_sets(self) -> list[list[str]]:
        """The key sets (one or several), each in the order given."""
        if isinstance(self.keys[0], list):
            return [list(k) for k in self.keys]  # type: ignore[arg-type]
        return [list(self.keys)]  # type: ignore[arg-type]

    @property
    def all_keys(self) -> list[str]:
        """Every key of every key set, in order of appearance."""
        return list(dict.fromkeys(k for keys in self.key_sets for k in keys))

    @property
    def several_targets(self) -> bool:
        """Whether this is ``multi.disclosure`` (``targets`` or default targets) rather than ``disclosure``."""
        return self.target is None

    def variables(self) -> list[str]:
        """Keys, explicit targets and ``cont_na`` variables (default targets come from the data)."""
        targets = [self.target] if self.target is not None else list(self.targets or [])
        return list(dict.fromkeys([*self.all_keys, *targets, *(self.cont_na or {})]))


# ---- binding: validated params -> options of one (key set, target) ------------------------------
def _is_per_target(name: str, value: Any) -> bool:
    """Whether an option's value is given per target (a mapping, or a list that is not one target's labels)."""
    if isinstance(value, dict):
        return True
    if not isinstance(value, list):
        return False
    return name in ("usetargetNA", "ngroups_target") or not all(isinstance(v, str) for v in value)


def _ngroups(value: int | None, name: str, allow_zero: bool) -> int | None:
    if value is None or (value == 0 and not allow_zero):
        return None
    if value < 0:
        raise ValueError(f"{name} must not be negative, got {value}")
    if value == 1:
        raise ValueError(f"{name} cannot be 1 (one group would make the variable constant)")
    return value


def _per_key(value: Any, keys: Sequence[str], name: str, default: Any) -> dict[str, Any]:
    """A scalar, a sequence in the caller's key order, or a mapping (keys left out get ``default``)."""
    if isinstance(value, Mapping):
        return {k: value.get(k, default) for k in keys}
    if not isinstance(value, list):
        return dict.fromkeys(keys, default if value is None else value)
    if len(value) == 1:
        return dict.fromkeys(keys, value[0])
    if len(value) != len(keys):
        raise ValueError(
            f"{name} must be a single value, one value per key ({len(keys)}), or a mapping key -> value; "
            f"got {len(value)} values"
        )
    return dict(zip(keys, value, strict=True))


def _key_options(params: DisclosureParams, keys: Sequence[str]) -> tuple[dict[str, bool], dict[str, int]]:
    use_na = _per_key(params.usekeysNA, keys, "usekeysNA", True)
    groups = {
        k: _ngroups(v, f"ngroups_keys[{k!r}]", allow_zero=True) or 0
        for k, v in _per_key(params.ngroups_keys, keys, "ngroups_keys", 0).items()
    }
    return use_na, groups


def _per_target(value: Any, targets: Sequence[str], name: str, default: Any, flat: bool) -> dict[str, Any]:
    """One value for all targets, a list in target order, or a mapping (targets left out get ``default``).

    ``flat``: a list of text is one value (a target's levels), not one value per target.
    """
    if isinstance(value, Mapping):
        unknown = [t for t in value if t not in targets]
        if unknown:
            raise ValueError(f"{name}: {unknown} are not among the targets {list(targets)}")
        return {t: value.get(t, default) for t in targets}
    if value is None or not isinstance(value, list) or (flat and all(isinstance(v, str) for v in value)):
        return dict.fromkeys(targets, default if value is None else value)
    if len(value) != len(targets):
        raise ValueError(f"{name} must have one entry per target ({len(targets)}), got {len(value)}")
    return dict(zip(targets, value, strict=True))


def _levels(value: Levels) -> tuple[str, ...]:
    values = [value] if isinstance(value, str) else list(value or [])
    return tuple(v for v in values if v != "")


def _exclusions(params: DisclosureParams, keys: Sequence[str], targets: Sequence[str]) -> dict[str, tuple]:
    """Per target, the (key, key level, target level) triples whose key is in ``keys``."""
    lists: dict[str, dict[str, list[str]]] = {}
    for name in EXCLUDE:
        value = getattr(params, name)
        if params.target is not None:  # one target: the lists themselves
            value = [value] if isinstance(value, str) else value
            lists[name] = {t: list(value or []) for t in targets}
        elif isinstance(value, list) and not all(isinstance(v, list) for v in value):
            raise ValueError(f"{name} must hold one list per target ({len(targets)}) or map target -> list")
        else:
            lists[name] = {t: list(v or []) for t, v in _per_target(value, targets, name, None, False).items()}
    all_keys = params.all_keys
    out = {}
    for t in targets:
        ek, kl, tl = (lists[name][t] for name in EXCLUDE)
        if not (len(ek) == len(kl) == len(tl)):
            raise ValueError(
                "exclude_keys, exclude_keylevs and exclude_targetlevs must have the same length "
                f"(got {len(ek)}, {len(kl)}, {len(tl)})"
            )
        bad = [k for k in ek if k not in all_keys]
        if bad:
            raise ValueError(f"exclude_keys {bad} must be names of keys {all_keys}")
        out[t] = tuple((k, a, b) for k, a, b in zip(ek, kl, tl, strict=True) if k in keys)
    return out


def bind_options(
    params: DisclosureParams,
    keys: Sequence[str],
    targets: Sequence[str],
    schema_cont_na: Mapping[str, tuple[float, ...]] | None = None,
) -> list[DisclosureOptions]:
    """The options of one key set for each of ``targets`` (a pure function of validated params).

    Parameters
    ----------
    keys : sequence of str
        One of ``params.key_sets``.
    targets : sequence of str
        ``[params.target]``, ``params.targets``, or the default targets resolved against the data.
    schema_cont_na : mapping, optional
        The data's special missing codes; ``params.cont_na`` overrides them per variable.

    Raises
    ------
    ValueError
        A per-target option that does not fit ``targets`` (only possible for default targets:
        with explicit ones the model's validator has run this function).
    """
    use_na, groups = _key_options(params, keys)
    per_target = {
        name: _per_target(
            getattr(params, name), targets, name, default, flat=name == "not_targetlev" and params.target is not None
        )
        for name, default in (("not_targetlev", None), ("usetargetNA", True), ("ngroups_target", None))
    }
    triples = _exclusions(params, keys, targets)
    codes = {**(schema_cont_na or {}), **(params.cont_na or {})}
    out = []
    for t in targets:
        label = "ngroups_target" if params.target is not None else f"ngroups_target[{t!r}]"
        out.append(
            DisclosureOptions(
                keys=tuple(keys),
                target=t,
                denom_lim=params.denom_lim,
                exclude_ov_denom_lim=params.exclude_ov_denom_lim,
                not_targetlev=_levels(per_target["not_targetlev"][t]),
                usetargetNA=per_target["usetargetNA"][t],
                usekeysNA=use_na,
                exclude=triples[t],
                ngroups_target=_ngroups(per_target["ngroups_target"][t], label, allow_zero=False),
                ngroups_keys=groups,
                thresh_1way=params.thresh_1way,
                thresh_2way=params.thresh_2way,
                cont_na=codes,
                style=params.style,
            )
        )
    return out
