"""AK305: an NFS mount lacks soft,timeo,retrans."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic


@register
class NfsMountOptions(Rule):
    """NFS storage is mounted without `soft`, `timeo=` and `retrans=`: a stuck server hangs the pod."""

    code = "AK305"
    name = "nfs-mount-options"
    source = "seed 000 §3.3 (NFS must be mounted soft,intr,timeo=10,retrans=3: 1 s × 3 retries)"
    rationale = """
A hard NFS mount retries forever: when the server or network stalls, every process touching
/mnt/model blocks in stat() and the pod is useless while looking alive (seed 000 §3.3's
"recommendations stopped updating" incident). `soft` with `timeo=10` (tenths of a second)
and `retrans=3` bounds the hang to about 3 s and returns an error instead.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for st in ctx.spec.topology.storage:
            if st.type != "nfs":
                continue
            opts = [o.strip() for o in st.mount_options]
            missing = []
            if "soft" not in opts or "hard" in opts:
                missing.append("soft")
            for k in ("timeo", "retrans"):
                if not any(o.startswith(k + "=") for o in opts):
                    missing.append(k + "=")
            if missing:
                field = "mount_options" if st.mount_options else "type"
                yield ctx.at(
                    st,
                    field,
                    f"NFS storage '{st.id}' is mounted without {', '.join(missing)}",
                    hint="mount_options: [soft, intr, timeo=10, retrans=3]",
                )
