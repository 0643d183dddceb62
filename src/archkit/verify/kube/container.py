"""A service's container: requests and limits (VK120, VK121) and probes (VK130-VK132)."""

from __future__ import annotations

from typing import ClassVar

from archkit.spec.model import Probe
from archkit.verify.kube.context import KubeContext, ServiceCheck, ServiceTarget
from archkit.verify.kube.helpers import GPU, num, quantity, resolve_port
from archkit.verify.registry import Code


class Resources(ServiceCheck):
    """CPU, memory and GPU requests and limits as declared."""

    code = Code(
        "VK120",
        "requests and limits",
        "CPU, memory and GPU requests/limits as declared are what the capacity analysis assumed.",
        "the capacity analysis (AK2xx) of the spec",
    )

    def run(self, ctx: KubeContext, t: ServiceTarget) -> None:
        r, label, svc, c, where = ctx.rec, t.label, t.svc, t.c, t.where
        res = c.get("resources") or {}
        problems: list[tuple[str, str, str]] = []
        checked = 0
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
                            f"the spec declares {side}.{key} {num(w)}{unit} but the container sets none",
                        )
                    )
                elif abs(h / scale - w) > 1e-6 * max(1.0, w):
                    problems.append(
                        (side, fld, f"{side}.{key} is {have.get(key)}, the spec declares {num(w)}{unit}")
                    )
        for side, fld, msg in problems:
            r.drift(
                self.code,
                label,
                getattr(svc.resources, side),
                f"service '{svc.id}': {msg}",
                field=fld,
                where=where,
            )
        if checked and not problems:
            r.ok(self.code, label, svc, "requests and limits as declared", field="resources", where=where)


class GpuRequestsEqualLimits(ServiceCheck):
    """The nvidia.com/gpu request equals the limit."""

    code = Code(
        "VK121",
        "GPU requests = limits",
        "Kubernetes refuses a pod whose nvidia.com/gpu request differs from its limit.",
        "seed 004 §2.3",
    )

    def run(self, ctx: KubeContext, t: ServiceTarget) -> None:
        r, label, svc, c, where = ctx.rec, t.label, t.svc, t.c, t.where
        res = c.get("resources") or {}
        req = quantity((res.get("requests") or {}).get(GPU))
        lim = quantity((res.get("limits") or {}).get(GPU))
        if req is None and lim is None:
            return  # no GPU asked for; a declared GPU the container lacks is VK120's finding
        if lim is None:
            r.drift(
                self.code,
                label,
                svc.resources,
                f"service '{svc.id}' requests {GPU} {num(req or 0)} but sets no limit: Kubernetes refuses "
                "extended resources without a limit (seed 004 §2.3)",
                field="limits",
                where=where,
            )
        elif req is not None and req != lim:
            r.drift(
                self.code,
                label,
                svc.resources,
                f"service '{svc.id}' requests {GPU} {num(req)} but limits {num(lim)}: Kubernetes refuses "
                "to schedule it (seed 004 §2.3: GPU requests must equal limits)",
                field="requests",
                where=where,
            )
        else:
            r.ok(self.code, label, svc.resources, f"{GPU} requests = limits = {num(lim)}", where=where)


class ProbeCheck(ServiceCheck):
    """Base of the probe checks: the declared probe is set on the container, as declared."""

    kind: ClassVar[str]
    key: ClassVar[str]
    why: ClassVar[str]  # what goes wrong without it

    def run(self, ctx: KubeContext, t: ServiceTarget) -> None:
        svc, kind, key, code = t.svc, self.kind, self.key, self.code
        want: Probe | None = getattr(svc.probes, kind)
        if want is None:
            return
        have = t.c.get(key)
        if not have:
            ctx.rec.drift(
                code,
                t.label,
                want,
                f"service '{svc.id}' has no {kind} probe ({key}): {self.why}",
                where=t.where,
            )
            return
        diffs = _probe_diffs(want, have, t.c)
        if diffs:
            ctx.rec.drift(
                code,
                t.label,
                want,
                f"{kind} probe of '{svc.id}' differs from the spec: {'; '.join(diffs)}",
                where=t.where,
            )
        else:
            ctx.rec.ok(code, t.label, want, f"{kind} probe as declared", where=t.where)


class LivenessProbe(ProbeCheck):
    """The declared liveness probe is set."""

    code = Code(
        "VK130",
        "liveness probe",
        "A liveness probe restarts a pod stuck, e.g. on a hung NFS mount.",
        "seed 000 §3.3",
    )
    kind, key = "liveness", "livenessProbe"
    why = "a hung process (e.g. stuck on NFS) is never restarted"


class ReadinessProbe(ProbeCheck):
    """The declared readiness probe is set."""

    code = Code(
        "VK131",
        "readiness probe",
        "Without a readiness probe, traffic reaches pods whose models are not loaded.",
        "Kubernetes container probes",
    )
    kind, key = "readiness", "readinessProbe"
    why = "traffic reaches pods before their models are loaded"


class StartupProbe(ProbeCheck):
    """The declared startup probe is set."""

    code = Code(
        "VK132",
        "startup probe",
        "A startup probe protects slow model loads from the liveness probe.",
        "Kubernetes container probes",
    )
    kind, key = "startup", "startupProbe"
    why = "a slow model load is killed by the liveness probe"


def _probe_diffs(want: Probe, have: dict, c: dict) -> list[str]:
    diffs = []
    if want.http_path is not None or (want.port is not None and want.exec is None and want.tcp_port is None):
        get = have.get("httpGet")
        if not get:
            diffs.append(
                f"expected an HTTP GET on {want.http_path or '/'}:{want.port}, found "
                f"{', '.join(k for k in have if k in ('exec', 'tcpSocket', 'grpc')) or 'another kind'}"
            )
        else:
            if want.http_path is not None and get.get("path") != want.http_path:
                diffs.append(f"path {get.get('path')} instead of {want.http_path}")
            if want.port is not None and resolve_port(get.get("port"), c) != want.port:
                diffs.append(f"port {get.get('port')} instead of {want.port}")
    if want.exec is not None:
        cmd = (have.get("exec") or {}).get("command")
        if cmd != want.exec:
            diffs.append(
                f"command {cmd!r} instead of {want.exec!r}" if cmd else f"expected exec {want.exec!r}"
            )
    if want.tcp_port is not None:
        port = (have.get("tcpSocket") or {}).get("port")
        if resolve_port(port, c) != want.tcp_port:
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
                diffs.append(f"{key} {got} instead of {num(getattr(want, fld))}")
    return diffs


# ---- security
