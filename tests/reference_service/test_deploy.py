"""Offline checks of the reference service's Kubernetes manifests and their match with the spec."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "reference_service" / "deploy"
K8S_VERSION = "1.30.0"


def documents():
    for path in sorted(DEPLOY.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                yield path.name, doc


def _ids():
    return [f"{name}:{doc['kind']}/{doc['metadata']['name']}" for name, doc in documents()]


@pytest.mark.parametrize("name,doc", list(documents()), ids=_ids())
def test_manifest_validates_against_kubernetes_schema(name, doc):
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def _deployments():
    return {doc["metadata"]["name"]: doc for _, doc in documents() if doc["kind"] == "Deployment"}


def test_pods_run_as_non_root_with_probes_and_resources():
    for name, dep in _deployments().items():
        pod = dep["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True, name
        for c in pod["containers"]:
            assert c["securityContext"]["allowPrivilegeEscalation"] is False, name
            assert c.get("readinessProbe") and c.get("livenessProbe"), name
            assert c["resources"]["requests"] and c["resources"]["limits"], name


def test_triton_gpu_requests_equal_limits_and_pools_match_spec():
    deps = _deployments()
    res = deps["ocr-triton"]["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert res["requests"]["nvidia.com/gpu"] == res["limits"]["nvidia.com/gpu"] == "1"
    spec = yaml.safe_load((ROOT / "specs" / "ocr-reference.yaml").read_text())
    pools = {p["id"]: p for p in spec["topology"]["node_pools"]}
    services = {s["id"]: s for s in spec["topology"]["services"]}
    for svc_id, dep_name in (("gateway", "ocr-gateway"), ("triton", "ocr-triton")):
        selector = deps[dep_name]["spec"]["template"]["spec"]["nodeSelector"]
        pool = pools[services[svc_id]["pool"]]
        assert all(pool["labels"].get(k) == v for k, v in selector.items()), (svc_id, selector)


def test_network_policy_default_denies_and_opens_only_grpc_to_triton():
    policies = {doc["metadata"]["name"]: doc for _, doc in documents() if doc["kind"] == "NetworkPolicy"}
    assert policies["default-deny"]["spec"]["podSelector"] == {}
    triton_ports = {p["port"] for rule in policies["ocr-triton"]["spec"]["ingress"] for p in rule["ports"]}
    assert triton_ports == {8001, 8002}


def test_archkit_verify_finds_no_drift_between_spec_and_manifests():
    """archkit's own offline verify: the manifests deploy what specs/ocr-reference.yaml says."""
    import json
    import shutil
    import subprocess
    import sys

    exe = Path(sys.executable).with_name("archkit")
    if not exe.exists():
        exe = shutil.which("archkit")
    if exe is None:
        pytest.skip("archkit CLI not installed in this environment")
    out = subprocess.run(
        [
            str(exe),
            "verify",
            str(ROOT / "specs" / "ocr-reference.yaml"),
            "--manifests",
            str(DEPLOY),
            "-f",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    json.loads(out.stdout)  # a well-formed report
