"""The reference service's manifests (reference_service/deploy/) against specs/ocr-reference.yaml, offline."""

from __future__ import annotations

import pytest

from archkit.spec import load_file
from archkit.verify import Status
from archkit.verify.state import load_manifests
from tests.conftest import ROOT
from tests.verify.inputs import run

SPEC_FILE, DEPLOY = ROOT / "specs" / "ocr-reference.yaml", ROOT / "reference_service" / "deploy"
pytestmark = pytest.mark.skipif(
    not SPEC_FILE.exists() or not DEPLOY.is_dir(),
    reason="specs/ocr-reference.yaml or reference_service/deploy/ is not written yet",
)


@pytest.fixture
def ref():
    loaded = load_file(SPEC_FILE)
    assert loaded.spec is not None, "\n".join(d.text() for d in loaded.diagnostics)
    return loaded.spec, load_manifests(DEPLOY)


def _container(state, name):
    dep = next(d for d in state.items("Deployment") if d["metadata"]["name"] == name)
    return dep["spec"]["template"]["spec"]["containers"][0], dep


def test_reference_manifests_verify_clean(ref):
    spec, state = ref
    report = run(spec, state)
    assert [f for f in report.findings if f.status is Status.DRIFT] == []
    checked = {f.object for f in report.findings if f.status is Status.PASS}
    assert {"service/gateway", "service/triton"} <= checked


@pytest.mark.parametrize(
    "mutate,code,fragment",
    [
        (
            lambda s: _container(s, "ocr-triton")[0]["resources"]["limits"].__setitem__(
                "nvidia.com/gpu", "2"
            ),
            "VK121",
            "service 'triton' requests nvidia.com/gpu 1 but limits 2: Kubernetes refuses to schedule it",
        ),
        (
            lambda s: _container(s, "ocr-gateway")[0].pop("readinessProbe"),
            "VK131",
            "service 'gateway' has no readiness probe (readinessProbe): traffic reaches pods before their models are loaded",
        ),
        (
            lambda s: _container(s, "ocr-triton")[1]["spec"]["template"]["spec"]["nodeSelector"].__setitem__(
                "archkit.io/pool", "cpu-pool"
            ),
            "VK113",
            "does not match pool 'gpu-pool' labels archkit.io/pool=gpu-pool",
        ),
        (
            lambda s: _container(s, "ocr-gateway")[1]["spec"]["template"]["spec"][
                "securityContext"
            ].__setitem__("runAsUser", 0),
            "VK140",
            "service 'gateway' runs as root (runAsUser 0)",
        ),
        (
            lambda s: s.objects["NetworkPolicy"].clear(),
            "VK170",
            "no NetworkPolicy restricts ingress of 'triton'",
        ),
    ],
    ids=["gpu-limit", "readiness", "pool", "root", "no-netpol"],
)
def test_reference_drifts(ref, mutate, code, fragment):
    spec, state = ref
    mutate(state)
    found = [f for f in run(spec, state).findings if f.status is Status.DRIFT and f.code == code]
    assert any(fragment in f.message for f in found), [f.message for f in found]
