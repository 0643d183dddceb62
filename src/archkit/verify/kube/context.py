"""What every Kubernetes check sees: the cluster state indexed, the recorder, the objects it checks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from archkit.isolation import MALFORMED, Failure, isolated
from archkit.spec.model import KubeRef, NodePool, Service, Spec
from archkit.verify.findings import Recorder
from archkit.verify.kube.helpers import (
    WORKLOAD_KINDS,
    as_key,
    dict_matches,
    meta,
    pod_labels,
    pod_spec,
    resolve_port,
)
from archkit.verify.registry import Check, Code
from archkit.verify.state import ClusterState


class Index:
    """Objects of the state grouped for the lookups the checks make (kept O(objects))."""

    def __init__(self, state: ClusterState):
        self.state = state
        self.by_ns: dict[str, dict[str | None, list[dict]]] = {}
        for kind in ("Pod", "Service", "NetworkPolicy", "PersistentVolumeClaim") + WORKLOAD_KINDS:
            groups: dict[str | None, list[dict]] = {}
            for obj in state.items(kind):
                groups.setdefault(as_key(meta(obj).get("namespace")), []).append(obj)
            self.by_ns[kind] = groups
        self.nodes = {as_key(meta(n).get("name")): n for n in state.items("Node")}
        self.pvs = {as_key(meta(p).get("name")): p for p in state.items("PersistentVolume")}
        self.classes = {as_key(meta(c).get("name")): c for c in state.items("StorageClass")}

    def in_ns(self, kind: str, namespace: str) -> list[dict]:
        groups = self.by_ns.get(kind, {})
        return groups.get(namespace, []) + (groups.get(None, []) if namespace is not None else [])


@dataclass
class PoolTarget:
    """A node pool being checked, and its nodes when they could be told apart."""

    pool: NodePool
    label: str
    nodes: list[dict]


@dataclass
class ServiceTarget:
    """A service being checked, with the workload and container it was found as."""

    svc: Service
    label: str
    ref: KubeRef | None
    kind: str  # the kind the spec declares
    found_kind: str  # the kind it is deployed as
    ns: str
    wl: dict
    c: dict  # the container
    where: str  # the cluster object's origin (file:line of a manifest, or kind/namespace/name)
    pool: NodePool | None


class KubeContext:
    """The spec, the indexed cluster state and the recorder shared by one run's Kubernetes checks."""

    def __init__(self, spec: Spec, state: ClusterState):
        self.spec, self.state = spec, state
        self.rec = Recorder(spec, "kube")
        self.idx = Index(state)
        self._workloads: dict[str, dict | None] = {}
        self._selecting: dict[str, list[dict]] = {}

    def guarded(self, obj: NodePool | Service, label: str, code: Code, run: Any) -> None:
        """Run one object's checks; a malformed Kubernetes object makes them unknown, not a crash."""
        done = isolated("verify check", code.id, run, catch=MALFORMED)
        if isinstance(done, Failure):
            self.rec.unknown(
                code,
                label,
                obj,
                f"cannot check '{obj.id}': a Kubernetes object it needs is malformed ({done.detail})",
            )

    def why_not(self, *kinds: str) -> str | None:
        """Why the kinds cannot be trusted to be complete, or None when they can."""
        for kind in kinds:
            r = self.state.read(kind)
            if r.status != "complete":
                return (
                    f"{kind} objects are {r.status}: {r.message}"
                    if r.message
                    else f"{kind} objects are {r.status}"
                )
        return None

    def pool_nodes(self, pool: NodePool) -> list[dict]:
        return [n for n in self.idx.nodes.values() if dict_matches(pool.labels, meta(n).get("labels") or {})]

    def workload(self, svc: Service) -> dict | None:
        if svc.id not in self._workloads:
            self._workloads[svc.id] = self.find_workload(svc)[0]
        return self._workloads[svc.id]

    def find_workload(self, svc: Service) -> tuple[dict | None, str]:
        ref = svc.kubernetes
        kind = ref.kind if ref else "Deployment"
        ns = ref.namespace if ref else "default"
        names = [n for n in ((ref.name if ref else None), svc.id) if n]
        order = [kind] + [k for k in WORKLOAD_KINDS if k != kind]
        for k in order:
            cands = self.idx.in_ns(k, ns)
            for name in names:
                for w in cands:
                    if meta(w).get("name") == name:
                        return w, k
            if ref and ref.labels:
                for w in cands:
                    if dict_matches(ref.labels, meta(w).get("labels") or {}) or dict_matches(
                        ref.labels, pod_labels(w)
                    ):
                        return w, k
        return None, kind

    def container(self, svc: Service, workload: dict) -> dict | None:
        containers = pod_spec(workload).get("containers") or []
        if not containers:
            return None
        want = (svc.kubernetes.container if svc.kubernetes else None) or svc.id
        for c in containers:
            if c.get("name") == want:
                return c
        if svc.image:
            for c in containers:
                if c.get("image") == svc.image:
                    return c
        return containers[0]

    def selecting_services(self, t: ServiceTarget) -> list[dict]:
        """The Kubernetes Services whose selector picks the service's pods."""
        if t.svc.id not in self._selecting:
            labels = pod_labels(t.wl)
            self._selecting[t.svc.id] = [
                s
                for s in self.idx.in_ns("Service", t.ns)
                if (s.get("spec") or {}).get("selector")
                and dict_matches((s.get("spec") or {}).get("selector"), labels)
            ]
        return self._selecting[t.svc.id]

    def served_ports(self, t: ServiceTarget) -> dict[Any, dict]:
        """Container port -> the first Service that serves it."""
        served: dict[Any, dict] = {}
        for s in self.selecting_services(t):
            for sp in (s.get("spec") or {}).get("ports") or []:
                target = resolve_port(sp.get("targetPort", sp.get("port")), t.c)
                served.setdefault(target, s)
        return served


class PoolCheck(Check):
    """A check of one node pool against the nodes that carry its labels."""

    def run(self, ctx: KubeContext, t: PoolTarget) -> None:
        raise NotImplementedError  # pragma: no cover - abstract


class ServiceCheck(Check):
    """A check of one service against the workload and container it is deployed as."""

    def run(self, ctx: KubeContext, t: ServiceTarget) -> None:
        raise NotImplementedError  # pragma: no cover - abstract
