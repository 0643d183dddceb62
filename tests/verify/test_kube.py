"""Kubernetes checks: the clean fixtures verify clean; each kind of drift is found with a clear message."""

from __future__ import annotations

from pathlib import Path

import pytest

from archkit.verify import Status
from tests.verify.conftest import container, drifts, find, pod_spec

# ------------------------------------------------------------------------- clean


def test_clean_manifests_have_no_drift(cluster):
    report = cluster.manifests()
    assert drifts(report) == []
    unknown = {(f.object, f.code) for f in report.findings if f.status is Status.UNKNOWN}
    # manifests carry no nodes and no status: pool checks and ready replicas are unknown, not drift
    assert unknown == {
        ("pool/gpu-node-t4", "VK101"),
        ("pool/cpu-node", "VK101"),
        ("service/edge-gateway", "VK112"),
        ("service/preprocess", "VK112"),
        ("service/triton", "VK112"),
    }
    assert len([f for f in report.findings if f.status is Status.PASS]) >= 45


def test_clean_snapshot_passes_everything(cluster):
    report = cluster.snapshot()
    assert [f for f in report.findings if f.status is not Status.PASS] == []
    codes = {f.code for f in report.findings}
    assert {"VK101", "VK102", "VK103", "VK112", "VK113", "VK114", "VK115", "VK121", "VK151", "VK170"} <= codes


def test_findings_point_at_the_spec_line(cluster):
    report = cluster.snapshot()
    f = next(f for f in report.findings if f.object == "service/triton" and f.code == "VK111")
    lines = Path(f.file).read_text(encoding="utf-8").splitlines()
    assert lines[f.line - 1].strip() == "replicas: 2"
    assert f.path == "topology.services[2].replicas"


# ------------------------------------------------------------------------- one mutation per kind of drift


def _set_replicas(o):
    find(o, "Deployment", "triton")["spec"]["replicas"] = 3


def _not_ready(o):
    find(o, "Deployment", "triton")["status"]["readyReplicas"] = 1


def _gpu_limit_2(o):
    container(o, "triton")["resources"]["limits"]["nvidia.com/gpu"] = "2"


def _gpu_no_limit(o):
    del container(o, "triton")["resources"]["limits"]["nvidia.com/gpu"]


