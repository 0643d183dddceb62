"""The Kubernetes source: node pools against nodes, services against workloads, Services and NetworkPolicies.

Everything reads a `ClusterState` (live, snapshot or manifests alike). When a kind needed by
a check could not be read completely (RBAC, timeout, a manifests folder has no nodes) the
check reports `unknown` with the reason, never `drift`: absence in an incomplete list
proves nothing. One module per concern holds its checks, each a small class carrying its code.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from archkit.errors import InputError, require_extra
from archkit.spec.model import Spec
from archkit.verify.findings import Finding
from archkit.verify.kube.container import (
    GpuRequestsEqualLimits,
    LivenessProbe,
    ReadinessProbe,
    Resources,
    StartupProbe,
)
from archkit.verify.kube.context import KubeContext, PoolCheck, ServiceCheck
from archkit.verify.kube.gpu_env import GpuDriverEnv
from archkit.verify.kube.helpers import quantity, selector_matches
from archkit.verify.kube.netpol import NetworkPolicies
from archkit.verify.kube.placement import Placement, PodsOnPool, Tolerations
from archkit.verify.kube.pools import POOL_CHECKS, PoolNodes
from archkit.verify.kube.security import Privileged, ReadOnlyRootFs, RunAsNonRoot, RunAsUser, Sysctls
from archkit.verify.kube.services import ContainerPorts, ServiceExposure, ServicePorts
from archkit.verify.kube.volumes import Mounts
from archkit.verify.kube.workload import Image, ReadyReplicas, Replicas, WorkloadFound
from archkit.verify.reach import allowed
from archkit.verify.registry import Code, DocRow, Option, Providers, Reading, Source, register_source
from archkit.verify.state import ClusterState, load_manifests, load_snapshot, read_live

# In the order their findings appear for one service (the report groups findings by object).
SERVICE_CHECKS: tuple[type[ServiceCheck], ...] = (
    Image,
    Replicas,
    ReadyReplicas,
    Placement,
    Tolerations,
    PodsOnPool,
    Resources,
    GpuRequestsEqualLimits,
    GpuDriverEnv,
    LivenessProbe,
    ReadinessProbe,
    StartupProbe,
    RunAsNonRoot,
    RunAsUser,
    Privileged,
    ReadOnlyRootFs,
    Sysctls,
    Mounts,
    ContainerPorts,
    ServicePorts,
    ServiceExposure,
    NetworkPolicies,
)


def check_cluster(spec: Spec, state: ClusterState) -> list[Finding]:
    """Every Kubernetes check of `spec` against `state`."""
    ctx = KubeContext(spec, state)
    pool_checks = [c() for c in POOL_CHECKS]
    service_checks = [c() for c in SERVICE_CHECKS]
    for pool in spec.topology.node_pools:
        _check_object(ctx, pool, f"pool/{pool.id}", PoolNodes.code, PoolNodes.resolve, pool_checks)
    for svc in spec.topology.services:
        if not svc.external:
            _check_object(
                ctx, svc, f"service/{svc.id}", WorkloadFound.code, WorkloadFound.resolve, service_checks
            )
    return ctx.rec.findings


def _check_object(
    ctx: KubeContext,
    obj: Any,
    label: str,
    code: Code,
    resolve: Callable[[KubeContext, Any], Any],
    checks: Sequence[PoolCheck | ServiceCheck],
) -> None:
    """Find what one spec object is deployed as, then run its checks on it, guarded."""

    def run() -> None:
        target = resolve(ctx, obj)
        if target is not None:
            for chk in checks:
                chk.run(ctx, target)

    ctx.guarded(obj, label, code, run)


def namespaces_of(spec: Spec) -> list[str]:
    """The namespaces a spec's services live in (for per-namespace fallback reads)."""
    return sorted(
        {
            (s.kubernetes.namespace if s.kubernetes else "default")
            for s in spec.topology.services
            if not s.external
        }
    )


