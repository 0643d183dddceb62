"""The `kubernetes` generator: manifests per service, from the topology (seed 000 §2.2, §3.3, §4.1, §5.11).

`kubernetes/<service>.yaml` holds the service's workload (Deployment, StatefulSet or DaemonSet, as
`kubernetes.kind` says) and what goes with it: its Service (ports), NetworkPolicy (the declared
ingress and egress, nothing more), PodDisruptionBudget (two replicas or more),
HorizontalPodAutoscaler (replicas a range) and the volumes its mounts need (an NFS mount with
options is a PersistentVolume, since an inline nfs volume cannot carry them: seed 000 §3.3).
Namespaces are `kubernetes/namespaces.yaml`. Every value comes from the spec: resources (GPU
requests = limits, seed 004 §2.3), placement on the service's pool (its labels as nodeSelector, its
taints tolerated), probes, the non-root security context (seed 000 §4.1), sysctls, env. `archkit
verify SPEC --manifests DIR` reads the same files back: generated manifests have zero drift (a test).
"""

from __future__ import annotations

import math
import re
from typing import Any

import yaml

from archkit.generators.registry import RenderContext, register
from archkit.spec.gpu_env import container_env
from archkit.spec.model import NodePool, Probe, Service, Spec, Storage

GPU = "nvidia.com/gpu"
WORLD = {"0.0.0.0/0", "::/0", "public", "*"}  # what the checks read as "anyone" (AK504/AK505)
_CIDR = re.compile(r"^[0-9a-fA-F:.]+/\d{1,3}$")
NETWORK_FS = ("nfs", "cephfs")