def _all_capabilities(o):
    container(o, "triton")["env"] = [{"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "all"}]


def _no_capabilities(o):
    del container(o, "triton")["env"]


def _visible_devices(o):
    container(o, "preprocess").setdefault("env", []).append(
        {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}
    )


def _memory(o):
    container(o, "triton")["resources"]["limits"]["memory"] = "4Gi"


def _no_liveness(o):
    del container(o, "triton")["livenessProbe"]


def _readiness_path(o):
    container(o, "triton")["readinessProbe"]["httpGet"]["path"] = "/v2/health/live"


def _liveness_timeout(o):
    container(o, "triton")["livenessProbe"]["timeoutSeconds"] = 1


def _root(o):
    pod_spec(o, "triton")["securityContext"]["runAsUser"] = 0


def _no_nonroot(o):
    del pod_spec(o, "preprocess")["securityContext"]["runAsNonRoot"]


def _privileged(o):
    container(o, "edge-gateway")["securityContext"] = {"privileged": True}


def _no_sysctl(o):
    del pod_spec(o, "triton")["securityContext"]["sysctls"]


def _nfs_no_soft(o):
    find(o, "PersistentVolume", "model-repo")["spec"]["mountOptions"] = ["hard", "timeo=600"]


def _nfs_inline(o):
    pod_spec(o, "triton")["volumes"] = [
        {"name": "model-repo", "nfs": {"server": "nfs.factory.example", "path": "/models"}}
    ]


def _no_mount(o):
    container(o, "triton")["volumeMounts"] = []


def _mount_rw(o):
    container(o, "triton")["volumeMounts"][0]["readOnly"] = False


def _tmpfs_on_disk(o):
    pod_spec(o, "preprocess")["volumes"][0]["emptyDir"] = {}


def _wrong_selector(o):
    pod_spec(o, "triton")["nodeSelector"] = {"hardware-type": "cpu"}


def _no_selector(o):
    del pod_spec(o, "triton")["nodeSelector"]


def _no_toleration(o):
    del pod_spec(o, "triton")["tolerations"]


def _no_container_port(o):
    container(o, "triton")["ports"] = [
        p for p in container(o, "triton")["ports"] if p["containerPort"] != 8001
    ]


def _service_port(o):
    svc = find(o, "Service", "triton")
    svc["spec"]["ports"] = [p for p in svc["spec"]["ports"] if p["port"] != 8001]


def _no_service(o):
    o.remove(find(o, "Service", "edge-gateway"))


def _nodeport(o):
    find(o, "Service", "triton")["spec"]["type"] = "NodePort"


def _no_netpol(o):
    o.remove(find(o, "NetworkPolicy", "triton-ingress"))


def _netpol_open(o):
    del find(o, "NetworkPolicy", "triton-ingress")["spec"]["ingress"][0]["from"]


def _netpol_wrong_peer(o):
    find(o, "NetworkPolicy", "triton-ingress")["spec"]["ingress"][0]["from"] = [
        {"podSelector": {"matchLabels": {"app": "preprocess"}}}
    ]


def _netpol_wrong_port(o):
    find(o, "NetworkPolicy", "edge-gateway-ingress")["spec"]["ingress"][0]["ports"] = [{"port": 80}]


def _no_workload(o):
    o.remove(find(o, "Deployment", "triton"))


def _image(o):
    container(o, "edge-gateway")["image"] = "nginx:latest"


def _one_gpu_node(o):
    o.remove(find(o, "Node", "gpu-node-t4-2"))


def _no_gpu_alloc(o):
    find(o, "Node", "gpu-node-t4-1")["status"]["allocatable"].pop("nvidia.com/gpu")


def _untainted(o):
    find(o, "Node", "gpu-node-t4-2")["spec"].pop("taints")


def _pod_elsewhere(o):
    find(o, "Pod", "triton-1")["spec"]["nodeName"] = "cpu-node-1"


# (id, mutation, source, code, message fragment)
CASES = [
    (
        "replicas",
        _set_replicas,
        "manifests",
        "VK111",
        "service 'triton' runs 3 replica(s), the spec declares 2",
    ),
    ("not-ready", _not_ready, "snapshot", "VK112", "only 1 of 2 replica(s) of 'triton' are ready"),
    (
        "gpu-requests-ne-limits",
        _gpu_limit_2,
        "manifests",
        "VK121",
        "service 'triton' requests nvidia.com/gpu 1 but limits 2: Kubernetes refuses to schedule it (seed 004 §2.3",
    ),
    ("gpu-no-limit", _gpu_no_limit, "manifests", "VK121", "requests nvidia.com/gpu 1 but sets no limit"),
    ("memory", _memory, "manifests", "VK120", "limits.memory is 4Gi, the spec declares 8192 MiB"),
    (
        "no-liveness",
        _no_liveness,
        "manifests",
        "VK130",
        "service 'triton' has no liveness probe (livenessProbe): a hung process (e.g. stuck on NFS) is never restarted",
    ),
    (
        "readiness-path",
        _readiness_path,
        "manifests",
        "VK131",
        "path /v2/health/live instead of /v2/health/ready",
    ),
    ("liveness-timeout", _liveness_timeout, "manifests", "VK130", "timeoutSeconds 1 instead of 6"),
    ("root", _root, "manifests", "VK140", "service 'triton' runs as root (runAsUser 0)"),
    ("no-run-as-non-root", _no_nonroot, "manifests", "VK140", "does not set runAsNonRoot: true"),
    ("privileged", _privileged, "manifests", "VK142", "container of 'edge-gateway' is privileged"),
    ("sysctls", _no_sysctl, "manifests", "VK144", "lack net.core.somaxconn=65535 (not set)"),
    (
        "nfs-options",
        _nfs_no_soft,
        "manifests",
        "VK151",
        "NFS volume 'model-repo' (PersistentVolume 'model-repo') is mounted without soft, intr, timeo=10, retrans=3",
    ),
    (
        "nfs-inline",
        _nfs_inline,
        "manifests",
        "VK151",
        "inline nfs volume in 'triton', which cannot carry mount options",
    ),
    ("no-mount", _no_mount, "manifests", "VK150", "does not mount 'model-repo' at /mnt/model"),
    ("mount-rw", _mount_rw, "manifests", "VK150", "mounted read-write, the spec declares read-only"),
    ("tmpfs", _tmpfs_on_disk, "manifests", "VK150", "the emptyDir is not medium: Memory (tmpfs)"),
    (
        "wrong-selector",
        _wrong_selector,
        "manifests",
        "VK113",
        "nodeSelector hardware-type=cpu of 'triton' does not match pool 'gpu-node-t4' labels hardware-type=t4-gpu",
    ),
    (
        "wrong-selector-live",
        _wrong_selector,
        "snapshot",
        "VK113",
        "nodeSelector hardware-type=cpu of 'triton' matches no node of pool 'gpu-node-t4'",
    ),
    (
        "no-selector",
        _no_selector,
        "manifests",
        "VK113",
        "its pods can land on any node, not only on pool 'gpu-node-t4'",
    ),
    (
        "no-toleration",
        _no_toleration,
        "manifests",
        "VK114",
        "does not tolerate the taint(s) nvidia.com/gpu=present:NoSchedule of pool 'gpu-node-t4'",
    ),
    ("container-port", _no_container_port, "manifests", "VK160", "does not expose port 8001/TCP (grpc)"),
    ("service-port", _service_port, "manifests", "VK161", "no Service of 'triton' serves port 8001 (grpc)"),
    (
        "no-service",
        _no_service,
        "manifests",
        "VK161",
        "no Kubernetes Service selects the pods of 'edge-gateway'",
    ),
    (
        "nodeport",
        _nodeport,
        "manifests",
        "VK162",
        "Service triton is NodePort: 'triton' is reachable from outside",
    ),
    (
        "no-netpol",
        _no_netpol,
        "manifests",
        "VK170",
        "no NetworkPolicy restricts ingress of 'triton': every pod can connect to it; the spec allows only "
        "service:edge-gateway on 8000",
    ),
    ("netpol-open", _netpol_open, "manifests", "VK171", "triton-ingress admits every source"),
    (
        "netpol-wrong-peer",
        _netpol_wrong_peer,
        "manifests",
        "VK170",
        "does not allow ingress from service:edge-gateway on 8000 for 'triton'",
    ),
    ("netpol-wrong-port", _netpol_wrong_port, "manifests", "VK170", "ingress from 10.20.0.0/16 on 8080"),
    (
        "no-workload",
        _no_workload,
        "manifests",
        "VK110",
        "service 'triton' is not deployed: no Deployment named 'triton' in namespace 'default'",
    ),
    ("image", _image, "manifests", "VK116", "runs image nginx:latest"),
    (
        "pool-count",
        _one_gpu_node,
        "snapshot",
        "VK101",
        "pool 'gpu-node-t4' has 1 node(s) labelled hardware-type=t4-gpu (gpu-node-t4-1), the spec declares 2",
    ),
    (
        "nvidia-caps-all",
        _all_capabilities,
        "manifests",
        "VK122",
        "service 'triton' NVIDIA_DRIVER_CAPABILITIES is 'all', the spec's is 'compute,utility'",
    ),
    (
        "nvidia-caps-unset",
        _no_capabilities,
        "snapshot",
        "VK122",
        "service 'triton' sets no NVIDIA_DRIVER_CAPABILITIES (the spec's NVIDIA_DRIVER_CAPABILITIES=compute,utility; "
        "unset, the image decides)",
    ),
    (
        "nvidia-visible-devices",
        _visible_devices,
        "manifests",
        "VK122",
        "service 'preprocess' sets NVIDIA_VISIBLE_DEVICES=all, which the spec does not declare: it bypasses the GPUs "
        "the device plugin allocates",
    ),
    ("pool-gpu", _no_gpu_alloc, "snapshot", "VK102", "gpu-node-t4-1 has none"),
    ("pool-taint", _untainted, "snapshot", "VK103", "gpu-node-t4-2 lacks nvidia.com/gpu=present:NoSchedule"),
    ("pod-off-pool", _pod_elsewhere, "snapshot", "VK115", "triton-1 on cpu-node-1"),
]


@pytest.mark.parametrize("mutate,source,code,fragment", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_drift_is_found(cluster, mutate, source, code, fragment):
    mutate(cluster.objs)
    report = cluster.snapshot() if source == "snapshot" else cluster.manifests()
    found = [f for f in drifts(report) if f.code == code]
    assert found, f"no {code} drift; drifts: {[(f.code, f.message) for f in drifts(report)]}"
    assert any(fragment in f.message for f in found), [f.message for f in found]
    assert report.failed("drift")
    # every drift names a spec line
    assert all(f.line > 1 and f.file.endswith("industrial-inspection.yaml") for f in found)


def test_a_mutation_only_touches_its_own_checks(cluster):
    _gpu_limit_2(cluster.objs)
    codes = {(f.object, f.code) for f in drifts(cluster.manifests())}
    assert codes == {("service/triton", "VK120"), ("service/triton", "VK121")}


# ------------------------------------------------------------------------- namespaces, port ranges, hosts


def _with_rules(cluster, ingress=(), egress=()):
    from archkit.spec.model import EgressRule, IngressRule

    svc = cluster.spec.service("preprocess")
    svc.ingress += [IngressRule.model_validate(r) for r in ingress]
    svc.egress += [EgressRule.model_validate(r) for r in egress]


def test_namespace_sources_and_port_ranges(cluster):
    _with_rules(cluster, ingress=[{"from": "namespace:monitoring", "ports": [9100]}])
    pol = find(cluster.objs, "NetworkPolicy", "preprocess-ingress")
    pol["spec"]["ingress"].append(
        {
            "from": [
                {
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
                    "podSelector": {"matchLabels": {"app": "prometheus"}},
                }
            ],
            "ports": [{"port": 9000, "endPort": 9200}],
        }
    )
    assert drifts(cluster.manifests()) == []
    pol["spec"]["ingress"][1]["from"][0]["namespaceSelector"]["matchLabels"][
        "kubernetes.io/metadata.name"
    ] = "ops"
    found = {(f.code, f.message) for f in drifts(cluster.manifests())}
    assert any(
        c == "VK170" and "does not allow ingress from namespace:monitoring on 9100" in m for c, m in found
    )
    assert any(
        c == "VK171" and "preprocess-ingress admits namespace ops / pods app=prometheus" in m
        for c, m in found
    )


def test_egress_to_a_service_and_to_a_host(cluster):
    _with_rules(cluster, egress=[{"to": "service:triton", "ports": [8001]}, {"to": "minio.factory.example"}])
    report = cluster.manifests()
    f = next(f for f in drifts(report) if f.code == "VK172")
    assert "no NetworkPolicy restricts egress of 'preprocess'" in f.message
    cluster.objs.append(
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "preprocess-egress", "namespace": "default"},
            "spec": {
                "podSelector": {"matchLabels": {"app": "preprocess"}},
                "policyTypes": ["Egress"],
                "egress": [
                    {"to": [{"podSelector": {"matchLabels": {"app": "triton"}}}], "ports": [{"port": 8001}]}
                ],
            },
        }
    )
    report = cluster.manifests()
    assert drifts(report) == []
    host = next(f for f in report.findings if f.code == "VK172" and f.status is Status.UNKNOWN)
    assert "a NetworkPolicy cannot name the host 'minio.factory.example'" in host.message


# ------------------------------------------------------------------------- finding workloads


def test_workload_found_by_labels_and_kind(cluster):
    from archkit.spec.model import KubeRef

    dep = find(cluster.objs, "Deployment", "triton")
    dep["metadata"]["name"] = "triton-inference-server"
    svc = cluster.spec.service("triton")
    assert next(f for f in drifts(cluster.manifests()) if f.code == "VK110")
    svc.kubernetes = KubeRef(labels={"app": "triton"})
    report = cluster.manifests()
    assert drifts(report) == []
    assert (
        next(f for f in report.findings if f.code == "VK110" and f.object == "service/triton").message
        == "Deployment default/triton-inference-server"
    )


def test_statefulset_where_the_spec_says_deployment(cluster):
    from archkit.spec.model import KubeRef

    find(cluster.objs, "Deployment", "triton")["kind"] = "StatefulSet"
    f = next(f for f in drifts(cluster.manifests()) if f.code == "VK110")
    assert f.message == "service 'triton' is deployed as StatefulSet 'triton', the spec says Deployment"
    cluster.spec.service("triton").kubernetes = KubeRef(kind="StatefulSet")
    assert drifts(cluster.manifests()) == []


def test_daemonset_ready_counts(cluster):
    from archkit.spec.model import KubeRef

    ds = find(cluster.objs, "Deployment", "edge-gateway")
    ds["kind"] = "DaemonSet"
    del ds["spec"]["replicas"]
    ds["status"] = {"desiredNumberScheduled": 2, "numberReady": 1}
    cluster.spec.service("edge-gateway").kubernetes = KubeRef(kind="DaemonSet")
    f = next(f for f in drifts(cluster.snapshot()) if f.code == "VK112")
    assert f.message == "only 1 of 2 replica(s) of 'edge-gateway' are ready"


def test_external_services_are_not_checked(cluster):
    # preprocess: no other service's policy names it as a peer (an external peer would need an
    # ipBlock, which VK171 checks)
    cluster.spec.service("preprocess").external = True
    cluster.objs.remove(find(cluster.objs, "Deployment", "preprocess"))
    report = cluster.manifests()
    assert drifts(report) == []
    assert not [f for f in report.findings if f.object == "service/preprocess"]


def test_named_container_missing(cluster):
    from archkit.spec.model import KubeRef

    cluster.spec.service("triton").kubernetes = KubeRef(container="tritonserver")
    f = next(f for f in drifts(cluster.manifests()) if f.code == "VK110")
    assert f.message == "Deployment 'triton' has no container named 'tritonserver'; checking 'triton' instead"
