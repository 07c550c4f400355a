"""The options of ``disclosure()``, validated once and bound to key *names*.

synthpop takes per-key options (``usekeysNA``, ``ngroups_keys``) as vectors in the order the
keys were given, then re-orders the keys to the data's column order and maps the options
with the wrong permutation.  Here a per-key option is a mapping ``key name -> value`` as soon
as it is read, so the re-ordering of keys cannot misplace it (spec §3.2, worked example 3).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pipeline.errors import ParameterError
from pipeline.rcompat import BinStyle, normalise_cont_na

#: rows and columns of synthpop's ``Nexclusions`` matrices
TABLES = ("original", "synthetic", "Dorig", "Dsyn", "iS", "DiS", "DiSCO", "DiSDiO")
EXCLUSION_STEPS = ("excluded target", "missing target", "missing in  keys", "set to exclude", "over denom_lim")
NEXCLUSION_COLUMNS = (*EXCLUSION_STEPS, "remaining")


@dataclass(frozen=True)
class DisclosureOptions:
    """Validated options of one ``disclosure()`` call (synthpop names, python style).

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
        ``variable -> special missing codes`` (schema codes merged with the argument).
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


def as_key_list(keys: str | Sequence[str], what: str = "keys") -> tuple[str, ...]:
    """Keys as a tuple of distinct names."""
    out = (keys,) if isinstance(keys, str) else tuple(keys)
    if not out:
        raise ParameterError(f"{what}: at least one key variable is needed")
    if not all(isinstance(k, str) for k in out):
        raise ParameterError(f"{what}: key variables must be given by name")
    dupes = sorted({k for k in out if out.count(k) > 1})
    if dupes:
        raise ParameterError(f"{what}: duplicated key(s) {dupes}")
    return out


def per_key(value: Any, keys: Sequence[str], name: str, default: Any) -> dict[str, Any]:
    """Bind a scalar, a sequence in the caller's key order, or a mapping to key names.

    A mapping may leave keys out; they get ``default``.
    """
    if isinstance(value, Mapping):
        unknown = [k for k in value if k not in keys]
        if unknown:
            raise ParameterError(f"{name}: {unknown} are not among the keys {list(keys)}")
        return {k: value.get(k, default) for k in keys}
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        return dict.fromkeys(keys, value)
    if len(value) == 1:
        return dict.fromkeys(keys, value[0])
    if len(value) != len(keys):
        raise ParameterError(
            f"{name} must be a single value, one value per key ({len(keys)}), or a mapping key -> value; "
            f"got {len(value)} values"
        )
    return dict(zip(keys, value, strict=True))


def _bool(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise ParameterError(f"{name} must be True or False, got {type(value).__name__}")
    return value


def _ngroups(value: Any, name: str, allow_zero: bool) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not float(value).is_integer():
        raise ParameterError(f"{name} must be a whole number of groups, got {value!r}")
    n = int(value)
    if n < 0:
        raise ParameterError(f"{name} must not be negative, got {n}")
    if n == 1:
        raise ParameterError(f"{name} cannot be 1 (one group would make the variable constant)")
    if n == 0 and not allow_zero:
        raise ParameterError(f"{name} must be at least 2 (use None for no grouping)")
    return n


def _thresholds(value: Any, name: str) -> tuple[float, float]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) != 2:
        raise ParameterError(f"{name} must be a pair (count, percentage), got {value!r}")
    out = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ParameterError(f"{name} must hold two finite numbers, got {value!r}")
        if v < 0:
            raise ParameterError(f"{name} must not be negative, got {list(value)}")
        out.append(float(v))
    return out[0], out[1]


def _levels(value: Any, name: str) -> tuple[str, ...]:
    if value is None or value == "":
        return ()
    vals = [value] if isinstance(value, str) else list(value)
    if not all(isinstance(v, str) for v in vals):
        raise ParameterError(f"{name} must be level label(s) given as text, got {value!r}")
    return tuple(v for v in vals if v != "")