class _Dumper(yaml.SafeDumper):
    """Block style, keys in the order built, long strings unbroken, no anchors (each object whole)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def dump_documents(docs: list[dict[str, Any]]) -> str:
    """Kubernetes-style YAML documents joined by `---` (block style, keys in the order given)."""
    return "---\n".join(
        yaml.dump(
            d, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=1000, allow_unicode=True
        )
        for d in docs
    )


def dns_label(text: str) -> str:
    """A Kubernetes name (RFC 1123 label): lower case, digits and '-', at most 63 characters."""
    s = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:63].strip("-")
    return s or "x"


def names(spec: Spec, svc: Service) -> tuple[str, str, str, dict[str, str]]:
    """(workload name, namespace, container name, pod labels) as verify looks them up."""
    ref = svc.kubernetes
    name = ref.name if ref and ref.name else dns_label(svc.id)
    ns = ref.namespace if ref else "default"
    container = ref.container if ref and ref.container else dns_label(svc.id)
    labels = dict(ref.labels) if ref and ref.labels else {"app.kubernetes.io/name": name}
    return name, ns, container, labels


def cpu(cores: float) -> str:
    return str(int(cores)) if float(cores).is_integer() else f"{round(cores * 1000)}m"


def memory(mib: float) -> str:
    return f"{int(mib)}Mi" if float(mib).is_integer() else f"{round(mib * 1024)}Ki"


def gib(size: float) -> str:
    return f"{int(size)}Gi" if float(size).is_integer() else memory(size * 1024)


def _resources(svc: Service) -> dict[str, Any]:
    out: dict[str, Any] = {}
    gpu = svc.resources.limits.gpu if svc.resources.limits.gpu is not None else svc.resources.requests.gpu
    for side in ("requests", "limits"):
        amounts = getattr(svc.resources, side)
        got: dict[str, str] = {}
        if amounts.cpu_cores is not None:
            got["cpu"] = cpu(amounts.cpu_cores)
        if amounts.memory_mib is not None:
            got["memory"] = memory(amounts.memory_mib)
        if gpu:
            got[GPU] = str(int(math.ceil(gpu)))  # requests = limits: Kubernetes refuses anything else
        if got:
            out[side] = got
    return out


def _seconds(value: float) -> int:
    return max(1, math.ceil(value))


def _probe(p: Probe) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if p.exec is not None:
        out["exec"] = {"command": list(p.exec)}
    elif p.tcp_port is not None:
        out["tcpSocket"] = {"port": p.tcp_port}
    else:
        out["httpGet"] = {"path": p.http_path or "/", "port": p.port if p.port is not None else 80}
    out["initialDelaySeconds"] = math.ceil(p.initial_delay_s)
    out["periodSeconds"] = _seconds(p.period_s)
    out["timeoutSeconds"] = _seconds(p.timeout_s)
    out["failureThreshold"] = p.failure_threshold
    return out


def _mount_probe(paths: list[str]) -> dict[str, Any]:
    """Seed 000 §3.3: a liveness probe that stats each network mount, so a hung NFS restarts the pod."""
    script = " && ".join(f"timeout 5 stat -t {p} >/dev/null" for p in paths)
    return {
        "exec": {"command": ["sh", "-c", script]},
        "periodSeconds": 10,
        "timeoutSeconds": 6,
        "failureThreshold": 3,
    }


def _peer(spec: Spec, rule: str, ns: str) -> dict[str, Any] | None:
    """A NetworkPolicy peer for a declared source or destination; None for a host name."""
    rule = rule.strip()
    if rule in WORLD:
        return {"ipBlock": {"cidr": "0.0.0.0/0"}}
    if rule.startswith("namespace:"):
        return {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": rule.split(":", 1)[1]}}}
    if rule.startswith("service:"):
        other = spec.service(rule.split(":", 1)[1])
        if other is None:
            return None
        _, other_ns, _, labels = names(spec, other)
        peer: dict[str, Any] = {"podSelector": {"matchLabels": labels}}
        if other_ns != ns:
            peer = {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": other_ns}},
                "podSelector": {"matchLabels": labels},
            }
        return peer
    if _CIDR.match(rule):
        return {"ipBlock": {"cidr": rule}}
    return None


def _network_policy(spec: Spec, svc: Service, name: str, ns: str, labels: dict[str, str]) -> dict[str, Any]:
    types: list[str] = []
    body: dict[str, Any] = {"podSelector": {"matchLabels": labels}}
    if svc.ingress:
        types.append("Ingress")
        body["ingress"] = []
        for rule in svc.ingress:
            peer = _peer(spec, rule.from_, ns)
            if peer is None:
                continue
            entry: dict[str, Any] = {"from": [peer]}
            if rule.ports:
                entry["ports"] = [{"protocol": "TCP", "port": p} for p in rule.ports]
            body["ingress"].append(entry)
    if svc.egress:
        types.append("Egress")
        # name resolution: without it no declared destination can be found by name
        body["egress"] = [
            {
                "to": [
                    {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}}
                ],
                "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
            }
        ]
        for out_rule in svc.egress:
            peer = _peer(spec, out_rule.to, ns)
            if peer is None:
                continue  # a host name: NetworkPolicies cannot name hosts (an egress gateway can)
            entry = {"to": [peer]}
            if out_rule.ports:
                entry["ports"] = [{"protocol": "TCP", "port": p} for p in out_rule.ports]
            body["egress"].append(entry)
    body["policyTypes"] = types
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": body,
    }


def _volumes(
    spec: Spec, svc: Service, name: str, ns: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """(pod volumes, container volumeMounts, extra objects: PersistentVolumes and claims)."""
    vols: list[dict[str, Any]] = []
    mounts: list[dict[str, Any]] = []
    extra: list[dict[str, Any]] = []
    for m in svc.mounts:
        st: Storage | None = spec.by_id("storage").get(m.storage)
        if st is None or st.type in ("s3", "redis", "database"):
            continue
        vname = dns_label(st.id)
        vol: dict[str, Any] = {"name": vname}
        size = {"sizeLimit": gib(st.size_gib)} if st.size_gib else {}
        if st.type == "emptydir":
            vol["emptyDir"] = size
        elif st.type == "tmpfs":
            vol["emptyDir"] = {"medium": "Memory", **size}
        elif st.type in ("hostpath", "local"):
            vol["hostPath"] = {"path": st.source or m.path, "type": "Directory"}
        elif st.type == "nfs" and not st.mount_options:
            server, _, path = (st.source or ":/").partition(":")
            vol["nfs"] = {"server": server, "path": path or "/", "readOnly": m.read_only}
        else:
            claim = st.source if st.type == "pvc" and st.source else f"{name}-{vname}"
            vol["persistentVolumeClaim"] = {"claimName": claim, "readOnly": m.read_only}
            if st.type != "pvc":
                extra += _claim(st, claim, ns, m.read_only)
        vols.append(vol)
        mount: dict[str, Any] = {"name": vname, "mountPath": m.path}
        if m.read_only:
            mount["readOnly"] = True
        mounts.append(mount)
    return vols, mounts, extra


def _claim(st: Storage, claim: str, ns: str, read_only: bool) -> list[dict[str, Any]]:
    """A PersistentVolume carrying the storage's mount options, and its claim (bound by name)."""
    mode = "ReadOnlyMany" if read_only else "ReadWriteMany"
    size = gib(st.size_gib or 1)
    pv_spec: dict[str, Any] = {
        "capacity": {"storage": size},
        "accessModes": [mode],
        "persistentVolumeReclaimPolicy": "Retain",
        "storageClassName": "",
        "claimRef": {"namespace": ns, "name": claim},
    }
    if st.mount_options:
        pv_spec["mountOptions"] = list(st.mount_options)
    if st.type == "nfs":
        server, _, path = (st.source or ":/").partition(":")
        pv_spec["nfs"] = {"server": server, "path": path or "/"}
    else:  # cephfs: source "mon1,mon2:/path"
        monitors, _, path = (st.source or ":/").partition(":/")
        pv_spec["cephfs"] = {
            "monitors": [m for m in monitors.split(",") if m] or ["ceph-mon"],
            "path": "/" + path,
        }
    return [
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": f"{ns}-{claim}"},
            "spec": pv_spec,
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": claim, "namespace": ns},
            "spec": {
                "accessModes": [mode],
                "storageClassName": "",
                "volumeName": f"{ns}-{claim}",
                "resources": {"requests": {"storage": size}},
            },
        },
    ]


