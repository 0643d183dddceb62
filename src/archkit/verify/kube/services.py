"""A service's ports: exposed by the container (VK160), served by a Kubernetes Service (VK161), not
exposed outside the cluster unless declared public (VK162)."""

from __future__ import annotations

from archkit.verify.kube.context import KubeContext, ServiceCheck, ServiceTarget
from archkit.verify.kube.helpers import labels_text, meta, pod_labels, ports_of
from archkit.verify.registry import Code


class ContainerPorts(ServiceCheck):
    """The container exposes each declared port."""

    code = Code(
        "VK160", "container ports", "Each declared port is exposed by the container.", "Kubernetes pod spec"
    )

    def run(self, ctx: KubeContext, t: ServiceTarget) -> None:
        r, label, svc, where = ctx.rec, t.label, t.svc, t.where
        cports = {(p.get("containerPort"), p.get("protocol", "TCP")) for p in ports_of(t.c)}
        missing = [p for p in svc.ports if (p.port, p.protocol) not in cports]
        for p in missing:
            r.drift(
                self.code,
                label,
                p,
                f"container of '{svc.id}' does not expose port {p.port}/{p.protocol} ({p.name})",
                field="port",
                where=where,
            )
        if svc.ports and not missing:
            r.ok(self.code, label, svc, ", ".join(str(p.port) for p in svc.ports), field="ports", where=where)


class ServicePorts(ServiceCheck):
    """A Kubernetes Service selects the pods and serves each declared port."""

    code = Code(
        "VK161",
        "Service ports",
        "A Kubernetes Service selects the pods and serves each declared port.",
        "Kubernetes Service",
    )

    def run(self, ctx: KubeContext, t: ServiceTarget) -> None:
        r, label, svc, where = ctx.rec, t.label, t.svc, t.where
        if not svc.ports:
            return
        why = ctx.why_not("Service")
        if why:
            r.unknown(
                self.code,
                label,
                svc,
                f"cannot check Services of '{svc.id}': {why}",
                field="ports",
                where=where,
            )
            return
        ksvcs = ctx.selecting_services(t)
        served = ctx.served_ports(t)
        needed = [p for p in svc.ports if p.purpose != "metrics" or p.port in served]
        if not ksvcs:
            r.drift(
                self.code,
                label,
                svc,
                f"no Kubernetes Service selects the pods of '{svc.id}' (labels {labels_text(pod_labels(t.wl))}): "
                f"ports {', '.join(str(p.port) for p in needed)} are unreachable by name",
                field="ports",
                where=where,
            )
            return
        lacking = [p for p in needed if p.port not in served]
        for p in lacking:
            r.drift(
                self.code,
                label,
                p,
                f"no Service of '{svc.id}' serves port {p.port} ({p.name}); Services: "
                f"{', '.join(sorted(meta(s).get('name', '?') for s in ksvcs))}",
                field="port",
                where=where,
            )
        if not lacking:
            r.ok(
                self.code,
                label,
                svc,
                f"Service(s) {', '.join(sorted(meta(s).get('name', '?') for s in ksvcs))} serve "
                f"{', '.join(str(p.port) for p in needed)}",
                field="ports",
                where=where,
            )


class ServiceExposure(ServiceCheck):
    """No Service exposes a service outside the cluster unless the spec declares it public."""

    code = Code(
        "VK162",
        "Service exposure",
        "A service not declared public must not be a NodePort or LoadBalancer "
        "(a Triton NodePort on the internet was hijacked for mining).",
        "seed 000 §5.11",
    )

    def run(self, ctx: KubeContext, t: ServiceTarget) -> None:
        r, label, svc, where = ctx.rec, t.label, t.svc, t.where
        if not svc.ports or ctx.why_not("Service"):
            return
        ksvcs = ctx.selecting_services(t)
        if not ksvcs:
            return  # VK161 said that nothing selects the pods
        exposed = [
            s
            for s in ksvcs
            if (s.get("spec") or {}).get("type") in ("NodePort", "LoadBalancer")
            or (s.get("spec") or {}).get("externalIPs")
        ]
        if exposed and not svc.public:
            kinds = ", ".join(
                meta(s).get("name", "?") + " is " + str((s.get("spec") or {}).get("type", "ClusterIP"))
                for s in exposed
            )
            r.drift(
                self.code,
                label,
                svc,
                f"Service {kinds}"
                f": '{svc.id}' is reachable from outside the cluster but the spec does not declare it public "
                "(seed 000 §5.11: an exposed Triton NodePort was hijacked for mining)",
                field="public",
                where=where,
            )
        else:
            r.ok(
                self.code,
                label,
                svc,
                "not exposed outside the cluster" if not svc.public else "public, as declared",
                field="public",
                where=where,
            )