def resolve_options(
    keys: str | Sequence[str],
    target: str,
    *,
    denom_lim: Any = 5,
    exclude_ov_denom_lim: Any = False,
    not_targetlev: Any = None,
    usetargetNA: Any = True,
    usekeysNA: Any = True,
    exclude_keys: Any = None,
    exclude_keylevs: Any = None,
    exclude_targetlevs: Any = None,
    ngroups_target: Any = None,
    ngroups_keys: Any = None,
    thresh_1way: Any = (50, 90),
    thresh_2way: Any = (4, 80),
    cont_na: Mapping[str, Any] | None = None,
    schema_cont_na: Mapping[str, tuple[float, ...]] | None = None,
    style: str = "quantile",
) -> DisclosureOptions:
    """Validate every option (before any data is touched) and return :class:`DisclosureOptions`.

    Raises
    ------
    ParameterError
        With a message naming the option and what was expected.
    """
    key_list = as_key_list(keys)
    if not isinstance(target, str):
        raise ParameterError(f"target must be one variable name, got {target!r}")
    if target in key_list:
        raise ParameterError(f"target {target!r} cannot also be a key")
    if isinstance(denom_lim, bool) or not isinstance(denom_lim, (int, float)) or not float(denom_lim).is_integer() \
            or denom_lim <= 0:
        raise ParameterError(f"denom_lim must be a whole number > 0, got {denom_lim!r}")

    use_na = per_key(usekeysNA, key_list, "usekeysNA", True)
    for k, v in use_na.items():
        _bool(v, f"usekeysNA[{k!r}]")
    groups = per_key(0 if ngroups_keys is None else ngroups_keys, key_list, "ngroups_keys", 0)
    groups = {k: _ngroups(v, f"ngroups_keys[{k!r}]", allow_zero=True) for k, v in groups.items()}

    triples: tuple[tuple[str, str, str], ...] = ()
    if exclude_keys is not None or exclude_keylevs is not None or exclude_targetlevs is not None:
        ek, kl, tl = (
            [x] if isinstance(x, str) else list(x or [])
            for x in (exclude_keys, exclude_keylevs, exclude_targetlevs)
        )
        if not (len(ek) == len(kl) == len(tl)):
            raise ParameterError(
                "exclude_keys, exclude_keylevs and exclude_targetlevs must have the same length "
                f"(got {len(ek)}, {len(kl)}, {len(tl)})"
            )
        bad = [k for k in ek if k not in key_list]
        if bad:
            raise ParameterError(f"exclude_keys {bad} must be names of keys {list(key_list)}")
        if not all(isinstance(x, str) for x in (*kl, *tl)):
            raise ParameterError("exclude_keylevs and exclude_targetlevs must be level labels given as text")
        triples = tuple(zip(ek, kl, tl, strict=True))

    codes = {k: tuple(float(x) for x in v) for k, v in (schema_cont_na or {}).items()}
    codes.update(normalise_cont_na(cont_na))  # the argument overrides the schema's codes
    if style not in ("quantile", "equal"):
        raise ParameterError(f"style must be 'quantile' or 'equal', got {style!r}")

    return DisclosureOptions(
        keys=key_list,
        target=target,
        denom_lim=int(denom_lim),
        exclude_ov_denom_lim=_bool(exclude_ov_denom_lim, "exclude_ov_denom_lim"),
        not_targetlev=_levels(not_targetlev, "not_targetlev"),
        usetargetNA=_bool(usetargetNA, "usetargetNA"),
        usekeysNA=use_na,
        exclude=triples,
        ngroups_target=None if ngroups_target is None or ngroups_target == 0
        else _ngroups(ngroups_target, "ngroups_target", allow_zero=False),
        ngroups_keys=groups,
        thresh_1way=_thresholds(thresh_1way, "thresh_1way"),
        thresh_2way=_thresholds(thresh_2way, "thresh_2way"),
        cont_na=codes,
        style=style,  # type: ignore[arg-type]
    )