def _pod_security(svc: Service) -> dict[str, Any]:
    sec = svc.security
    root = sec.run_as_user == 0 or sec.run_as_non_root is False
    out: dict[str, Any] = {"runAsNonRoot": not root}
    if sec.run_as_user is not None:
        out["runAsUser"] = sec.run_as_user
        out["runAsGroup"] = sec.run_as_user
        out["fsGroup"] = sec.run_as_user
    out["seccompProfile"] = {"type": "RuntimeDefault"}
    if svc.sysctls:
        out["sysctls"] = [{"name": k, "value": str(v)} for k, v in sorted(svc.sysctls.items())]
    return out


def _placement(pool: NodePool | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if pool is None:
        return out
    if pool.labels:
        out["nodeSelector"] = dict(sorted(pool.labels.items()))
    if pool.taints:
        tols = []
        for t in pool.taints:
            tol: dict[str, Any] = {"key": t.key, "operator": "Equal" if t.value is not None else "Exists"}
            if t.value is not None:
                tol["value"] = t.value
            tol["effect"] = t.effect
            tols.append(tol)
        out["tolerations"] = tols
    return out


def _env(spec: Spec, svc: Service, pool: NodePool | None) -> list[dict[str, str]]:
    return [{"name": k, "value": v} for k, v in sorted(container_env(svc, pool).items())]


def workload(spec: Spec, svc: Service) -> list[dict[str, Any]]:
    """The service's workload and its companion objects, in apply order."""
    name, ns, cname, labels = names(spec, svc)
    kind = svc.kubernetes.kind if svc.kubernetes else "Deployment"
    pool = spec.pool(svc.pool)
    all_labels = {**labels, "app.kubernetes.io/part-of": spec.metadata.name}
    meta: dict[str, Any] = {"name": name, "namespace": ns, "labels": all_labels}
    container: dict[str, Any] = {"name": cname}
    if svc.image:
        container["image"] = svc.image
    env = _env(spec, svc, pool)
    if env:
        container["env"] = env
    if svc.ports:
        container["ports"] = [
            {"name": dns_label(p.name)[:15], "containerPort": p.port, "protocol": p.protocol}
            for p in svc.ports
        ]
    res = _resources(svc)
    if res:
        container["resources"] = res
    vols, vmounts, extra = _volumes(spec, svc, name, ns)
    net_paths = [
        m.path
        for m in svc.mounts
        if (st := spec.by_id("storage").get(m.storage)) is not None and st.type in NETWORK_FS
    ]
    for kind_name, key in (
        ("startup", "startupProbe"),
        ("readiness", "readinessProbe"),
        ("liveness", "livenessProbe"),
    ):
        p = getattr(svc.probes, kind_name)
        if p is not None:
            container[key] = _probe(p)
        elif kind_name == "liveness" and net_paths:
            container[key] = _mount_probe(net_paths)
    sec = svc.security
    c_sec: dict[str, Any] = {
        "allowPrivilegeEscalation": sec.privileged,
        "readOnlyRootFilesystem": sec.read_only_root_fs,
    }
    if sec.privileged:
        c_sec["privileged"] = True
    else:
        c_sec["capabilities"] = {"drop": ["ALL"]}
    container["securityContext"] = c_sec
    if vmounts:
        container["volumeMounts"] = vmounts
    pod: dict[str, Any] = {
        **_placement(pool),
        "securityContext": _pod_security(svc),
        "containers": [container],
    }
    if vols:
        pod["volumes"] = vols
    lo = svc.min_replicas if svc.min_replicas is not None else svc.replicas
    hi = svc.max_replicas if svc.max_replicas is not None else svc.replicas
    if hi > 1 and kind != "DaemonSet":
        # spread replicas over nodes, so one node's loss costs one replica (what the PDB assumes)
        pod["affinity"] = {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "podAffinityTerm": {
                            "labelSelector": {"matchLabels": labels},
                            "topologyKey": "kubernetes.io/hostname",
                        },
                    }
                ]
            }
        }
    wl_spec: dict[str, Any] = {}
    if kind != "DaemonSet":
        wl_spec["replicas"] = min(max(svc.replicas, lo), hi)
    if kind == "StatefulSet":
        wl_spec["serviceName"] = name
    wl_spec["selector"] = {"matchLabels": labels}
    wl_spec["template"] = {"metadata": {"labels": dict(all_labels)}, "spec": pod}
    api = "apps/v1"
    docs: list[dict[str, Any]] = [
        *extra,
        {"apiVersion": api, "kind": kind, "metadata": meta, "spec": wl_spec},
    ]
    if svc.ports:
        svc_type = "LoadBalancer" if svc.public else "ClusterIP"
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": meta,
                "spec": {
                    "type": svc_type,
                    "selector": labels,
                    "ports": [
                        {
                            "name": dns_label(p.name)[:15],
                            "port": p.port,
                            "targetPort": p.port,
                            "protocol": p.protocol,
                        }
                        for p in svc.ports
                    ],
                },
            }
        )
    if svc.ingress or svc.egress:
        docs.append(_network_policy(spec, svc, name, ns, labels))
    if kind != "DaemonSet" and lo >= 2:
        docs.append(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": meta,
                "spec": {"maxUnavailable": 1, "selector": {"matchLabels": labels}},
            }
        )
    if kind != "DaemonSet" and hi > lo:
        hpa: dict[str, Any] = {
            "scaleTargetRef": {"apiVersion": api, "kind": kind, "name": name},
            "minReplicas": max(1, lo),
            "maxReplicas": hi,
        }
        if svc.resources.requests.cpu_cores:
            hpa["metrics"] = [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}},
                }
            ]
        docs.append(
            {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": meta, "spec": hpa}
        )
    return docs


def _comments(ctx: RenderContext, svc: Service) -> str:
    lines = [
        ctx.header("#"),
        f"# service '{svc.id}' (topology.services[{svc.spec_path[-1]}]), pool '{svc.pool}'",
    ]
    if svc.ulimits:
        # Kubernetes has no per-pod ulimit: the container runtime's default (containerd's
        # LimitNOFILE) or the image's entrypoint must raise it
        shown = ", ".join(f"{k}={v}" for k, v in sorted(svc.ulimits.items()))
        lines.append(
            f"# ulimits not expressible in a pod spec, set them in the runtime or entrypoint: {shown}"
        )
    return "\n".join(lines) + "\n"


@register(
    "kubernetes",
    order=66,
    source="seed 000 §2.2, §3.3, §4.1, §5.11 (manifests from the topology: pinned images, mounts, probes, network policy); seed 004 §2.3",
)
def generate(ctx: RenderContext) -> dict[str, str]:
    """Kubernetes manifests per service: workload, Service, NetworkPolicy, PDB, HPA, volumes."""
    spec = ctx.spec
    out: dict[str, str] = {}
    namespaces: set[str] = set()
    for svc in spec.topology.services:
        if svc.external:
            continue
        _, ns, _, _ = names(spec, svc)
        namespaces.add(ns)
        out[f"kubernetes/{dns_label(svc.id)}.yaml"] = _comments(ctx, svc) + dump_documents(
            workload(spec, svc)
        )
    created = sorted(n for n in namespaces if n not in ("default", "kube-system"))
    if created:
        docs = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in created]
        out["kubernetes/namespaces.yaml"] = ctx.header("#") + "\n" + dump_documents(docs)
    return out
