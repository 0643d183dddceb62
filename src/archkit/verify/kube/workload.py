"""A service's workload: found as declared (VK110), its image (VK116), replicas (VK111) and readiness (VK112)."""

from __future__ import annotations

from archkit.spec.model import Service
from archkit.verify.kube.context import KubeContext, ServiceCheck, ServiceTarget
from archkit.verify.kube.helpers import WORKLOAD_KINDS, labels_text, meta
from archkit.verify.registry import Code


class WorkloadFound(ServiceCheck):
    """The service is deployed as its declared workload, with its container."""

    code = Code(
        "VK110",
        "workload exists",
        "Every service of the topology must be deployed as its declared workload.",
        "Kubernetes workloads API (Deployment, StatefulSet, DaemonSet)",
    )

    @classmethod
    def resolve(cls, ctx: KubeContext, svc: Service) -> ServiceTarget | None:
        """Find the workload and container; None when there is none to check (the others skip)."""
        r, label = ctx.rec, f"service/{svc.id}"
        ref = svc.kubernetes
        kind = ref.kind if ref else "Deployment"
        ns = ref.namespace if ref else "default"
        why = ctx.why_not(*WORKLOAD_KINDS)
        wl, found_kind = ctx.find_workload(svc)
        ctx._workloads[svc.id] = wl
        node = ref if ref else svc
        if wl is None:
            if why:
                r.unknown(cls.code, label, node, f"cannot look up the workload of '{svc.id}': {why}")
            else:
                name = ref.name if ref and ref.name else svc.id
                r.drift(
                    cls.code,
                    label,
                    node,
                    f"service '{svc.id}' is not deployed: no {kind} named '{name}'"
                    f"{' or labelled ' + labels_text(ref.labels) if ref and ref.labels else ''}"
                    f" in namespace '{ns}' ({ctx.state.source})",
                )
            return None
        where = ctx.state.origin(wl)
        wname = meta(wl).get("name")
        if found_kind != kind:
            r.drift(
                cls.code,
                label,
                node,
                f"service '{svc.id}' is deployed as {found_kind} '{wname}', the spec says {kind}",
                field="kind" if ref else None,
                where=where,
            )
        else:
            r.ok(cls.code, label, node, f"{kind} {ns}/{wname}", where=where)
        container = ctx.container(svc, wl)
        if container is None:
            r.drift(cls.code, label, node, f"{found_kind} '{wname}' has no containers", where=where)
            return None
        if ref and ref.container and container.get("name") != ref.container:
            r.drift(
                cls.code,
                label,
                ref,
                f"{found_kind} '{wname}' has no container named '{ref.container}'; checking "
                f"'{container.get('name')}' instead",
                field="container",
                where=where,
            )
        pool = ctx.spec.pool(svc.pool)
        return ServiceTarget(svc, label, ref, kind, found_kind, ns, wl, container, where, pool)


class Image(ServiceCheck):
    """The container runs the declared image."""

    code = Code(
        "VK116",
        "image",
        "The deployed image must be the declared one (pin exact versions).",
        "seed 000 §4.1",
    )

    def run(self, ctx: KubeContext, t: ServiceTarget) -> None:
        svc = t.svc
        if not svc.image:
            return
        have = t.c.get("image")
        if have == svc.image:
            ctx.rec.ok(self.code, t.label, svc, "image as declared", field="image", where=t.where)
        else:
            ctx.rec.drift(
                self.code,
                t.label,
                svc,
                f"service '{svc.id}' runs image {have}, the spec declares {svc.image}",
                field="image",
                where=t.where,
            )


def _desired_ready(t: ServiceTarget) -> tuple[int | None, int]:
    spec, status = t.wl.get("spec") or {}, t.wl.get("status") or {}
    if t.found_kind == "DaemonSet":
        return status.get("desiredNumberScheduled"), status.get("numberReady", 0)
    return spec.get("replicas", 1), status.get("readyReplicas", 0)


class Replicas(ServiceCheck):
    """The workload asks for the declared replicas (any count in min..max with autoscaling)."""

    code = Code(
        "VK111",
        "replicas",
        "The declared replica count is the capacity the budgets were computed for.",
        "the capacity analysis (AK2xx) of the spec",
    )

    def run(self, ctx: KubeContext, t: ServiceTarget) -> None:
        svc = t.svc
        if t.found_kind == "DaemonSet":
            return
        desired, _ = _desired_ready(t)
        lo = svc.min_replicas if svc.min_replicas is not None else svc.replicas
        hi = svc.max_replicas if svc.max_replicas is not None else svc.replicas
        if lo <= desired <= hi:  # type: ignore[operator]  # a Deployment always has a count
            ctx.rec.ok(self.code, t.label, svc, f"{desired} replica(s)", field="replicas", where=t.where)
        else:
            want = f"{svc.replicas}" if lo == hi else f"{lo}–{hi}"
            ctx.rec.drift(
                self.code,
                t.label,
                svc,
                f"service '{svc.id}' runs {desired} replica(s), the spec declares {want}: the capacity "
                "the latency budget was computed for is not there",
                field="replicas",
                where=t.where,
            )


class ReadyReplicas(ServiceCheck):
    """Every desired replica is ready (live cluster or snapshot only)."""

    code = Code(
        "VK112",
        "ready replicas",
        "Replicas that are not ready serve no traffic.",
        "Kubernetes workload status (readyReplicas, numberReady)",
    )

    def run(self, ctx: KubeContext, t: ServiceTarget) -> None:
        r, svc, label, where = ctx.rec, t.svc, t.label, t.where
        if ctx.state.mode == "manifests":
            r.unknown(
                self.code,
                label,
                svc,
                "manifests carry no status; ready replicas are checked against a live cluster or a snapshot",
                field="replicas",
                where=where,
            )
            return
        desired, ready = _desired_ready(t)
        if desired is None:
            r.unknown(self.code, label, svc, "the workload has no status", field="replicas", where=where)
        elif ready >= desired and desired > 0:
            r.ok(self.code, label, svc, f"{ready}/{desired} ready", field="replicas", where=where)
        elif desired == 0 and svc.replicas == 0:
            r.ok(self.code, label, svc, "0 replicas, as declared", field="replicas", where=where)
        else:
            r.drift(
                self.code,
                label,
                svc,
                f"only {ready} of {desired} replica(s) of '{svc.id}' are ready",
                field="replicas",
                where=where,
            )
