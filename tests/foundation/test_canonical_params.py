"""Canonical params: a task that spells out every default and one that omits them are the same
work — the same unit fingerprints, the same ``params`` in the results (and so the same gate keys)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from pipeline.evaluation.base import Row
from pipeline.measures import REGISTRY
from pipeline.run.units import unit_table
from pipeline.synthesisers import REGISTRY as SYNTHESISERS
from pipeline.tasks import expand, load_task, synthesis_units

TASK: dict[str, Any] = {
    "name": "canonical",
    "seed": 5,
    "repetitions": 2,
    "datasets": [
        {
            "name": "sd2011",
            "original": {"demo": "sd2011_subset"},
            "synthetic": [
                {"name": "cart", "demo": "sd2011_cart"},
                {
                    "name": "margins",
                    "synthesise": {
                        "variables": ["sex", "agegr", "edu"],
                        "m": 2,
                        "variant": "none",
                        "dp": {"epsilon": 2},
                    },
                },
            ],
        },
        {
            "name": "cedata",
            "original": {"demo": "cedata"},
            "synthetic": [{"name": "partial", "synthesise": {"kind": "partial", "method": {"Income": "cart"}}}],
        },
    ],
    "measures": [
        {"type": "profile"},
        {"type": "key_blocks", "datasets": ["sd2011"], "params": {"keys": ["sex", "edu"]}},
        {"type": "disclosure", "datasets": ["sd2011"], "params": {"keys": ["sex", "agegr"], "target": "edu"}},
        {"type": "utility_tab", "datasets": ["sd2011"], "grid": {"vars": [["sex", "edu"], ["agegr", "edu"]]}},
        {"type": "utility_gen", "datasets": ["cedata"], "params": {"method": "logit", "maxorder": 1}},
        {
            "type": "identification_risk",
            "datasets": ["cedata"],
            "params": {
                "scenarios": {"income": {"known": ["Urban", "Tenure"], "synthesised": ["Income"]}},
                "radius_grid": [0.05, 0.2],
            },
        },
    ],
}


def _defaults(model: type[BaseModel], given: dict[str, Any]) -> dict[str, Any]:
    """Every setting of ``model`` that ``given`` leaves out, spelled out with its default."""
    aliases = {f.alias for f in model.model_fields.values() if f.alias}
    out = {}
    for name, f in model.model_fields.items():
        if f.is_required() or name in given or (f.alias and f.alias in given):
            continue
        default = f.get_default(call_default_factory=True)
        out[name] = default.model_dump(mode="json") if isinstance(default, BaseModel) else default
    assert not aliases & set(out)
    return out


def _spelled_out(task: dict[str, Any]) -> dict[str, Any]:
    full = yaml.safe_load(yaml.safe_dump(task))
    for m in full["measures"]:
        model = REGISTRY[m["type"]].measure.params_model
        given = {**m.get("params", {}), **m.get("grid", {})}
        m["params"] = {**m.get("params", {}), **_defaults(model, given)}
    for d in full["datasets"]:
        for s in d["synthetic"]:
            if "synthesise" in s:
                kind = s["synthesise"].get("kind", "margins")
                model = SYNTHESISERS[kind].synthesiser.params_model
                s["synthesise"] = {**s["synthesise"], **_defaults(model, s["synthesise"])}
    # settings inside settings: a DP block and an identification-risk scenario
    full["datasets"][0]["synthetic"][1]["synthesise"]["dp"].update(
        {"delta": 0.05, "noise": "laplace", "order": "noise_only", "weights": None}
    )
    full["measures"][5]["params"]["scenarios"]["income"].update({"radius": None, "radius_grid": None})
    return full


def _units(task: dict[str, Any], path: Path) -> tuple[list, list]:
    path.write_text(yaml.safe_dump(task))
    loaded = load_task(path)
    hashes: dict[tuple[str, str | None, int], str] = {}
    for d in loaded.spec.datasets:
        hashes[(d.name, None, 0)] = f"data:{d.name}"
        for s in d.synthetic:
            hashes[(d.name, s.name, 0)] = f"data:{d.name}/{s.name}"
    syntheses = synthesis_units(loaded, {d.name: f"data:{d.name}" for d in loaded.spec.datasets})
    hashes.update({s.key: s.fingerprint for s in syntheses})
    return syntheses, list(expand(loaded, hashes))


def test_spelled_out_defaults_give_the_same_fingerprints_and_params(tmp_path: Path) -> None:
    full = _spelled_out(TASK)
    assert len(full["measures"][2]["params"]) > 5 and len(full["datasets"][0]["synthetic"][1]["synthesise"]) > 20
    short_syn, short_units = _units(TASK, tmp_path / "short.yaml")
    full_syn, full_units = _units(full, tmp_path / "full.yaml")
    assert len(short_units) == len(full_units) == 18 and len(short_syn) == len(full_syn) == 4
    assert [u.fingerprint for u in short_syn] == [u.fingerprint for u in full_syn]
    assert [u.fingerprint for u in short_units] == [u.fingerprint for u in full_units]
    rows = [Row("1", "value", 1.0, {"inner": 1})]
    for a, b in zip([*short_syn, *short_units], [*full_syn, *full_units], strict=True):
        assert a.canonical_params == b.canonical_params
        pd_a, pd_b = unit_table(rows, a), unit_table(rows, b)
        assert pd_a["params"].tolist() == pd_b["params"].tolist()
        assert pd_a["setting"].tolist() == pd_b["setting"].tolist()
    # the canonical form leaves the defaults out
    disclosure = next(u for u in short_units if u.type == "disclosure")
    assert disclosure.canonical_params == {"keys": ["sex", "agegr"], "target": "edu"}
    margins = next(u for u in short_syn if u.source == "margins")
    assert margins.canonical_params == {
        "kind": "margins",
        "variables": ["sex", "agegr", "edu"],
        "variant": "none",
        "m": 2,
        "seed": 5,
        "dp": {"epsilon": 2.0},
    }
    idrisk = next(u for u in short_units if u.type == "identification_risk")
    assert idrisk.canonical_params["scenarios"] == {"income": {"known": ["Urban", "Tenure"], "synthesised": ["Income"]}}


def test_a_changed_setting_changes_the_fingerprint(tmp_path: Path) -> None:
    changed = yaml.safe_load(yaml.safe_dump(TASK))
    changed["measures"][2]["params"]["denom_lim"] = 6
    changed["datasets"][0]["synthetic"][1]["synthesise"]["m"] = 3
    _, a = _units(TASK, tmp_path / "a.yaml")
    syn_b, b = _units(changed, tmp_path / "b.yaml")
    syn_a, _ = _units(TASK, tmp_path / "a.yaml")
    assert syn_a[0].fingerprint != syn_b[0].fingerprint
    assert [u.fingerprint for u in a if u.type == "disclosure"] != [u.fingerprint for u in b if u.type == "disclosure"]
