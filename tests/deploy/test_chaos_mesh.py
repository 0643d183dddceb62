"""Chaos Mesh experiments from the chaos levels, validated against Chaos Mesh's published CRD schemas
(tests/deploy/chaos_mesh_crds/, copied from chaos-mesh/chaos-mesh with its licence): each object
must satisfy its CRD's openAPIV3Schema and carry no field the schema does not know (the API
server would prune it silently)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from archkit import api
from archkit.spec.model import Fault
from tests.conftest import EXAMPLES, OCR_SPEC, REFERENCE_SPECS
from tests.deploy.helpers import load_spec, render_one

SPECS = EXAMPLES + REFERENCE_SPECS
CRDS = Path(__file__).parent / "chaos_mesh_crds"


def _schemas() -> dict[str, dict[str, Any]]:
    out = {}
    for path in sorted(CRDS.glob("*.yaml")):
        crd = yaml.safe_load(path.read_text(encoding="utf-8"))
        version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1")
        out[crd["spec"]["names"]["kind"]] = version["schema"]["openAPIV3Schema"]
    return out


SCHEMAS = _schemas()


def unknown_fields(obj: Any, schema: dict[str, Any], path: str = "") -> list[str]:
    """Fields of obj that the structural schema does not declare (what the API server prunes)."""
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return []
    if isinstance(obj, dict):
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        out = []
        for k, v in obj.items():
            if props is not None and k in props:
                out += unknown_fields(v, props[k], f"{path}.{k}")
            elif isinstance(extra, dict):
                out += unknown_fields(v, extra, f"{path}.{k}")
            elif path != ".metadata" and k not in ("apiVersion", "kind", "metadata"):
                out.append(f"{path}.{k}")
        return out
    if isinstance(obj, list) and isinstance(schema.get("items"), dict):
        return [
            u for i, item in enumerate(obj) for u in unknown_fields(item, schema["items"], f"{path}[{i}]")
        ]
    return []


def _validate(doc: dict[str, Any]) -> None:
    schema = SCHEMAS[doc["kind"]]
    jsonschema.Draft4Validator(schema).validate(doc)
    assert unknown_fields(doc, schema) == []
    assert doc["apiVersion"] == "chaos-mesh.org/v1alpha1"


@pytest.mark.parametrize("spec_file", SPECS, ids=[p.stem for p in SPECS])
def test_experiments_satisfy_the_crd_schemas(spec_file: Path, tmp_path: Path) -> None:
    spec = load_spec(spec_file)
    faults = [f for lv in (spec.loadtest.levels if spec.loadtest else []) for f in lv.faults]
    if not faults:
        files, _ = api.generate(spec, spec_file.name, only=["chaosmesh"], formats=())
        assert files == {}
        return
    folder = render_one(spec, "chaosmesh", tmp_path)
    docs = [d for p in sorted(folder.glob("*.yaml")) for d in yaml.safe_load_all(p.read_text()) if d]
    assert len(docs) == len(faults)
    for doc in docs:
        _validate(doc)


def test_every_action_maps_to_an_experiment(tmp_path: Path) -> None:
    """Hand-checked mapping on the reference spec's triton service (namespace ocr-reference)."""
    spec = load_spec(OCR_SPEC)
    chaos = next(lv for lv in spec.loadtest.levels if lv.kind == "chaos")  # type: ignore[union-attr]
    chaos.faults = [
        Fault(at_s=1, action="kill", target="triton"),
        Fault(at_s=2, action="kill", target="triton", duration_s=10),
        Fault(at_s=3, action="restart", target="triton"),
        Fault(at_s=4, action="pause", target="triton", duration_s=5),
        Fault(at_s=5, action="stop", target="triton"),
        Fault(at_s=6, action="delay", target="gateway", delay_ms=250, duration_s=20),
        Fault(at_s=7, action="loss", target="gateway", loss_percent=12.5, duration_s=10),
        Fault(
            at_s=8,
            action="stress",
            target="triton",
            stress_cpu_workers=2,
            stress_memory_mib=512,
            duration_s=15,
        ),
    ]
    folder = render_one(spec, "chaosmesh", tmp_path)
    docs = list(yaml.safe_load_all((folder / "chaos.yaml").read_text()))
    for doc in docs:
        _validate(doc)
    got = [(d["kind"], d["spec"].get("action"), d["spec"].get("duration")) for d in docs]
    assert got == [
        ("PodChaos", "pod-kill", None),
        ("PodChaos", "pod-failure", "10s"),
        ("PodChaos", "container-kill", None),
        ("PodChaos", "pod-failure", "5s"),
        ("PodChaos", "pod-failure", "85s"),  # to the level's end: 90 s - 5 s
        ("NetworkChaos", "delay", "20s"),
        ("NetworkChaos", "loss", "10s"),
        ("StressChaos", None, "15s"),
    ]
    assert docs[0]["spec"]["selector"] == {
        "namespaces": ["ocr-reference"],
        "labelSelectors": {"app.kubernetes.io/name": "ocr-triton"},
    }
    assert docs[2]["spec"]["containerNames"] == ["triton"]
    assert docs[5]["spec"]["delay"] == {"latency": "250ms"}
    assert docs[6]["spec"]["loss"] == {"loss": "12.5"}
    assert docs[7]["spec"]["stressors"] == {
        "cpu": {"workers": 2, "load": 100},
        "memory": {"workers": 1, "size": "512MiB"},
    }
    assert docs[7]["spec"]["containerNames"] == ["triton"]


def test_loss_and_stress_need_their_amounts() -> None:
    with pytest.raises(ValueError, match="loss_percent"):
        Fault(at_s=1, action="loss", target="gateway")
    with pytest.raises(ValueError, match="stress_cpu_workers"):
        Fault(at_s=1, action="stress", target="gateway")


def test_a_wrong_field_is_caught_by_the_schema() -> None:
    """The schema check can fail: an action Chaos Mesh does not have, a field it would prune."""
    doc = {
        "apiVersion": "chaos-mesh.org/v1alpha1",
        "kind": "PodChaos",
        "metadata": {"name": "x"},
        "spec": {"action": "pod-explode", "mode": "all", "selector": {}},
    }
    with pytest.raises(jsonschema.ValidationError):
        _validate(doc)
    doc["spec"]["action"] = "pod-kill"
    doc["spec"]["latency"] = "1s"
    assert unknown_fields(doc, SCHEMAS["PodChaos"]) == [".spec.latency"]


def test_the_local_runner_refuses_what_only_a_cluster_can_inject() -> None:
    from archkit.loadtest.chaos import ChaosError, Injector

    for fault in (
        Fault(at_s=1, action="loss", target="gateway", loss_percent=5),
        Fault(at_s=1, action="stress", target="gateway", stress_cpu_workers=1),
    ):
        with pytest.raises(ChaosError, match="chaos-mesh/"):
            Injector([fault], {}, {}).preflight()
