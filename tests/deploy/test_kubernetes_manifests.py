"""Generated Kubernetes manifests: valid for the Kubernetes API (kubernetes-validate, strict) and
held to the spec by `archkit verify --manifests` with zero drift; a deliberate edit is drift."""

from __future__ import annotations

from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from archkit.spec.model import Spec
from archkit.verify import Status
from archkit.verify.kube import check_cluster
from archkit.verify.state import load_manifests
from tests.conftest import EXAMPLES, OCR_SPEC, REFERENCE_SPECS
from tests.deploy.helpers import load_spec, render_one

SPECS = EXAMPLES + REFERENCE_SPECS
K8S_VERSIONS = ("1.30.0", "1.37.0")  # the reference deploy's and kubernetes-validate's newest


def _spec(path: Path) -> Spec:
    return load_spec(path)


def _render(spec: Spec, out: Path) -> Path:
    return render_one(spec, "kubernetes", out)


def _drift(spec: Spec, folder: Path) -> list[str]:
    return [
        f"{f.code} {f.message}"
        for f in check_cluster(spec, load_manifests(folder))
        if f.status is Status.DRIFT
    ]


@pytest.mark.parametrize("spec_file", SPECS, ids=[p.stem for p in SPECS])
def test_manifests_validate_and_have_zero_drift(spec_file: Path, tmp_path: Path) -> None:
    spec = _spec(spec_file)
    folder = _render(spec, tmp_path)
    docs = [d for f in sorted(folder.glob("*.yaml")) for d in yaml.safe_load_all(f.read_text()) if d]
    assert docs
    for doc in docs:
        for version in K8S_VERSIONS:
            kubernetes_validate.validate(doc, version, strict=True)
    assert _drift(spec, folder) == []
    findings = check_cluster(spec, load_manifests(folder))
    # every service's workload, ports, probes, security and placement are checked, not skipped
    assert sum(f.status is Status.PASS for f in findings) > 4 * len(spec.topology.services)


def test_reference_spec_objects(tmp_path: Path) -> None:
    """specs/ocr-reference.yaml: the Triton pod asks for one GPU as request and limit, lands on the
    GPU pool and tolerates its taint; the gateway (2 replicas) gets a PodDisruptionBudget."""
    folder = _render(_spec(OCR_SPEC), tmp_path)
    triton = list(yaml.safe_load_all((folder / "triton.yaml").read_text()))
    dep = next(d for d in triton if d["kind"] == "Deployment")
    pod = dep["spec"]["template"]["spec"]
    res = pod["containers"][0]["resources"]
    assert res["requests"]["nvidia.com/gpu"] == res["limits"]["nvidia.com/gpu"] == "1"
    assert pod["nodeSelector"] == {"archkit.io/pool": "gpu-pool"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"} in pod["containers"][0]["env"]
    gateway = list(yaml.safe_load_all((folder / "gateway.yaml").read_text()))
    kinds = [d["kind"] for d in gateway]
    assert kinds == ["Deployment", "Service", "NetworkPolicy", "PodDisruptionBudget"]
    assert (folder / "namespaces.yaml").is_file()


def test_replica_range_gets_an_autoscaler(tmp_path: Path) -> None:
    spec = _spec(OCR_SPEC)
    gw = spec.service("gateway")
    assert gw is not None
    gw.min_replicas, gw.max_replicas = 2, 6
    folder = _render(spec, tmp_path)
    docs = list(yaml.safe_load_all((folder / "gateway.yaml").read_text()))
    hpa = next(d for d in docs if d["kind"] == "HorizontalPodAutoscaler")
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 6)
    kubernetes_validate.validate(hpa, K8S_VERSIONS[0], strict=True)
    assert _drift(spec, folder) == []


def test_network_mount_gets_options_and_a_mount_checking_liveness(tmp_path: Path) -> None:
    """examples/recommendation.yaml: the NFS model repository is mounted soft with timeo/retrans
    through a PersistentVolume (seed 000 §3.3); a service with a network mount and no declared
    liveness probe gets one that stats the mount."""
    spec = _spec(next(p for p in EXAMPLES if p.stem == "recommendation"))
    ranker = spec.service("ranker")
    assert ranker is not None
    ranker.probes.liveness = None
    folder = _render(spec, tmp_path)
    docs = list(yaml.safe_load_all((folder / "ranker.yaml").read_text()))
    pv = next(d for d in docs if d["kind"] == "PersistentVolume")
    assert pv["spec"]["mountOptions"] == ["soft", "intr", "timeo=10", "retrans=3"]
    dep = next(d for d in docs if d["kind"] == "Deployment")
    probe = dep["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]
    assert probe["exec"]["command"] == ["sh", "-c", "timeout 5 stat -t /mnt/model >/dev/null"]


@pytest.mark.parametrize(
    ("file", "old", "new", "code"),
    [
        ("triton.yaml", "  replicas: 1\n", "  replicas: 3\n", "VK111"),
        ("triton.yaml", "nvidia.com/gpu: '1'\n", "nvidia.com/gpu: '2'\n", "VK120"),
        ("gateway.yaml", "runAsNonRoot: true", "runAsNonRoot: false", "VK140"),
        ("gateway.yaml", "archkit.io/pool: cpu-pool", "archkit.io/pool: gpu-pool", "VK113"),
        ("gateway.yaml", "      port: 8001\n", "      port: 8002\n", "VK172"),
    ],
)
def test_a_deliberate_edit_is_drift(tmp_path: Path, file: str, old: str, new: str, code: str) -> None:
    spec = _spec(OCR_SPEC)
    folder = _render(spec, tmp_path)
    path = folder / file
    text = path.read_text(encoding="utf-8")
    assert old in text, text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    assert code in {d.split()[0] for d in _drift(spec, folder)}
