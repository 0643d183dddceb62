"""AK330: a service with zero replicas, or a node pool with zero nodes that services are placed on."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic


@register
class ReplicasZero(Rule):
    """`replicas: 0` (or a pool of 0 nodes): nothing serves the requests the data flow sends there."""

    code = "AK330"
    name = "replicas-zero"
    source = (
        "seed 000 §2.1 (capacity is computed over the serving instances: with none there is nothing "
        "to compute); Kubernetes Deployment semantics (replicas 0 runs no pod)"
    )
    rationale = """
A Deployment with 0 replicas runs no pod, so every request routed to the service fails; the
capacity analysis cannot divide the load by zero servers and would otherwise have to pretend
there is one. A node pool of 0 nodes cannot host the services placed on it. Use at least 1, or
remove the service from the data flow.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        topo = ctx.spec.topology
        for svc in topo.services:
            if svc.replicas == 0:
                yield ctx.at(svc, "replicas", f"service '{svc.id}' has 0 replicas: no pod serves it")
        placed = {svc.pool for svc in topo.services}
        for pool in topo.node_pools:
            if pool.count == 0 and pool.id in placed:
                yield ctx.at(
                    pool, "count", f"node pool '{pool.id}' has 0 nodes but services are placed on it"
                )
