"""AK306: a service mounts network storage without a liveness probe that times out on it."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity

NETWORK_FS = {"nfs", "cephfs"}


@register
class NetworkMountWithoutProbe(Rule):
    """A service mounts NFS/CephFS but no liveness probe exercises the mount under a `timeout`."""

    code = "AK306"
    name = "network-mount-without-probe"
    severity = Severity.WARNING
    source = "seed 000 §3.3 (livenessProbe `timeout 5s ls /mnt/model/latest.pt || exit 1`)"
    rationale = """
An HTTP health endpoint keeps answering while worker threads hang on a stuck network mount
(seed 000 §3.3: CPU at 100 %, every request blocked in stat()). The liveness probe must touch
the mount itself with a timeout — `timeout 5s ls <mount>/<file> || exit 1` — so Kubernetes
restarts the pod instead of leaving it hung.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        spec = ctx.spec
        kinds = {s.id: s.type for s in spec.topology.storage}
        for svc in spec.topology.services:
            mounts = [m for m in svc.mounts if kinds.get(m.storage) in NETWORK_FS]
            if not mounts:
                continue
            probe = svc.probes.liveness
            cmd = " ".join(probe.exec) if probe and probe.exec else ""
            for m in mounts:
                if "timeout" in cmd and m.path in cmd:
                    continue
                yield ctx.at(
                    m,
                    "path",
                    f"service '{svc.id}' mounts {kinds[m.storage]} '{m.storage}' at "
                    f"{m.path} but no liveness probe checks it with a timeout",
                    hint=f"liveness: {{exec: [sh, -c, 'timeout 5s ls {m.path} || exit 1']}}",
                )
