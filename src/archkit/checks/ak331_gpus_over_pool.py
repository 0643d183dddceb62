"""AK331: the services on a GPU pool ask for more whole GPUs than the pool has."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity
from archkit.spec.model import GpuSharing


@register
class GpusOverPool(Rule):
    """GPUs placed on a pool (replicas × GPUs each) exceed its nodes × GPUs per node."""

    code = "AK331"
    name = "gpus-over-pool"
    source = (
        "seed 004 §2.3 (GPUs are whole, non-overcommittable units: a pod that does not fit stays Pending)"
    )
    rationale = """
nvidia.com/gpu is an extended resource Kubernetes never overcommits: on an exclusive pool each
replica needs its GPUs free on one node. When the replicas placed on a pool ask for more GPUs
than its nodes hold, the rest stay Pending and the capacity the spec counts on never exists.
Grow the pool or place fewer replicas. With `max_replicas`, the autoscaler's ceiling is checked
too (a warning: it cannot scale that far).
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        topo = ctx.spec.topology
        for pool in topo.node_pools:
            if pool.gpu is None or pool.gpu.sharing is not GpuSharing.exclusive:
                continue
            per_node = pool.gpu.count
            have = pool.count * per_node
            on_pool = [s for s in topo.services if s.pool == pool.id]
            placed_now = 0.0
            for attr, severity in (("replicas", Severity.ERROR), ("max_replicas", Severity.WARNING)):
                parts, placed = [], 0.0
                for svc in on_pool:
                    gpus = svc.resources.limits.gpu or svc.resources.requests.gpu or 0
                    n = getattr(svc, attr)
                    if attr == "max_replicas":  # the autoscaler's ceiling, where it is above replicas
                        n = max(n or 0, svc.replicas)
                    if gpus and n:
                        placed += n * gpus
                        parts.append(f"{svc.id}: {n} × {gpus:g}")
                if attr == "replicas":
                    placed_now = placed
                if placed > have and (attr == "replicas" or not placed_now > have):
                    nodes = -(-placed // per_node)
                    what = "place" if attr == "replicas" else "may scale to"
                    yield ctx.at(
                        pool,
                        "count",
                        f"node pool '{pool.id}' has {have} GPUs ({pool.count} nodes × {per_node}) but its services "
                        f"{what} {placed:g} ({'; '.join(parts)})",
                        severity=severity,
                        hint=f"grow the pool to at least {nodes:g} nodes, or place fewer replicas",
                    )
