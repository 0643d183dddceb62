"""The live path: the real `kubernetes` client, a generated kubeconfig, real HTTP — against a stand-in.

No real Kubernetes API server can run on this machine (it needs etcd, certificates and
root), so `k8s_standin.StandIn` serves the API's list responses from the same fixture
objects the snapshot tests use. It paginates with `limit`/`continue`, answers 401, 403,
410 and 500 as the real server does, and counts every call.
"""

from __future__ import annotations

import math
import time

import pytest

from archkit.spec import load_file
from archkit.verify import Status
from archkit.verify.kube import namespaces_of
from archkit.verify.state import KINDS, read_live
from tests.verify.cluster_fixtures import INDUSTRIAL_SPEC, cluster_objects
from tests.verify.inputs import run
from tests.verify.k8s_standin import RESOURCES, StandIn

pytestmark = pytest.mark.live  # the stand-in API server listens on 127.0.0.1

SPEC = load_file(INDUSTRIAL_SPEC).spec
OBJECTS = cluster_objects()


@pytest.fixture
def standin():
    with StandIn(OBJECTS) as s:
        yield s


def _statuses(report) -> dict:
    return {(f.object, f.code, f.message): f.status for f in report.findings}


def test_live_read_equals_the_snapshot_and_paginates(standin, tmp_path, cluster):
    kc = standin.kubeconfig(tmp_path / "kubeconfig")
    state = read_live(kubeconfig=str(kc), page_size=2)
    report = run(SPEC, state)
    assert [f for f in report.findings if f.status is not Status.PASS] == []
    # same verdicts as from the snapshot file of the same objects
    assert {k[:2]: v for k, v in _statuses(report).items()} == {
        k[:2]: v for k, v in _statuses(cluster.snapshot()).items()
    }
    # one chain of list calls per kind: ceil(n / limit) pages (at least one), never one call per object
    for k in KINDS:
        n = sum(1 for o in OBJECTS if o["kind"] == k.kind)
        assert standin.calls_to(k.resource) == max(1, math.ceil(n / 2)), k.kind
        assert state.reads[k.kind].calls == max(1, math.ceil(n / 2))
    assert state.api_calls == len(standin.calls)
    assert all(q.get("limit") == ["2"] for _, q in standin.calls)
    assert standin.calls_to("secrets") == 0  # never read


def test_default_page_size_means_one_call_per_kind(standin, tmp_path):
    state = read_live(kubeconfig=str(standin.kubeconfig(tmp_path / "kc")))
    assert state.api_calls == len(KINDS) == len(standin.calls)


def test_forbidden_kinds_are_unknown_not_drift(standin, tmp_path):
    standin.forbidden = {"nodes", "networkpolicies"}
    state = read_live(kubeconfig=str(standin.kubeconfig(tmp_path / "kc")))
    report = run(SPEC, state)
    assert [f for f in report.findings if f.status is Status.DRIFT] == []
    pool = [f for f in report.findings if f.object.startswith("pool/")]
    assert pool and all(f.status is Status.UNKNOWN for f in pool)
    assert "403 Forbidden: this identity may not list nodes" in pool[0].message
    assert "archkit verify --print-rbac" in pool[0].message
    net = [f for f in report.findings if f.code == "VK170"]
    assert net and all(f.status is Status.UNKNOWN for f in net)
    # everything else was still checked
    assert any(f.code == "VK121" and f.status is Status.PASS for f in report.findings)
    assert report.failed("drift") is False and report.failed("unknown") is True


def test_cluster_wide_403_falls_back_to_the_spec_namespaces(standin, tmp_path):
    standin.forbidden_all = {"pods", "deployments", "services"}
    state = read_live(kubeconfig=str(standin.kubeconfig(tmp_path / "kc")), namespaces=namespaces_of(SPEC))
    assert state.reads["Deployment"].status == "complete"
    assert "read per namespace (default)" in state.reads["Deployment"].message
    assert any(p.endswith("/namespaces/default/deployments") for p, _ in standin.calls)
    report = run(SPEC, state)
    assert [f for f in report.findings if f.status is not Status.PASS] == []