@register_source
class KubeSource(Source):
    """A Kubernetes cluster: live through the API, a `kubectl get -o yaml` snapshot, or rendered manifests."""

    name = "kube"
    title = "Kubernetes"
    prefix = "VK"
    default = True
    options = (
        Option(
            "snapshot",
            "Output of `kubectl get nodes,deploy,sts,ds,svc,netpol,pods,pvc,pv,sc -A -o yaml`.",
            Path,
        ),
        Option(
            "manifests",
            "Folder (or file) of rendered manifests (Helm/kustomize output): checks before deploy.",
            Path,
        ),
        Option(
            "live", "Read the live cluster of the kubeconfig (implied by --context/--kubeconfig).", bool, True
        ),
        Option("kubeconfig", "Kubeconfig file (default: $KUBECONFIG, ~/.kube/config).", Path),
        Option("context", "Kubeconfig context to use."),
        Option("in_cluster", "Use the pod's service account.", bool, True),
    )
    docs = (
        DocRow(
            "`--snapshot FILE`",
            "the output of `kubectl get nodes,deploy,sts,ds,svc,netpol,pods,pvc,pv,sc -A -o yaml` (or `-o json`)",
            "a v1 List; multi-document YAML also works. Kinds missing from the file are *unknown*, except the "
            "seven of `kubectl get nodes,deploy,sts,ds,svc,netpol,pods`, which it always lists. In a YAML List, "
            "pods outside the spec's namespaces are skipped without being parsed.",
        ),
        DocRow(
            "`--manifests DIR`",
            "rendered Helm/kustomize YAML (`helm template`, `kustomize build`), multi-document files",
            "for CI before deploy. No nodes and no status: pool checks and ready replicas are *unknown*, never "
            "drift. Findings point at `file:line` of the manifest. Secret documents are dropped unread.",
        ),
        DocRow(
            "live (default, `--live`, `--context`, `--kubeconfig`, `--in-cluster`)",
            "the cluster through the `kubernetes` client",
            "one list call chain per kind, paginated (`limit=500` + `continue`), never one call per object; "
            "Secrets are never read. A 403 on an all-namespaces list falls back to the spec's namespaces. "
            "401/403, 410 (expired continue token), 5xx and timeouts leave the kind *forbidden*, *partial* or "
            "*failed*: its checks become *unknown* with the reason, the rest still run. The first network "
            "error (refused, timeout) stops reading instead of waiting once per kind.",
        ),
    )
    checks = (PoolNodes, *POOL_CHECKS, WorkloadFound, *SERVICE_CHECKS)
    default_options = {"live": True}  # like kubectl: no source named means the current cluster

    def read(self, spec: Spec, options: Mapping[str, Any], timeout_s: float, providers: Providers) -> Any:
        snapshot, manifests = options.get("snapshot"), options.get("manifests")
        context, kubeconfig = options.get("context"), options.get("kubeconfig")
        in_cluster = bool(options.get("in_cluster"))
        live = bool(options.get("live")) or context is not None or kubeconfig is not None
        if sum(x is not None for x in (snapshot, manifests)) + bool(live or in_cluster) > 1:
            raise InputError("give one cluster source: --snapshot, --manifests or a live cluster")
        if snapshot is not None:
            return load_snapshot(snapshot, pod_namespaces=namespaces_of(spec))
        if manifests is not None:
            return load_manifests(manifests)
        require_extra("archkit verify against a live cluster", "cluster")
        return read_live(
            str(kubeconfig) if kubeconfig else None,
            context,
            in_cluster,
            namespaces_of(spec),
            timeout_s,
            allow=allowed(providers),
        )

    def check(self, spec: Spec, given: Any, timeout_s: float) -> Reading:
        state: ClusterState = given
        entry = {
            "area": self.name,
            "source": state.source,
            "mode": state.mode,
            "api_calls": state.api_calls,
            "kinds": {
                k: {"status": r.status, "message": r.message, "calls": r.calls}
                for k, r in sorted(state.reads.items())
            },
        }
        return Reading(entry, check_cluster(spec, state), state.api_calls)


__all__ = ["KubeSource", "check_cluster", "namespaces_of", "quantity", "selector_matches"]
