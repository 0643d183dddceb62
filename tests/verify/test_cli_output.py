"""`archkit verify` on the command line: exit codes, --fail-on, text/JSON/JUnit, --output, --print-rbac, errors."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from typer.testing import CliRunner

from archkit.cli import _load_commands, app
from tests.conftest import ROOT
from tests.verify.conftest import container

_load_commands()
runner = CliRunner()
SPEC = "examples/industrial-inspection.yaml"
FIX = "tests/verify/fixtures/industrial-inspection"


@pytest.fixture(autouse=True)
def _repo_root(monkeypatch):
    monkeypatch.chdir(ROOT)  # relative paths in reports, as a user would type them


def verify(*args):
    return runner.invoke(app, ["verify", *args])


@pytest.fixture
def drifted(cluster):
    """A manifests folder with two drifts: GPU requests != limits, and a missing liveness probe."""
    container(cluster.objs, "triton")["resources"]["limits"]["nvidia.com/gpu"] = "2"
    del container(cluster.objs, "preprocess")["livenessProbe"]
    cluster.manifests()
    return str(cluster.tmp / "manifests")


def test_clean_exit_0_and_drift_exit_1(drifted):
    assert verify(SPEC, "--snapshot", f"{FIX}/snapshot.yaml").exit_code == 0
    assert verify(SPEC, "--manifests", f"{FIX}/manifests").exit_code == 0
    res = verify(SPEC, "--manifests", drifted)
    assert res.exit_code == 1
    assert (
        "service 'triton' requests nvidia.com/gpu 1 but limits 2: Kubernetes refuses to schedule it"
        in res.output
    )
    assert res.output.rstrip().endswith(
        "kube: 47 pass, 3 drift, 5 unknown; total: 47 pass, 3 drift, 5 unknown"
    )


def test_fail_on(drifted):
    manifests = f"{FIX}/manifests"
    assert verify(SPEC, "--manifests", manifests, "--fail-on", "unknown").exit_code == 1  # pools are unknown
    assert verify(SPEC, "--manifests", drifted, "--fail-on", "never").exit_code == 0


def test_text_report_golden(golden, drifted):
    res = verify(SPEC, "--manifests", drifted, "--problems")
    text = res.output.replace(drifted, "<manifests>")
    golden.check(ROOT / "tests/verify/golden/industrial-drift.txt", text)


def test_json_report(drifted):
    res = verify(SPEC, "--manifests", drifted, "--format", "json")
    data = json.loads(res.output)
    assert data["totals"] == {"pass": 47, "drift": 3, "unknown": 5}
    gpu = next(f for f in data["findings"] if f["code"] == "VK121")
    assert gpu == {
        "area": "kube",
        "object": "service/triton",
        "code": "VK121",
        "check": "GPU requests = limits",
        "status": "drift",
        "file": SPEC,
        "line": 204,
        "col": 19,
        "path": "topology.services[2].resources.requests",
        "message": "service 'triton' requests nvidia.com/gpu 1 but limits 2: Kubernetes refuses to schedule it "
        "(seed 004 §2.3: GPU requests must equal limits)",
        "where": f"{drifted}/all.yaml:245",
    }
    assert data["sources"][0]["mode"] == "manifests"


def test_junit_report_and_output_file(drifted, tmp_path):
    out = tmp_path / "verify.xml"
    res = verify(SPEC, "--manifests", drifted, "--format", "junit", "--output", str(out))
    assert res.exit_code == 1
    root = ET.fromstring(out.read_text(encoding="utf-8"))
    assert (root.get("tests"), root.get("failures"), root.get("skipped")) == ("55", "3", "5")
    failures = root.findall(".//testcase[failure]")
    assert sorted(c.get("name") for c in failures) == [
        "VK120 requests and limits",
        "VK121 GPU requests = limits",
        "VK130 liveness probe",
    ]
    assert failures[0].get("file") == SPEC and int(failures[0].get("line")) > 1
    assert len(root.findall(".//testcase[skipped]")) == 5


def test_print_rbac():
    res = verify("--print-rbac")
    assert res.exit_code == 0
    assert res.output == (ROOT / "docs/verify-clusterrole.yaml").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "args,fragment",
    [
        (["--snapshot", "nope.yaml"], "archkit: nope.yaml: file not found"),
        (["--manifests", "nope/"], "archkit: nope: folder not found"),
        (
            ["--snapshot", f"{FIX}/snapshot.yaml", "--manifests", f"{FIX}/manifests"],
            "give one cluster source",
        ),
        (["--live", "--kubeconfig", "missing-kubeconfig"], "kubeconfig missing-kubeconfig not found"),
        (["--prometheus-url", "http://127.0.0.1:9", "--rules", "nope.yaml"], "cannot read the rules file"),
        (
            ["--manifests", f"{FIX}/manifests", "--env", "h100"],
            "examples/industrial-inspection.yaml: environment 'h100' is not defined (environments: t4)",
        ),
    ],
)
def test_input_errors_exit_2_without_traceback(args, fragment):
    res = verify(SPEC, *args)
    assert res.exit_code == 2, res.output
    assert fragment in res.output
    assert "Traceback" not in res.output


def test_broken_spec_exits_2():
    res = verify("tests/spec/broken/three-errors.yaml", "--snapshot", f"{FIX}/snapshot.yaml")
    assert res.exit_code == 2
    assert ": AK101 error " in res.output and "the spec has errors" in res.output


@pytest.mark.live
def test_live_through_the_cli(tmp_path):
    from tests.verify.cluster_fixtures import cluster_objects
    from tests.verify.k8s_standin import StandIn

    with StandIn(cluster_objects()) as s:
        kc = s.kubeconfig(tmp_path / "kc")
        res = verify(SPEC, "--kubeconfig", str(kc), "--context", "standin", "--format", "json")
        assert res.exit_code == 0, res.output
        data = json.loads(res.output)
        assert data["api_calls"] == len(s.calls) == 10
        assert data["totals"]["drift"] == 0 and data["totals"]["unknown"] == 0
        res = verify(SPEC, "--kubeconfig", str(kc), "--context", "stranger", "--fail-on", "unknown")
        assert res.exit_code == 1
        assert "401 Unauthorized" in res.output
