"""Kubernetes checks: node pools against nodes, services against workloads, Services and NetworkPolicies.

Everything reads a `ClusterState` (live, snapshot or manifests alike). When a kind needed by
a check could not be read completely (RBAC, timeout, a manifests folder has no nodes) the
check reports `unknown` with the reason, never `drift`: absence in an incomplete list
proves nothing.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from typing import Any

from archkit.spec.model import NodePool, Probe, Service, Spec, Storage
from archkit.verify.findings import Finding, Recorder
from archkit.verify.state import ClusterState

WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet")
WORLD = {"0.0.0.0/0", "::/0", "public", "*"}  # as the AK504/AK505 checks read 'from'

GPU = "nvidia.com/gpu"
# Well-known node labels every node carries; a nodeSelector on them does not pick a pool, and
# a spec need not list them among the pool's labels.
_WELL_KNOWN = ("kubernetes.io/", "node.kubernetes.io/", "beta.kubernetes.io/", "topology.kubernetes.io/")

_MEM_UNITS = {
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
    "k": 1e3,
    "K": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
    "m": 1e-3,
}
_QTY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$")


# --------------------------------------------------------------------------- small helpers


def quantity(value: Any) -> float | None:
    """A Kubernetes quantity ('500m', '8Gi', 2) as a plain number (cores, bytes, count)."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    m = _QTY.match(str(value).strip())
    if not m:
        return None
    num, unit = float(m.group(1)), m.group(2)
    if not unit:
        return num
    if unit not in _MEM_UNITS:
        return None
    return num * _MEM_UNITS[unit]


def _num(x: float) -> str:
    return f"{x:g}"


def _labels_text(labels: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(labels.items())) or "(none)"


def _taint(t) -> str:
    return f"{t.key}={t.value or ''}:{t.effect}"


def _meta(obj: Any) -> dict:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    return meta if isinstance(meta, dict) else {}


def _key(value: Any) -> str | None:
    """A name or namespace as an index key (damaged objects may hold anything there)."""
    return value if value is None or isinstance(value, str) else str(value)


def _ns_ok(obj: dict, namespace: str) -> bool:
    ns = _meta(obj).get("namespace")
    return ns is None or ns == namespace  # manifests often leave the namespace to `kubectl -n`


def match_expression(expr: dict, labels: dict) -> bool:
    key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
    if op == "In":
        return key in labels and str(labels[key]) in [str(v) for v in values]
    if op == "NotIn":
        return key not in labels or str(labels[key]) not in [str(v) for v in values]
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if op in ("Gt", "Lt"):
        try:
            have, want = int(labels[key]), int(values[0])
        except (KeyError, ValueError, IndexError):
            return False
        return have > want if op == "Gt" else have < want
    return False


def selector_matches(selector: dict | None, labels: dict) -> bool:
    """A LabelSelector (matchLabels + matchExpressions) against labels; an empty one matches all."""
    if not selector:
        return True
    for k, v in (selector.get("matchLabels") or {}).items():
        if str(labels.get(k)) != str(v):
            return False
    return all(match_expression(e, labels) for e in selector.get("matchExpressions") or [])


def _dict_matches(selector: dict | None, labels: dict) -> bool:
    return all(str(labels.get(k)) == str(v) for k, v in (selector or {}).items())


def _template(workload: dict) -> dict:
    return (workload.get("spec") or {}).get("template") or {}


def _pod_spec(workload: dict) -> dict:
    return _template(workload).get("spec") or {}


def _pod_labels(workload: dict) -> dict:
    return (_template(workload).get("metadata") or {}).get("labels") or {}


def _ports_of(container: dict) -> list[dict]:
    return container.get("ports") or []


def _resolve_port(port: Any, container: dict | None) -> Any:
    """A named port ('http') as its number, through the container's port list."""
    if isinstance(port, str) and not port.isdigit() and container is not None:
        for p in _ports_of(container):
            if p.get("name") == port:
                return p.get("containerPort")
    if isinstance(port, str) and port.isdigit():
        return int(port)
    return port


def _peer_text(peer: dict) -> str:
    """A NetworkPolicy peer in words: '10.0.0.0/8', 'pods app=x', 'namespace monitoring'."""
    if peer.get("ipBlock"):
        return str((peer["ipBlock"] or {}).get("cidr"))
    parts = []
    nss = peer.get("namespaceSelector")
    if nss is not None:
        names = (nss.get("matchLabels") or {}) if isinstance(nss, dict) else {}
        parts.append(
            f"namespace {names['kubernetes.io/metadata.name']}"
            if "kubernetes.io/metadata.name" in names
            else f"namespaces {_labels_text(names) if names else '(all)'}"
        )
    pods = peer.get("podSelector")
    if pods is not None:
        labels = (pods.get("matchLabels") or {}) if isinstance(pods, dict) else {}
        parts.append(f"pods {_labels_text(labels)}" if labels else "all pods")
    return " / ".join(parts) or "?"


def _cidr(text: str) -> Any | None:
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        return None


def _cidr_within(inner: str, outer: str) -> bool:
    a, b = _cidr(inner), _cidr(outer)
    return a is not None and b is not None and a.version == b.version and a.subnet_of(b)


# --------------------------------------------------------------------------- indexes


class Index:
    """Objects of the state grouped for the lookups the checks make (kept O(objects))."""

    def __init__(self, state: ClusterState):
        self.state = state
        self.by_ns: dict[str, dict[str | None, list[dict]]] = {}
        for kind in ("Pod", "Service", "NetworkPolicy", "PersistentVolumeClaim") + WORKLOAD_KINDS:
            groups: dict[str | None, list[dict]] = {}
            for obj in state.items(kind):
                groups.setdefault(_key(_meta(obj).get("namespace")), []).append(obj)
            self.by_ns[kind] = groups
        self.nodes = {_key(_meta(n).get("name")): n for n in state.items("Node")}
        self.pvs = {_key(_meta(p).get("name")): p for p in state.items("PersistentVolume")}
        self.classes = {_key(_meta(c).get("name")): c for c in state.items("StorageClass")}

    def in_ns(self, kind: str, namespace: str) -> list[dict]:
        groups = self.by_ns.get(kind, {})
        return groups.get(namespace, []) + (groups.get(None, []) if namespace is not None else [])


