"""``cluster_configs/kubernetes.yaml`` makes a DaskCluster the dask-kubernetes operator accepts.

No Kubernetes cluster is needed: the generated resource is checked against the operator's own
CustomResourceDefinition (the OpenAPI v3 schema the API server enforces, shipped in the
dask-kubernetes package) and against dask-kubernetes' cluster-name validation.  The check is
stricter than the API server in one way: an unknown field is an error here, where the server
would silently drop it (so a misspelt setting would be ignored on a real cluster).
"""

from __future__ import annotations

import copy
import re
from importlib.resources import files
from typing import Any

import pytest
import yaml
from clusterkit import CONFIGS

pytest.importorskip("dask_kubernetes", reason="dask-kubernetes is not installed (sdc-pipeline[cluster])")

CRD = "operator/deployment/helm/dask-kubernetes-operator/crds/daskcluster.yaml"
#: Kubernetes' resource.Quantity syntax
QUANTITY = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+|[KMGTPE]i|[numkMGTPE])?$")


@pytest.fixture(scope="module")
def crd() -> dict[str, Any]:
    path = files("dask_kubernetes").joinpath(CRD)
    if not path.is_file():
        pytest.skip(f"this dask-kubernetes version does not ship {CRD}")
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def violations(value: Any, schema: dict[str, Any], where: str = "spec") -> list[str]:
    """Where ``value`` breaks a CRD's structural OpenAPI v3 schema (empty when it conforms)."""
    if schema.get("format") == "int-or-string":
        ok = isinstance(value, (int, str)) and not isinstance(value, bool)
        return [] if ok else [f"{where}: expected an integer or a string"]
    kind = schema.get("type")
    checks = {
        "object": lambda v: isinstance(v, dict),
        "array": lambda v: isinstance(v, list),
        "string": lambda v: isinstance(v, str),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
    }
    if kind in checks and not checks[kind](value):
        return [f"{where}: expected {kind}, got {type(value).__name__}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{where}: {value!r} not one of {schema['enum']}"]
    found: list[str] = []
    if kind == "object":
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        found += [f"{where}.{r}: required" for r in schema.get("required", []) if r not in value]
        for k, v in value.items():
            if k in props:
                found += violations(v, props[k], f"{where}.{k}")
            elif isinstance(extra, dict):
                found += violations(v, extra, f"{where}.{k}")
            elif not (extra is True or schema.get("x-kubernetes-preserve-unknown-fields")):
                found.append(f"{where}.{k}: unknown field")
    elif kind == "array" and "items" in schema:
        for i, v in enumerate(value):
            found += violations(v, schema["items"], f"{where}[{i}]")
    return found


def spec_of(cfg: dict[str, Any]) -> dict[str, Any]:
    from pipeline.cluster import kubernetes_spec, load_cluster_config

    return kubernetes_spec(load_cluster_config(cfg))


def shipped() -> dict[str, Any]:
    return yaml.safe_load((CONFIGS / "kubernetes.yaml").read_text(encoding="utf-8"))


def test_shipped_config_is_a_valid_daskcluster(crd):
    from dask_kubernetes.operator.validation import validate_cluster_name

    resource = spec_of(shipped())
    version = crd["spec"]["versions"][0]
    assert resource["apiVersion"] == f"{crd['spec']['group']}/{version['name']}"
    assert resource["kind"] == crd["spec"]["names"]["kind"]
    validate_cluster_name(resource["metadata"]["name"])  # raises dask_kubernetes' ValidationError
    assert violations(resource["spec"], version["schema"]["openAPIV3Schema"]["properties"]["spec"]) == []


def test_spec_carries_the_config(crd):
    cfg = shipped()
    spec = spec_of(cfg)["spec"]
    assert spec["worker"]["replicas"] == cfg["n_workers"]
    for role in ("worker", "scheduler"):
        (container,) = spec[role]["spec"]["containers"]
        assert container["image"] == cfg["image"]
        assert container["resources"] == cfg["resources"]
        # the config's env, and without a dashboard the health check as the only HTTP route
        env = {e["name"]: e["value"] for e in container["env"]}
        assert {k: v for k, v in env.items() if not k.endswith("__HTTP__ROUTES")} == cfg["env"]
        assert all(QUANTITY.match(q) for amounts in container["resources"].values() for q in amounts.values())
    from pipeline.cluster import load_cluster_config

    command = load_cluster_config(cfg).worker_command.split()
    assert spec["worker"]["spec"]["containers"][0]["args"][: len(command)] == command


@pytest.mark.parametrize(
    "path, bad, message",
    [
        (("worker", "replicas"), "two", "spec.worker.replicas: expected integer"),
        (("worker", "spec", "containers", 0, "imagePullPolicy"), 3, "imagePullPolicy: expected string"),
        (("worker", "spec", "containers", 0, "resources", "limit"), {"cpu": "1"}, "resources.limit: unknown field"),
        (("scheduler", "service", "ports", 0, "port"), None, "ports[0].port: required"),
    ],
)
def test_the_schema_check_catches_broken_specs(crd, path, bad, message):
    """The checker is not vacuous: typical breakages are reported with their location."""
    spec = copy.deepcopy(spec_of(shipped())["spec"])
    node = spec
    for key in path[:-1]:
        node = node[key]
    if bad is None:
        del node[path[-1]]
    else:
        node[path[-1]] = bad
    found = violations(spec, crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"])
    assert any(message in f for f in found), found


@pytest.mark.parametrize(
    "change, message",
    [
        ({"name": "SDC_pipeline"}, "name: String should match pattern"),
        ({"name": "x" * 54}, "name: String should have at most 53 characters"),
        ({"resources": {"limits": {"memory": "4GiB"}}}, "'4GiB' is not a Kubernetes quantity"),
        ({"resources": {"limit": {"memory": "4Gi"}}}, "expected 'requests' and/or 'limits', got 'limit'"),
    ],
)
def test_config_rejects_what_kubernetes_would(change, message):
    """Mistakes the API server or dask-kubernetes would reject fail when the config is loaded."""
    from dask_kubernetes.exceptions import ValidationError

    from pipeline.cluster import load_cluster_config
    from pipeline.errors import TaskError

    with pytest.raises(TaskError, match=re.escape(message)):
        load_cluster_config({**shipped(), **change})
    if "name" in change:
        from dask_kubernetes.operator.validation import validate_cluster_name

        with pytest.raises(ValidationError):
            validate_cluster_name(change["name"])
