"""Original-vs-synthetic compatibility check (synthpop's ``synorig.compare``, made explicit).

synthpop silently adjusts mismatched inputs (and then uses only the first synthetic set).
Here the check either fails with a message naming the file, the variable and the mismatch
(``mode="strict"``), or aligns every synthetic set to the original explicitly
(``mode="align"``) and reports each change, keeping all m sets.

Alignment rules (synorig.compare's, with the list-truncation bug removed):

* only variables present in both are kept, in the original's column order;
* integer vs numeric -> both numeric;
* numeric in one, factor in the other -> the numeric one becomes a factor whose levels are its
  values' labels (an error if the values are not whole numbers);
* factor level sets differ -> both get the union, synthetic levels first;
* missing values need no NA level: missing is a missing category in memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from pipeline.data.dataset import Dataset
from pipeline.data.schema import NUMERIC_KINDS, Schema, Variable
from pipeline.errors import CompatibilityError


@dataclass(frozen=True)
class Mismatch:
    """One difference between the original's and a synthetic set's schema."""

    source: str
    variable: str
    problem: str

    def __str__(self) -> str:
        return f"{self.source}: variable {self.variable!r}: {self.problem}"


def compare_schemas(original: Schema, synthetic: Schema, source: str = "synthetic") -> list[Mismatch]:
    """Every difference in variables, kinds and factor levels between two schemas."""
    out: list[Mismatch] = []
    for name in original.names:
        if name not in synthetic:
            out.append(Mismatch(source, name, "present in the original but missing in the synthetic data"))
            continue
        o, s = original[name], synthetic[name]
        if o.kind != s.kind:
            if not (o.kind in NUMERIC_KINDS and s.kind in NUMERIC_KINDS):
                out.append(Mismatch(source, name, f"kind differs: original {o.kind}, synthetic {s.kind}"))
            continue
        if o.kind == "factor" and tuple(o.levels or ()) != tuple(s.levels or ()):
            only_o = [lv for lv in o.levels or () if lv not in (s.levels or ())]
            only_s = [lv for lv in s.levels or () if lv not in (o.levels or ())]
            if only_o or only_s:
                # counts, not labels: the levels of confidential data are values
                detail = []
                if only_o:
                    detail.append(f"{len(only_o)} level(s) only in the original")
                if only_s:
                    detail.append(f"{len(only_s)} level(s) only in the synthetic data")
                out.append(Mismatch(source, name, "; ".join(detail)))
            else:
                out.append(Mismatch(source, name, "same levels in a different order"))
    for name in synthetic.names:
        if name not in original:
            out.append(Mismatch(source, name, "present in the synthetic but missing in the original data"))
    return out


def _merged(o: Variable, s: Variable) -> Variable:
    if o.kind in NUMERIC_KINDS and s.kind in NUMERIC_KINDS:
        kind = "integer" if o.kind == s.kind == "integer" else "numeric"
        return replace(o, kind=kind, missing_codes=o.missing_codes or s.missing_codes)
    if o.kind == "factor" and s.kind == "factor":
        levels = list(s.levels or ()) + [lv for lv in o.levels or () if lv not in (s.levels or ())]
        # a level order that only differs by permutation is the original's, so results match R's
        if set(levels) == set(o.levels or ()):
            levels = list(o.levels or ())
        return replace(o, levels=tuple(levels))
    raise CompatibilityError(f"variable {o.name!r}: cannot align kind {o.kind} with {s.kind}")


def align_synthetic(
    original: Dataset, synthetic: Sequence[Dataset], mode: Literal["strict", "align"] = "strict"
) -> tuple[Dataset, list[Dataset], list[Mismatch]]:
    """Check (and optionally align) every synthetic set against the original.

    Returns
    -------
    original, synthetic, changes
        The data sets restricted to common variables and cast to one shared schema, and the
        list of differences found (all of which were aligned).

    Raises
    ------
    CompatibilityError
        In ``strict`` mode, on the first set with a difference (all its differences listed);
        in ``align`` mode, when a difference cannot be aligned (e.g. a factor vs a character).
    """
    if mode not in ("strict", "align"):
        raise CompatibilityError(f"unknown compatibility mode {mode!r}; expected 'strict' or 'align'")
    found: list[Mismatch] = []
    for syn in synthetic:
        mism = compare_schemas(original.schema, syn.schema, syn.source)
        if mism and mode == "strict":
            raise CompatibilityError(
                "synthetic data do not match the original (use compatibility: align to align them): "
                + "; ".join(map(str, mism))
            )
        found.extend(mism)
    if not found:
        return original, list(synthetic), []
    common = [n for n in original.schema.names if all(n in s.schema for s in synthetic)]
    if not common:
        raise CompatibilityError(f"{original.source}: no variable is shared with the synthetic data")
    merged = []
    for name in common:
        v = original.schema[name]
        for s in synthetic:
            try:
                v = _merged(v, s.schema[name])
            except CompatibilityError as e:
                raise CompatibilityError(f"{s.source}: {e}") from None
        merged.append(v)
    schema = Schema(tuple(merged))
    return (
        original.select(common).with_schema(schema),
        [s.select(common).with_schema(schema) for s in synthetic],
        found,
    )