# --------------------------------------------------------------------------- the checks


class KubeChecker:
    """Runs every Kubernetes check of a spec against one cluster state."""

    def __init__(self, spec: Spec, state: ClusterState):
        self.spec, self.state = spec, state
        self.rec = Recorder(spec, "kube")
        self.idx = Index(state)
        self._workloads: dict[str, dict | None] = {}

    # ---- entry point
    def run(self) -> list[Finding]:
        for pool in self.spec.topology.node_pools:
            self._guarded(self.check_pool, pool, f"pool/{pool.id}", "VK101")
        for svc in self.spec.topology.services:
            if not svc.external:
                self._guarded(self.check_service, svc, f"service/{svc.id}", "VK110")
        return self.rec.findings

    def _guarded(self, check, obj, label: str, code: str) -> None:
        """Run one object's checks; a malformed Kubernetes object makes them unknown, not a crash."""
        try:
            check(obj)
        except (AttributeError, TypeError, ValueError, KeyError, IndexError) as exc:
            self.rec.unknown(
                code,
                label,
                obj,
                None,
                f"cannot check '{obj.id}': a Kubernetes object it needs is malformed "
                f"({type(exc).__name__}: {exc})",
            )

    def _why_not(self, *kinds: str) -> str | None:
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

    # ---- node pools
    def pool_nodes(self, pool: NodePool) -> list[dict]:
        return [
            n for n in self.idx.nodes.values() if _dict_matches(pool.labels, _meta(n).get("labels") or {})
        ]

    def check_pool(self, pool: NodePool) -> None:
        r, label = self.rec, f"pool/{pool.id}"
        why = self._why_not("Node")
        if why:
            r.unknown("VK101", label, pool, "count", f"cannot count the nodes of pool '{pool.id}': {why}")
            return
        if not pool.labels:
            r.unknown(
                "VK101",
                label,
                pool,
                "labels",
                f"pool '{pool.id}' declares no labels, so its nodes cannot be told apart; add the "
                "node labels (e.g. hardware-type) under labels",
            )
            return
        nodes = self.pool_nodes(pool)
        names = sorted(_meta(n).get("name", "?") for n in nodes)
        if len(nodes) == pool.count:
            r.ok("VK101", label, pool, "count", f"{len(nodes)} node(s) with {_labels_text(pool.labels)}")
        else:
            r.drift(
                "VK101",
                label,
                pool,
                "count",
                f"pool '{pool.id}' has {len(nodes)} node(s) labelled {_labels_text(pool.labels)}"
                f"{' (' + ', '.join(names[:5]) + ('…' if len(names) > 5 else '') + ')' if names else ''}"
                f", the spec declares {pool.count}",
            )
        if pool.gpu is not None and nodes:
            resource = GPU
            if pool.gpu.sharing.value == "mig" and pool.gpu.mig_profile:
                resource = f"nvidia.com/mig-{pool.gpu.mig_profile}"
            bad = []
            for n in nodes:
                have = quantity(((n.get("status") or {}).get("allocatable") or {}).get(resource))
                ok = (have or 0) > 0 if resource != GPU else have == pool.gpu.count
                if not ok:
                    bad.append(f"{_meta(n).get('name')} has {_num(have) if have is not None else 'none'}")
            want = f"{pool.gpu.count}" if resource == GPU else "some"
            if bad:
                r.drift(
                    "VK102",
                    label,
                    pool.gpu,
                    "count",
                    f"pool '{pool.id}' declares {want} allocatable {resource} per node but "
                    f"{'; '.join(bad[:5])}{' …' if len(bad) > 5 else ''}: GPU pods cannot be scheduled there "
                    "(is the NVIDIA device plugin running?)",
                )
            else:
                r.ok("VK102", label, pool.gpu, "count", f"every node allocates {want} {resource}")
        if pool.taints and nodes:
            missing = []
            for n in nodes:
                have = {
                    (t.get("key"), t.get("value") or None, t.get("effect"))
                    for t in (n.get("spec") or {}).get("taints") or []
                }
                lacks = [t for t in pool.taints if (t.key, t.value or None, t.effect) not in have]
                if lacks:
                    missing.append(f"{_meta(n).get('name')} lacks " + ", ".join(_taint(t) for t in lacks))
            if missing:
                r.drift(
                    "VK103",
                    label,
                    pool,
                    "taints",
                    f"pool '{pool.id}': {'; '.join(missing[:5])}: other workloads can land on these nodes",
                )
            else:
                r.ok("VK103", label, pool, "taints", "every node carries the declared taints")

    # ---- finding a service's workload
    def workload(self, svc: Service) -> dict | None:
        if svc.id not in self._workloads:
            self._workloads[svc.id] = self._find_workload(svc)[0]
        return self._workloads[svc.id]

    def _find_workload(self, svc: Service) -> tuple[dict | None, str]:
        ref = svc.kubernetes
        kind = ref.kind if ref else "Deployment"
        ns = ref.namespace if ref else "default"
        names = [n for n in ((ref.name if ref else None), svc.id) if n]
        order = [kind] + [k for k in WORKLOAD_KINDS if k != kind]
        for k in order:
            cands = self.idx.in_ns(k, ns)
            for name in names:
                for w in cands:
                    if _meta(w).get("name") == name:
                        return w, k
            if ref and ref.labels:
                for w in cands:
                    if _dict_matches(ref.labels, _meta(w).get("labels") or {}) or _dict_matches(
                        ref.labels, _pod_labels(w)
                    ):
                        return w, k
        return None, kind

    def _container(self, svc: Service, workload: dict) -> dict | None:
        containers = _pod_spec(workload).get("containers") or []
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

    # ---- services
    def check_service(self, svc: Service) -> None:
        r, label = self.rec, f"service/{svc.id}"
        ref = svc.kubernetes
        kind = ref.kind if ref else "Deployment"
        ns = ref.namespace if ref else "default"
        why = self._why_not(*WORKLOAD_KINDS)
        wl, found_kind = self._find_workload(svc)
        self._workloads[svc.id] = wl
        node = ref if ref else svc
        if wl is None:
            if why:
                r.unknown("VK110", label, node, None, f"cannot look up the workload of '{svc.id}': {why}")
            else:
                name = ref.name if ref and ref.name else svc.id
                r.drift(
                    "VK110",
                    label,
                    node,
                    None,
                    f"service '{svc.id}' is not deployed: no {kind} named '{name}'"
                    f"{' or labelled ' + _labels_text(ref.labels) if ref and ref.labels else ''}"
                    f" in namespace '{ns}' ({self.state.source})",
                )
            return
        where = self.state.origin(wl)
        wname = _meta(wl).get("name")
        if found_kind != kind:
            r.drift(
                "VK110",
                label,
                node,
                "kind" if ref else None,
                f"service '{svc.id}' is deployed as {found_kind} '{wname}', the spec says {kind}",
                where,
            )
        else:
            r.ok("VK110", label, node, None, f"{kind} {ns}/{wname}", where)
        container = self._container(svc, wl)
        if container is None:
            r.drift("VK110", label, node, None, f"{found_kind} '{wname}' has no containers", where)
            return
        if ref and ref.container and container.get("name") != ref.container:
            r.drift(
                "VK110",
                label,
                ref,
                "container",
                f"{found_kind} '{wname}' has no container named '{ref.container}'; checking "
                f"'{container.get('name')}' instead",
                where,
            )
        self._image(svc, container, where)
        self._replicas(svc, wl, found_kind, where)
        pool = self.spec.pool(svc.pool)
        if pool is not None:
            self._placement(svc, pool, wl, where)
        self._resources(svc, container, where)
        self._probes(svc, container, where)
        self._security(svc, wl, container, where)
        self._mounts(svc, wl, container, ns, where)
        self._ports(svc, wl, container, ns, where)
        self._netpol(svc, wl, container, ns, where)

    def _image(self, svc: Service, c: dict, where: str) -> None:
        if not svc.image:
            return
        have = c.get("image")
        if have == svc.image:
            self.rec.ok("VK116", f"service/{svc.id}", svc, "image", "image as declared", where)
        else:
            self.rec.drift(
                "VK116",
                f"service/{svc.id}",
                svc,
                "image",
                f"service '{svc.id}' runs image {have}, the spec declares {svc.image}",
                where,
            )

    def _replicas(self, svc: Service, wl: dict, kind: str, where: str) -> None:
        r, label = self.rec, f"service/{svc.id}"
        spec, status = wl.get("spec") or {}, wl.get("status") or {}
        if kind == "DaemonSet":
            desired = status.get("desiredNumberScheduled")
            ready = status.get("numberReady", 0)
        else:
            desired = spec.get("replicas", 1)
            ready = status.get("readyReplicas", 0)
            lo = svc.min_replicas if svc.min_replicas is not None else svc.replicas
            hi = svc.max_replicas if svc.max_replicas is not None else svc.replicas
            if lo <= desired <= hi:
                r.ok("VK111", label, svc, "replicas", f"{desired} replica(s)", where)
            else:
                want = f"{svc.replicas}" if lo == hi else f"{lo}–{hi}"
                r.drift(
                    "VK111",
                    label,
                    svc,
                    "replicas",
                    f"service '{svc.id}' runs {desired} replica(s), the spec declares {want}: the capacity "
                    "the latency budget was computed for is not there",
                    where,
                )
        if self.state.mode == "manifests":
            r.unknown(
                "VK112",
                label,
                svc,
                "replicas",
                "manifests carry no status; ready replicas are checked against a live cluster or a snapshot",
                where,
            )
            return
        if desired is None:
            r.unknown("VK112", label, svc, "replicas", "the workload has no status", where)
        elif ready >= desired and desired > 0:
            r.ok("VK112", label, svc, "replicas", f"{ready}/{desired} ready", where)
        elif desired == 0 and svc.replicas == 0:
            r.ok("VK112", label, svc, "replicas", "0 replicas, as declared", where)
        else:
            r.drift(
                "VK112",
                label,
                svc,
                "replicas",
                f"only {ready} of {desired} replica(s) of '{svc.id}' are ready",
                where,
            )

    # ---- placement
    def _placement(self, svc: Service, pool: NodePool, wl: dict, where: str) -> None:
        r, label = self.rec, f"service/{svc.id}"
        ps = _pod_spec(wl)
        selector = ps.get("nodeSelector") or {}
        terms = (
            ((ps.get("affinity") or {}).get("nodeAffinity") or {}).get(
                "requiredDuringSchedulingIgnoredDuringExecution"
            )
            or {}
        ).get("nodeSelectorTerms") or []

        def lands(labels: dict) -> bool:
            if not _dict_matches(selector, labels):
                return False
            return not terms or any(
                all(match_expression(e, labels) for e in t.get("matchExpressions") or []) for t in terms
            )

        shown = (f"nodeSelector {_labels_text(selector)}" if selector else "") + (
            " and required node affinity" if terms and selector else "required node affinity" if terms else ""
        )
        if not pool.labels:
            r.unknown(
                "VK113", label, svc, "pool", f"pool '{pool.id}' declares no labels to select it by", where
            )
        elif not selector and not terms:
            r.drift(
                "VK113",
                label,
                svc,
                "pool",
                f"service '{svc.id}' has no nodeSelector or required node affinity: its pods can land on any "
                f"node, not only on pool '{pool.id}' ({_labels_text(pool.labels)})",
                where,
            )
        elif self.state.usable("Node") and self.idx.nodes:
            inside = self.pool_nodes(pool)
            inside_ids = {id(n) for n in inside}
            outside = [n for n in self.idx.nodes.values() if id(n) not in inside_ids]
            hits_in = [n for n in inside if lands(_meta(n).get("labels") or {})]
            hits_out = sorted(
                _meta(n).get("name", "?") for n in outside if lands(_meta(n).get("labels") or {})
            )
            if inside and not hits_in:
                r.drift(
                    "VK113",
                    label,
                    svc,
                    "pool",
                    f"{shown} of '{svc.id}' matches no node of pool '{pool.id}' "
                    f"({_labels_text(pool.labels)}): the pods stay Pending or land elsewhere",
                    where,
                )
            elif hits_out:
                r.drift(
                    "VK113",
                    label,
                    svc,
                    "pool",
                    f"{shown} of '{svc.id}' also matches nodes outside pool '{pool.id}' "
                    f"({', '.join(hits_out[:5])})",
                    where,
                )
            else:
                r.ok("VK113", label, svc, "pool", f"{shown} selects pool '{pool.id}'", where)
        else:
            pool_labels = dict(pool.labels)
            # without nodes, well-known labels cannot be known; assume they match
            relaxed = {k: v for k, v in selector.items() if not k.startswith(_WELL_KNOWN) or k in pool_labels}
            ok_sel = _dict_matches(relaxed, pool_labels)
            ok_terms = not terms or any(
                all(
                    match_expression(e, pool_labels)
                    for e in t.get("matchExpressions") or []
                    if not str(e.get("key", "")).startswith(_WELL_KNOWN) or e.get("key") in pool_labels
                )
                for t in terms
            )
            picks = any(k in pool_labels for k in selector) or any(
                e.get("key") in pool_labels for t in terms for e in t.get("matchExpressions") or []
            )
            if not (ok_sel and ok_terms):
                r.drift(
                    "VK113",
                    label,
                    svc,
                    "pool",
                    f"{shown} of '{svc.id}' does not match pool '{pool.id}' labels "
                    f"{_labels_text(pool.labels)}: the pods land on another pool or stay Pending",
                    where,
                )
            elif not picks:
                r.drift(
                    "VK113",
                    label,
                    svc,
                    "pool",
                    f"{shown} of '{svc.id}' uses none of pool '{pool.id}' labels "
                    f"({_labels_text(pool.labels)}): the pods can land on any node",
                    where,
                )
            else:
                r.ok("VK113", label, svc, "pool", f"{shown} selects pool '{pool.id}'", where)
        # tolerations for the pool's hard taints
        hard = [t for t in pool.taints if t.effect in ("NoSchedule", "NoExecute")]
        if hard:
            tols = ps.get("tolerations") or []

            def tolerated(t) -> bool:
                for tol in tols:
                    op = tol.get("operator", "Equal")
                    if tol.get("key") not in (None, "", t.key):
                        continue
                    if not tol.get("key") and op != "Exists":
                        continue
                    if op == "Equal" and str(tol.get("value") or "") != str(t.value or ""):
                        continue
                    if tol.get("effect") not in (None, "", t.effect):
                        continue
                    return True
                return False

            lacks = [t for t in hard if not tolerated(t)]
            if lacks:
                r.drift(
                    "VK114",
                    label,
                    svc,
                    "pool",
                    f"service '{svc.id}' does not tolerate the taint(s) "
                    f"{', '.join(_taint(t) for t in lacks)} of pool '{pool.id}': "
                    "its pods are never scheduled there",
                    where,
                )
            else:
                r.ok("VK114", label, svc, "pool", f"tolerates pool '{pool.id}' taints", where)
        # running pods on the pool's nodes
        if (
            self.state.usable("Node")
            and self.state.read("Pod").status in ("complete", "partial")
            and pool.labels
        ):
            sel = (wl.get("spec") or {}).get("selector")
            ns = _meta(wl).get("namespace") or (svc.kubernetes.namespace if svc.kubernetes else "default")
            pods = [
                p
                for p in self.idx.in_ns("Pod", ns)
                if sel and selector_matches(sel, _meta(p).get("labels") or {})
            ]
            placed = [(p, (p.get("spec") or {}).get("nodeName")) for p in pods]
            pool_names = {_meta(n).get("name") for n in self.pool_nodes(pool)}
            wrong = sorted(
                f"{_meta(p).get('name')} on {nn}" for p, nn in placed if nn and nn not in pool_names
            )
            if wrong:
                r.drift(
                    "VK115",
                    label,
                    svc,
                    "pool",
                    f"pods of '{svc.id}' run outside pool '{pool.id}': {', '.join(wrong[:5])}",
                    where,
                )
            elif placed and self.state.read("Pod").status == "partial":
                r.unknown(
                    "VK115",
                    label,
                    svc,
                    "pool",
                    f"the {len(placed)} pod(s) read are on pool '{pool.id}', "
                    f"but not every pod could be read: {self.state.read('Pod').message}",
                    where,
                )
            elif placed:
                r.ok("VK115", label, svc, "pool", f"{len(placed)} pod(s), all on pool '{pool.id}'", where)

    # ---- resources
    def _resources(self, svc: Service, c: dict, where: str) -> None:
        r, label = self.rec, f"service/{svc.id}"
        res = c.get("resources") or {}
        problems, checked = [], 0
        for side in ("requests", "limits"):
            want = getattr(svc.resources, side)
            have = res.get(side) or {}
            for fld, key, scale, unit in (
                ("cpu_cores", "cpu", 1.0, ""),
                ("memory_mib", "memory", 2**20, " MiB"),
                ("gpu", GPU, 1.0, ""),
            ):
                w = getattr(want, fld)
                if w is None:
                    continue
                checked += 1
                h = quantity(have.get(key))
                if h is None:
                    problems.append(
                        (
                            side,
                            fld,
                            f"the spec declares {side}.{key} {_num(w)}{unit} but the container sets none",
                        )
                    )
                elif abs(h / scale - w) > 1e-6 * max(1.0, w):
                    problems.append(
                        (side, fld, f"{side}.{key} is {have.get(key)}, the spec declares {_num(w)}{unit}")
                    )
        for side, fld, msg in problems:
            r.drift("VK120", label, getattr(svc.resources, side), fld, f"service '{svc.id}': {msg}", where)
        if checked and not problems:
            r.ok("VK120", label, svc, "resources", "requests and limits as declared", where)
        req = quantity((res.get("requests") or {}).get(GPU))
        lim = quantity((res.get("limits") or {}).get(GPU))
        if req is None and lim is None:
            if svc.resources.requests.gpu or svc.resources.limits.gpu:
                pass  # already reported as missing above
            return
        if lim is None:
            r.drift(
                "VK121",
                label,
                svc.resources,
                "limits",
                f"service '{svc.id}' requests {GPU} {_num(req)} but sets no limit: Kubernetes refuses "
                "extended resources without a limit (seed 004 §2.3)",
                where,
            )
        elif req is not None and req != lim:
            r.drift(
                "VK121",
                label,
                svc.resources,
                "requests",
                f"service '{svc.id}' requests {GPU} {_num(req)} but limits {_num(lim)}: Kubernetes refuses "
                "to schedule it (seed 004 §2.3: GPU requests must equal limits)",
                where,
            )
        else:
            r.ok("VK121", label, svc.resources, None, f"{GPU} requests = limits = {_num(lim)}", where)

    # ---- probes
    def _probes(self, svc: Service, c: dict, where: str) -> None:
        for kind, code, key in (
            ("liveness", "VK130", "livenessProbe"),
            ("readiness", "VK131", "readinessProbe"),
            ("startup", "VK132", "startupProbe"),
        ):
            want: Probe | None = getattr(svc.probes, kind)
            if want is None:
                continue
            have = c.get(key)
            label = f"service/{svc.id}"
            if not have:
                why = {
                    "liveness": "a hung process (e.g. stuck on NFS) is never restarted",
                    "readiness": "traffic reaches pods before their models are loaded",
                    "startup": "a slow model load is killed by the liveness probe",
                }[kind]
                self.rec.drift(
                    code, label, want, None, f"service '{svc.id}' has no {kind} probe ({key}): {why}", where
                )
                continue
            diffs = self._probe_diffs(want, have, c)
            if diffs:
                self.rec.drift(
                    code,
                    label,
                    want,
                    None,
                    f"{kind} probe of '{svc.id}' differs from the spec: {'; '.join(diffs)}",
                    where,
                )
            else:
                self.rec.ok(code, label, want, None, f"{kind} probe as declared", where)

    @staticmethod
    def _probe_diffs(want: Probe, have: dict, c: dict) -> list[str]:
        diffs = []
        if want.http_path is not None or (
            want.port is not None and want.exec is None and want.tcp_port is None
        ):
            get = have.get("httpGet")
            if not get:
                diffs.append(
                    f"expected an HTTP GET on {want.http_path or '/'}:{want.port}, found "
                    f"{', '.join(k for k in have if k in ('exec', 'tcpSocket', 'grpc')) or 'another kind'}"
                )
            else:
                if want.http_path is not None and get.get("path") != want.http_path:
                    diffs.append(f"path {get.get('path')} instead of {want.http_path}")
                if want.port is not None and _resolve_port(get.get("port"), c) != want.port:
                    diffs.append(f"port {get.get('port')} instead of {want.port}")
        if want.exec is not None:
            cmd = (have.get("exec") or {}).get("command")
            if cmd != want.exec:
                diffs.append(
                    f"command {cmd!r} instead of {want.exec!r}" if cmd else f"expected exec {want.exec!r}"
                )
        if want.tcp_port is not None:
            port = (have.get("tcpSocket") or {}).get("port")
            if _resolve_port(port, c) != want.tcp_port:
                diffs.append(f"TCP port {port} instead of {want.tcp_port}")
        for fld, key, default in (
            ("period_s", "periodSeconds", 10),
            ("timeout_s", "timeoutSeconds", 1),
            ("failure_threshold", "failureThreshold", 3),
            ("initial_delay_s", "initialDelaySeconds", 0),
        ):
            if fld in want.model_fields_set:
                got = have.get(key, default)
                if float(got) != float(getattr(want, fld)):
                    diffs.append(f"{key} {got} instead of {_num(getattr(want, fld))}")
        return diffs

    # ---- security
    def _security(self, svc: Service, wl: dict, c: dict, where: str) -> None:
        r, label, sec = self.rec, f"service/{svc.id}", svc.security
        pod_sc = _pod_spec(wl).get("securityContext") or {}
        c_sc = c.get("securityContext") or {}

        def eff(key: str) -> Any:
            return c_sc[key] if key in c_sc else pod_sc.get(key)

        user = eff("runAsUser")
        if sec.run_as_non_root:
            if eff("runAsNonRoot") is True and user != 0:
                r.ok("VK140", label, sec, "run_as_non_root", "runAsNonRoot: true", where)
            elif user == 0:
                r.drift(
                    "VK140",
                    label,
                    sec,
                    "run_as_non_root",
                    f"service '{svc.id}' runs as root (runAsUser 0); the spec requires a non-root user "
                    "(seed 000 §4.1)",
                    where,
                )
            else:
                r.drift(
                    "VK140",
                    label,
                    sec,
                    "run_as_non_root",
                    f"service '{svc.id}' does not set runAsNonRoot: true, so the image's USER decides and "
                    "may be root (seed 000 §4.1)",
                    where,
                )
        if sec.run_as_user is not None:
            if user == sec.run_as_user:
                r.ok("VK141", label, sec, "run_as_user", f"runAsUser {user}", where)
            else:
                r.drift(
                    "VK141",
                    label,
                    sec,
                    "run_as_user",
                    f"service '{svc.id}' runs as user {user if user is not None else '(image default)'}, "
                    f"the spec declares {sec.run_as_user}",
                    where,
                )
        priv = bool(c_sc.get("privileged"))
        if priv and not sec.privileged:
            r.drift(
                "VK142",
                label,
                sec,
                None,
                f"container of '{svc.id}' is privileged; the spec does not allow it",
                where,
            )
        if sec.read_only_root_fs:
            if c_sc.get("readOnlyRootFilesystem") is True:
                r.ok("VK143", label, sec, "read_only_root_fs", "readOnlyRootFilesystem: true", where)
            else:
                r.drift(
                    "VK143",
                    label,
                    sec,
                    "read_only_root_fs",
                    f"container of '{svc.id}' has a writable root filesystem; the spec declares it read-only",
                    where,
                )
        if svc.sysctls:
            have = {s.get("name"): str(s.get("value")) for s in pod_sc.get("sysctls") or []}
            bad = [
                f"{k}={v}" + (f" (is {have[k]})" if k in have else " (not set)")
                for k, v in sorted(svc.sysctls.items())
                if have.get(k) != str(v)
            ]
            if bad:
                r.drift(
                    "VK144",
                    label,
                    svc,
                    "sysctls",
                    f"pod sysctls of '{svc.id}' lack {', '.join(bad)} (seed 000 §5.9)",
                    where,
                )
            else:
                r.ok("VK144", label, svc, "sysctls", "sysctls as declared", where)

    # ---- volumes
    def _volume_source(self, vol: dict, ns: str) -> tuple[str, dict, dict | None, list[str] | None, str]:
        """(type, source dict, PV, mount options or None if unknowable, why unknown) of a pod volume."""
        for t in ("nfs", "cephfs", "hostPath", "emptyDir", "configMap", "secret", "csi"):
            if t in vol:
                return t, vol[t] or {}, None, None, ""
        claim = (vol.get("persistentVolumeClaim") or {}).get("claimName")
        if not claim:
            return "other", {}, None, None, ""
        why = self._why_not("PersistentVolumeClaim", "PersistentVolume")
        pvc = next(
            (p for p in self.idx.in_ns("PersistentVolumeClaim", ns) if _meta(p).get("name") == claim), None
        )
        if pvc is None:
            return (
                "pvc",
                {"claimName": claim},
                None,
                None,
                why or f"PersistentVolumeClaim '{claim}' not found",
            )
        pv_name = (pvc.get("spec") or {}).get("volumeName")
        pv = self.idx.pvs.get(pv_name) if pv_name else None
        if pv is None:
            for cand in self.idx.pvs.values():
                ref = (cand.get("spec") or {}).get("claimRef") or {}
                if ref.get("name") == claim and ref.get("namespace") in (None, ns):
                    pv = cand
                    break
        if pv is not None:
            pspec = pv.get("spec") or {}
            for t in ("nfs", "cephfs", "hostPath", "local", "csi"):
                if t in pspec:
                    return t, pspec[t] or {}, pv, list(pspec.get("mountOptions") or []), ""
            return "pv", {}, pv, list(pspec.get("mountOptions") or []), ""
        sc_name = (pvc.get("spec") or {}).get("storageClassName")
        sc = self.idx.classes.get(sc_name) if sc_name else None
        if sc is not None:
            return "pvc", {"claimName": claim}, None, list(sc.get("mountOptions") or []), ""
        return (
            "pvc",
            {"claimName": claim},
            None,
            None,
            (
                why
                or self._why_not("StorageClass")
                or f"claim '{claim}' is bound to no PersistentVolume and its StorageClass is not known"
            ),
        )

    def _mounts(self, svc: Service, wl: dict, c: dict, ns: str, where: str) -> None:
        r, label = self.rec, f"service/{svc.id}"
        vols = {v.get("name"): v for v in _pod_spec(wl).get("volumes") or []}
        vmounts = {m.get("mountPath"): m for m in c.get("volumeMounts") or []}
        for mount in svc.mounts:
            storage: Storage | None = next(
                (s for s in self.spec.topology.storage if s.id == mount.storage), None
            )
            if storage is None or storage.type in ("s3", "redis", "database"):
                continue  # not a filesystem mount (or a dangling id, which `archkit check` reports)
            vm = vmounts.get(mount.path) or vmounts.get(mount.path.rstrip("/"))
            if vm is None:
                r.drift(
                    "VK150",
                    label,
                    mount,
                    "path",
                    f"service '{svc.id}' does not mount '{storage.id}' at {mount.path} (no volumeMount there)",
                    where,
                )
                continue
            vol = vols.get(vm.get("name"), {})
            vtype, src, pv, options, why = self._volume_source(vol, ns)
            problems = []
            if mount.read_only and not vm.get("readOnly"):
                problems.append("it is mounted read-write, the spec declares read-only")
            expect = {
                "nfs": ("nfs",),
                "cephfs": ("cephfs",),
                "tmpfs": ("emptyDir",),
                "emptydir": ("emptyDir",),
                "hostpath": ("hostPath",),
                "local": ("local", "hostPath"),
                "pvc": ("pvc", "pv", "nfs", "cephfs", "local", "csi", "hostPath"),
            }.get(storage.type, ())
            if storage.type == "nfs" and vtype == "csi" and "nfs" in str(src.get("driver", "")):
                vtype = "nfs"
            if vtype == "pvc" and storage.type != "pvc" and options is None:
                pass  # unbound claim: the type is not knowable, the options check says so
            elif expect and vtype not in expect:
                problems.append(f"volume '{vm.get('name')}' is {vtype}, the spec declares {storage.type}")
            if storage.type == "tmpfs" and vtype == "emptyDir" and src.get("medium") != "Memory":
                problems.append("the emptyDir is not medium: Memory (tmpfs)")
            if storage.type == "nfs" and vtype == "nfs" and storage.source and src.get("server"):
                have_src = f"{src.get('server')}:{src.get('path')}"
                if have_src != storage.source:
                    problems.append(f"it mounts {have_src}, the spec declares {storage.source}")
            if problems:
                r.drift(
                    "VK150",
                    label,
                    mount,
                    None,
                    f"mount of '{storage.id}' at {mount.path} in '{svc.id}': {'; '.join(problems)}",
                    where,
                )
            else:
                r.ok("VK150", label, mount, None, f"{storage.id} mounted at {mount.path}", where)
            if storage.mount_options:
                self._mount_options(svc, storage, vm, vtype, pv, options, why, where)

    def _mount_options(self, svc, storage, vm, vtype, pv, options, why, where) -> None:
        r, label = self.rec, f"service/{svc.id}"
        want = list(storage.mount_options)
        if vtype == "nfs" and pv is None and options is None:
            r.drift(
                "VK151",
                label,
                storage,
                "mount_options",
                f"'{storage.id}' is an inline nfs volume in '{svc.id}', which cannot carry mount options: the "
                f"node mounts it hard, without {','.join(want)}; use a PersistentVolume with "
                f"mountOptions [{', '.join(want)}] (seed 000 §3.3)",
                where,
            )
            return
        if options is None:
            r.unknown(
                "VK151",
                label,
                storage,
                "mount_options",
                f"mount options of '{storage.id}' in '{svc.id}' cannot be read: {why or 'unknown volume'}",
                where,
            )
            return
        have = {o.strip() for opt in options for o in str(opt).split(",")}
        missing = [o for o in want if o not in have]
        src = f"PersistentVolume '{_meta(pv).get('name')}'" if pv is not None else "its StorageClass"
        if missing:
            r.drift(
                "VK151",
                label,
                storage,
                "mount_options",
                f"{storage.type.upper()} volume '{storage.id}' ({src}) is mounted without "
                f"{', '.join(missing)}: a stuck server hangs every process that touches {vm.get('mountPath')} "
                "(seed 000 §3.3)",
                where,
            )
        else:
            r.ok(
                "VK151",
                label,
                storage,
                "mount_options",
                f"mount options {','.join(want)} set on {src}",
                where,
            )

    # ---- ports and Services
    def _ports(self, svc: Service, wl: dict, c: dict, ns: str, where: str) -> None:
        r, label = self.rec, f"service/{svc.id}"
        cports = {(p.get("containerPort"), p.get("protocol", "TCP")) for p in _ports_of(c)}
        missing = [p for p in svc.ports if (p.port, p.protocol) not in cports]
        for p in missing:
            r.drift(
                "VK160",
                label,
                p,
                "port",
                f"container of '{svc.id}' does not expose port {p.port}/{p.protocol} ({p.name})",
                where,
            )
        if svc.ports and not missing:
            r.ok("VK160", label, svc, "ports", ", ".join(str(p.port) for p in svc.ports), where)
        if not svc.ports:
            return
        why = self._why_not("Service")
        if why:
            r.unknown("VK161", label, svc, "ports", f"cannot check Services of '{svc.id}': {why}", where)
            return
        labels = _pod_labels(wl)
        ksvcs = [
            s
            for s in self.idx.in_ns("Service", ns)
            if (s.get("spec") or {}).get("selector")
            and _dict_matches((s.get("spec") or {}).get("selector"), labels)
        ]
        served: dict[int, dict] = {}
        for s in ksvcs:
            for sp in (s.get("spec") or {}).get("ports") or []:
                target = _resolve_port(sp.get("targetPort", sp.get("port")), c)
                served.setdefault(target, s)
        needed = [p for p in svc.ports if p.purpose != "metrics" or p.port in served]
        if not ksvcs:
            r.drift(
                "VK161",
                label,
                svc,
                "ports",
                f"no Kubernetes Service selects the pods of '{svc.id}' (labels {_labels_text(labels)}): "
                f"ports {', '.join(str(p.port) for p in needed)} are unreachable by name",
                where,
            )
            return
        lacking = [p for p in needed if p.port not in served]
        for p in lacking:
            r.drift(
                "VK161",
                label,
                p,
                "port",
                f"no Service of '{svc.id}' serves port {p.port} ({p.name}); Services: "
                f"{', '.join(sorted(_meta(s).get('name', '?') for s in ksvcs))}",
                where,
            )
        if not lacking:
            r.ok(
                "VK161",
                label,
                svc,
                "ports",
                f"Service(s) {', '.join(sorted(_meta(s).get('name', '?') for s in ksvcs))} serve "
                f"{', '.join(str(p.port) for p in needed)}",
                where,
            )
        exposed = [
            s
            for s in ksvcs
            if (s.get("spec") or {}).get("type") in ("NodePort", "LoadBalancer")
            or (s.get("spec") or {}).get("externalIPs")
        ]
        if exposed and not svc.public:
            r.drift(
                "VK162",
                label,
                svc,
                "public",
                f"Service {', '.join(_meta(s).get('name', '?') + ' is ' + str((s.get('spec') or {}).get('type', 'ClusterIP')) for s in exposed)}"
                f": '{svc.id}' is reachable from outside the cluster but the spec does not declare it public "
                "(seed 000 §5.11: an exposed Triton NodePort was hijacked for mining)",
                where,
            )
        else:
            r.ok(
                "VK162",
                label,
                svc,
                "public",
                "not exposed outside the cluster" if not svc.public else "public, as declared",
                where,
            )

    # ---- network policies
    def _policies(self, labels: dict, ns: str, direction: str) -> list[dict]:
        out = []
        for pol in self.idx.in_ns("NetworkPolicy", ns):
            ps = pol.get("spec") or {}
            if not selector_matches(ps.get("podSelector") or {}, labels):
                continue
            types = ps.get("policyTypes") or (["Ingress"] + (["Egress"] if ps.get("egress") else []))
            if direction in types:
                out.append(pol)
        return out

    def _peer_covers(self, peer: dict, declared: str, my_ns: str) -> bool | None:
        """Does one NetworkPolicy peer admit the declared source/destination? None: cannot tell."""
        if declared.strip() in WORLD:
            block = peer.get("ipBlock") or {}
            return block.get("cidr") in ("0.0.0.0/0", "::/0")
        if declared.startswith("namespace:"):
            # a whole namespace, e.g. 'namespace:monitoring' for Prometheus or the ingress controller
            nss = peer.get("namespaceSelector")
            return (
                nss is not None
                and "ipBlock" not in peer
                and selector_matches(nss, {"kubernetes.io/metadata.name": declared.split(":", 1)[1]})
            )
        if declared.startswith("service:"):
            other = self.spec.service(declared.split(":", 1)[1])
            if other is None:
                return None
            wl = self.workload(other)
            if wl is None:
                return None
            if "ipBlock" in peer or "podSelector" not in peer:
                return False
            other_ns = _meta(wl).get("namespace") or (
                other.kubernetes.namespace if other.kubernetes else "default"
            )
            if "namespaceSelector" in peer:
                nsl = {"kubernetes.io/metadata.name": other_ns}
                if not selector_matches(peer["namespaceSelector"], nsl):
                    return False
            elif other_ns != my_ns and _meta(wl).get("namespace") is not None:
                return False
            return selector_matches(peer.get("podSelector") or {}, _pod_labels(wl))
        if _cidr(declared) is not None:
            block = peer.get("ipBlock")
            return bool(block) and _cidr_within(declared, block.get("cidr", ""))
        return None  # a host name: NetworkPolicies cannot name hosts

    @staticmethod
    def _ports_cover(rule: dict, ports: list[int], c: dict | None) -> bool:
        rports = rule.get("ports")
        if not rports:
            return True
        if any(p.get("port") is None for p in rports):
            return True
        have: set = set()
        for p in rports:
            first = _resolve_port(p.get("port"), c)
            last = p.get("endPort")
            if isinstance(first, int) and isinstance(last, int) and last >= first:
                have.update(range(first, last + 1))
            else:
                have.add(first)
        return all(p in have for p in ports)

    def _netpol(self, svc: Service, wl: dict, c: dict, ns: str, where: str) -> None:
        if not svc.ingress and not svc.egress:
            return
        r, label = self.rec, f"service/{svc.id}"
        why = self._why_not("NetworkPolicy")
        if why:
            r.unknown(
                "VK170",
                label,
                svc,
                "ingress" if svc.ingress else "egress",
                f"cannot check network policies of '{svc.id}': {why}",
                where,
            )
            return
        labels = _pod_labels(wl)
        for direction, rules, code, key in (
            ("Ingress", svc.ingress, "VK170", "ingress"),
            ("Egress", svc.egress, "VK172", "egress"),
        ):
            if not rules:
                continue
            pols = self._policies(labels, ns, direction)
            field_name = "from" if direction == "Ingress" else "to"
            if not pols:
                allowed = ", ".join(
                    f"{getattr(rule, 'from_', None) or getattr(rule, 'to', '')}"
                    f"{' on ' + ','.join(map(str, rule.ports)) if rule.ports else ''}"
                    for rule in rules
                )
                r.drift(
                    code,
                    label,
                    svc,
                    key,
                    f"no NetworkPolicy restricts {direction.lower()} of '{svc.id}': every pod can "
                    f"{'connect to it' if direction == 'Ingress' else 'be reached from it'}; the spec allows only "
                    f"{allowed} (seed 000 §5.11)",
                    where,
                )
                continue
            pol_rules = [(p, pr) for p in pols for pr in (p.get("spec") or {}).get(key) or []]
            bad = []
            for rule in rules:
                declared = rule.from_ if direction == "Ingress" else rule.to
                port_c = c if direction == "Ingress" else None
                if (
                    _cidr(declared) is None
                    and declared.strip() not in WORLD
                    and not declared.startswith(("service:", "namespace:"))
                ):
                    r.unknown(
                        code,
                        label,
                        rule,
                        field_name,
                        f"a NetworkPolicy cannot name the host '{declared}'; check the egress gateway "
                        "or an FQDN policy of your CNI",
                        where,
                    )
                    continue
                covered: bool | None = False
                for _pol, pr in pol_rules:
                    if not self._ports_cover(pr, rule.ports, port_c):
                        continue
                    peers = pr.get(field_name)
                    if not peers:
                        covered = True
                        break
                    verdicts = [self._peer_covers(peer, declared, ns) for peer in peers]
                    if any(v is True for v in verdicts):
                        covered = True
                        break
                    if any(v is None for v in verdicts):
                        covered = None
                if covered is None:
                    r.unknown(
                        code,
                        label,
                        rule,
                        field_name,
                        f"cannot tell whether the NetworkPolicies of '{svc.id}' allow {declared}: "
                        "the peer service's workload was not found",
                        where,
                    )
                elif not covered:
                    bad.append(rule)
                    r.drift(
                        code,
                        label,
                        rule,
                        field_name,
                        f"NetworkPolicy {', '.join(_meta(p).get('name', '?') for p in pols)} does not allow "
                        f"{direction.lower()} {'from' if direction == 'Ingress' else 'to'} {declared}"
                        f"{' on ' + ','.join(map(str, rule.ports)) if rule.ports else ''} for '{svc.id}', "
                        "which the spec declares: that traffic is dropped",
                        where,
                    )
            if not bad:
                r.ok(
                    code,
                    label,
                    svc,
                    key,
                    f"{direction.lower()} allowed by {', '.join(_meta(p).get('name', '?') for p in pols)}",
                    where,
                )
            if direction == "Ingress":
                self._extra_ingress(svc, rules, pol_rules, ns, where)

    def _extra_ingress(self, svc, rules, pol_rules, ns, where) -> None:
        r, label = self.rec, f"service/{svc.id}"
        declared = [rule.from_ for rule in rules]
        extras = []
        for pol, pr in pol_rules:
            peers = pr.get("from")
            if not peers:
                if not any(d.strip() in WORLD for d in declared):
                    extras.append(f"{_meta(pol).get('name')} admits every source")
                continue
            for peer in peers:
                if not any(self._peer_covers(peer, d, ns) for d in declared):
                    extras.append(f"{_meta(pol).get('name')} admits {_peer_text(peer)}")
        if extras:
            r.drift(
                "VK171",
                label,
                svc,
                "ingress",
                f"'{svc.id}' admits more than the spec declares ({', '.join(declared)}): "
                f"{'; '.join(sorted(set(extras)))}",
                where,
            )
        else:
            r.ok("VK171", label, svc, "ingress", "no source beyond the declared ones", where)


def check_cluster(spec: Spec, state: ClusterState) -> list[Finding]:
    """Every Kubernetes check of `spec` against `state`."""
    return KubeChecker(spec, state).run()


def namespaces_of(spec: Spec) -> list[str]:
    """The namespaces a spec's services live in (for per-namespace fallback reads)."""
    return sorted(
        {
            (s.kubernetes.namespace if s.kubernetes else "default")
            for s in spec.topology.services
            if not s.external
        }
    )


__all__: Iterable[str] = ["check_cluster", "namespaces_of", "quantity", "selector_matches", "KubeChecker"]