def test_expired_continue_token_gives_a_partial_list(standin, tmp_path):
    standin.expire_on_page = {"pods": 2}
    state = read_live(kubeconfig=str(standin.kubeconfig(tmp_path / "kc")), page_size=2)
    read = state.reads["Pod"]
    assert read.status == "partial" and "410 Gone" in read.message
    assert len(state.items("Pod")) == 2  # the first page is kept
    report = run(SPEC, state)
    assert [f for f in report.findings if f.status is Status.DRIFT] == []
    on_pool = [f for f in report.findings if f.code == "VK115"]
    assert on_pool and all(
        f.status is Status.UNKNOWN and "not every pod could be read" in f.message for f in on_pool
    )


def test_server_error_mid_list_is_partial(standin, tmp_path):
    standin.error_on_page = {"nodes": 2}
    state = read_live(kubeconfig=str(standin.kubeconfig(tmp_path / "kc")), page_size=2)
    assert state.reads["Node"].status == "partial"
    assert "HTTP 500" in state.reads["Node"].message
    report = run(SPEC, state)
    assert {f.status for f in report.findings if f.object.startswith("pool/")} == {Status.UNKNOWN}


def test_401_with_another_context(standin, tmp_path):
    state = read_live(kubeconfig=str(standin.kubeconfig(tmp_path / "kc")), context="stranger")
    assert {r.status for r in state.reads.values()} == {"forbidden"}
    assert "401 Unauthorized" in state.reads["Node"].message
    report = run(SPEC, state)
    assert report.findings and all(f.status is Status.UNKNOWN for f in report.findings)


def test_timeout_stops_reading_with_a_clear_message(standin, tmp_path):
    standin.delay_s = {"pods": 3.0}
    started = time.monotonic()
    state = read_live(kubeconfig=str(standin.kubeconfig(tmp_path / "kc")), timeout_s=0.5)
    assert time.monotonic() - started < 2.5  # one timeout, not one per kind
    assert state.reads["Node"].status == "complete"
    assert state.reads["Pod"].status == "failed"
    assert "cannot reach the API server" in state.reads["Pod"].message
    assert state.reads["Deployment"].message == state.reads["Pod"].message
    report = run(SPEC, state)
    assert [f for f in report.findings if f.status is Status.DRIFT] == []


def test_unreachable_server(tmp_path):
    with StandIn([]) as s:
        kc = s.kubeconfig(tmp_path / "kc")
    state = read_live(kubeconfig=str(kc), timeout_s=1)
    assert state.api_calls == 1  # stops at the first refused connection
    assert all(r.status == "failed" for r in state.reads.values())


def test_stand_in_knows_every_kind_read():
    assert {k.resource for k in KINDS} <= set(RESOURCES)


def test_in_cluster_service_account_over_tls(tmp_path, monkeypatch):
    """In a pod: host/port from the environment, the token and CA from the service-account folder, HTTPS."""
    import shutil
    import subprocess

    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make the stand-in's TLS certificate")
    cert, key = tmp_path / "ca.crt", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    from tests.verify.k8s_standin import TOKEN

    (tmp_path / "token").write_text(TOKEN, encoding="utf-8")
    with StandIn(OBJECTS, tls=(str(cert), str(key))) as s:
        monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
        monkeypatch.setenv("KUBERNETES_SERVICE_PORT", str(s.port))
        state = read_live(in_cluster=True, service_account_dir=str(tmp_path))
        assert state.source == f"live cluster https://127.0.0.1:{s.port} (in-cluster service account)"
        assert state.api_calls == len(KINDS) == len(s.calls)
        report = run(SPEC, state)
        assert [f for f in report.findings if f.status is not Status.PASS] == []
        # a wrong CA is refused, not ignored: the read fails with a clear message
        other = tmp_path / "other"
        other.mkdir()
        subprocess.run(
            [
                "openssl",
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "1",
                "-subj",
                "/CN=other",
                "-keyout",
                str(other / "k.pem"),
                "-out",
                str(other / "ca.crt"),
            ],
            check=True,
            capture_output=True,
        )
        (other / "token").write_text(TOKEN, encoding="utf-8")
        state = read_live(in_cluster=True, service_account_dir=str(other), timeout_s=2)
        assert state.reads["Node"].status == "failed"
        assert "cannot reach the API server" in state.reads["Node"].message


def test_in_cluster_without_the_environment(monkeypatch, tmp_path):
    from archkit.verify.state import StateError

    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(
        StateError, match="cannot use the cluster configuration: Service host/port is not set"
    ):
        read_live(in_cluster=True, service_account_dir=str(tmp_path))
