"""A service's security context: non-root (VK140), its UID (VK141), privileged (VK142), read-only root
filesystem (VK143), sysctls (VK144)."""

from __future__ import annotations

from typing import Any

from archkit.verify.kube.context import KubeContext, ServiceCheck, ServiceTarget
from archkit.verify.kube.helpers import pod_spec
from archkit.verify.registry import Code


def effective(t: ServiceTarget, key: str) -> Any:
    """A securityContext field as it applies to the container: its own, else the pod's."""
    c_sc = t.c.get("securityContext") or {}
    pod_sc = pod_spec(t.wl).get("securityContext") or {}
    return c_sc[key] if key in c_sc else pod_sc.get(key)


class RunAsNonRoot(ServiceCheck):
    """The container must run as a non-root user when the spec says so."""

    code = Code("VK140", "runAsNonRoot", "Containers run as a non-root user.", "seed 000 §4.1")

    def run(self, ctx: KubeContext, t: ServiceTarget) -> None:
        r, label, svc, sec, where = ctx.rec, t.label, t.svc, t.svc.security, t.where
        if not sec.run_as_non_root:
            return
        user = effective(t, "runAsUser")
        if effective(t, "runAsNonRoot") is True and user != 0:
            r.ok(self.code, label, sec, "runAsNonRoot: true", field="run_as_non_root", where=where)
        elif user == 0:
            r.drift(
                self.code,
                label,
                sec,
                f"service '{svc.id}' runs as root (runAsUser 0); the spec requires a non-root user "
                "(seed 000 §4.1)",
                field="run_as_non_root",
                where=where,
            )
        else:
            r.drift(
                self.code,
                label,
                sec,
                f"service '{svc.id}' does not set runAsNonRoot: true, so the image's USER decides and "
                "may be root (seed 000 §4.1)",
                field="run_as_non_root",
                where=where,
            )


class RunAsUser(ServiceCheck):
    """The container runs as the declared UID."""

    code = Code("VK141", "runAsUser", "The declared UID (runAsUser 1001).", "seed 000 §4.1, §5.6")

    def run(self, ctx: KubeContext, t: ServiceTarget) -> None:
        r, label, svc, sec, where = ctx.rec, t.label, t.svc, t.svc.security, t.where
        if sec.run_as_user is None:
            return
        user = effective(t, "runAsUser")
        if user == sec.run_as_user:
            r.ok(self.code, label, sec, f"runAsUser {user}", field="run_as_user", where=where)
        else:
            r.drift(
                self.code,
                label,
                sec,
                f"service '{svc.id}' runs as user {user if user is not None else '(image default)'}, "
                f"the spec declares {sec.run_as_user}",
                field="run_as_user",
                where=where,
            )


class Privileged(ServiceCheck):
    """The container is not privileged unless the spec allows it."""

    code = Code(
        "VK142", "privileged", "Privileged containers can take over the node.", "Kubernetes securityContext"
    )

    def run(self, ctx: KubeContext, t: ServiceTarget) -> None:
        r, label, svc, sec, where = ctx.rec, t.label, t.svc, t.svc.security, t.where
        c_sc = t.c.get("securityContext") or {}
        priv = bool(c_sc.get("privileged"))
        if priv and not sec.privileged:
            r.drift(
                self.code,
                label,
                sec,
                f"container of '{svc.id}' is privileged; the spec does not allow it",
                where=where,
            )


class ReadOnlyRootFs(ServiceCheck):
    """The root filesystem is read-only when the spec says so."""

    code = Code(
        "VK143",
        "read-only root filesystem",
        "As declared in the spec's security section.",
        "Kubernetes securityContext",
    )

    def run(self, ctx: KubeContext, t: ServiceTarget) -> None:
        r, label, svc, sec, where = ctx.rec, t.label, t.svc, t.svc.security, t.where
        if not sec.read_only_root_fs:
            return
        c_sc = t.c.get("securityContext") or {}
        if c_sc.get("readOnlyRootFilesystem") is True:
            r.ok(
                self.code, label, sec, "readOnlyRootFilesystem: true", field="read_only_root_fs", where=where
            )
        else:
            r.drift(
                self.code,
                label,
                sec,
                f"container of '{svc.id}' has a writable root filesystem; the spec declares it read-only",
                field="read_only_root_fs",
                where=where,
            )


class Sysctls(ServiceCheck):
    """The pod sets the kernel parameters the service declares."""

    code = Code(
        "VK144",
        "sysctls",
        "Kernel parameters the service needs, set in the pod securityContext.",
        "seed 000 §5.9",
    )

    def run(self, ctx: KubeContext, t: ServiceTarget) -> None:
        r, label, svc, where = ctx.rec, t.label, t.svc, t.where
        if not svc.sysctls:
            return
        pod_sc = pod_spec(t.wl).get("securityContext") or {}
        have = {s.get("name"): str(s.get("value")) for s in pod_sc.get("sysctls") or []}
        bad = [
            f"{k}={v}" + (f" (is {have[k]})" if k in have else " (not set)")
            for k, v in sorted(svc.sysctls.items())
            if have.get(k) != str(v)
        ]
        if bad:
            r.drift(
                self.code,
                label,
                svc,
                f"pod sysctls of '{svc.id}' lack {', '.join(bad)} (seed 000 §5.9)",
                field="sysctls",
                where=where,
            )
        else:
            r.ok(self.code, label, svc, "sysctls as declared", field="sysctls", where=where)
