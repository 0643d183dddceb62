"""Node pools against the nodes carrying their labels: count (VK101), GPUs (VK102), taints (VK103)."""

from __future__ import annotations

from archkit.spec.model import NodePool
from archkit.verify.kube.context import KubeContext, PoolCheck, PoolTarget
from archkit.verify.kube.helpers import GPU, labels_text, meta, num, quantity, taint
from archkit.verify.registry import Code


class PoolNodes(PoolCheck):
    """The pool has as many nodes as declared."""

    code = Code(
        "VK101",
        "pool node count",
        "A pool with fewer nodes than declared cannot hold the replicas placed on it "
        "(pools are per role, e.g. gpu-node-t4 for inference).",
        "seed 000 §3.3",
    )

    @classmethod
    def resolve(cls, ctx: KubeContext, pool: NodePool) -> PoolTarget | None:
        """Count the pool's nodes; None when they cannot be told apart (the other pool checks skip)."""
        r, label = ctx.rec, f"pool/{pool.id}"
        why = ctx.why_not("Node")
        if why:
            r.unknown(
                cls.code, label, pool, f"cannot count the nodes of pool '{pool.id}': {why}", field="count"
            )
            return None
        if not pool.labels:
            r.unknown(
                cls.code,
                label,
                pool,
                f"pool '{pool.id}' declares no labels, so its nodes cannot be told apart; add the "
                "node labels (e.g. hardware-type) under labels",
                field="labels",
            )
            return None
        nodes = ctx.pool_nodes(pool)
        names = sorted(meta(n).get("name", "?") for n in nodes)
        if len(nodes) == pool.count:
            r.ok(
                cls.code, label, pool, f"{len(nodes)} node(s) with {labels_text(pool.labels)}", field="count"
            )
        else:
            r.drift(
                cls.code,
                label,
                pool,
                f"pool '{pool.id}' has {len(nodes)} node(s) labelled {labels_text(pool.labels)}"
                f"{' (' + ', '.join(names[:5]) + ('…' if len(names) > 5 else '') + ')' if names else ''}"
                f", the spec declares {pool.count}",
                field="count",
            )
        return PoolTarget(pool, label, nodes)


class PoolGpus(PoolCheck):
    """Every node of a GPU pool advertises its GPUs."""

    code = Code(
        "VK102",
        "pool GPU allocatable",
        "Nodes must advertise the declared nvidia.com/gpu (or MIG) count, or GPU pods stay Pending.",
        "seed 004 §2.3",
    )

    def run(self, ctx: KubeContext, t: PoolTarget) -> None:
        r, label, pool, nodes = ctx.rec, t.label, t.pool, t.nodes
        if not (pool.gpu is not None and nodes):
            return
        resource = GPU
        if pool.gpu.sharing.value == "mig" and pool.gpu.mig_profile:
            resource = f"nvidia.com/mig-{pool.gpu.mig_profile}"
        bad = []
        for n in nodes:
            have = quantity(((n.get("status") or {}).get("allocatable") or {}).get(resource))
            ok = (have or 0) > 0 if resource != GPU else have == pool.gpu.count
            if not ok:
                bad.append(f"{meta(n).get('name')} has {num(have) if have is not None else 'none'}")
        want = f"{pool.gpu.count}" if resource == GPU else "some"
        if bad:
            r.drift(
                self.code,
                label,
                pool.gpu,
                f"pool '{pool.id}' declares {want} allocatable {resource} per node but "
                f"{'; '.join(bad[:5])}{' …' if len(bad) > 5 else ''}: GPU pods cannot be scheduled there "
                "(is the NVIDIA device plugin running?)",
                field="count",
            )
        else:
            r.ok(self.code, label, pool.gpu, f"every node allocates {want} {resource}", field="count")


class PoolTaints(PoolCheck):
    """Every node of the pool carries the pool's taints."""

    code = Code(
        "VK103",
        "pool taints",
        "GPU nodes are tainted so that only GPU workloads land there.",
        "seed 000 §3.3",
    )

    def run(self, ctx: KubeContext, t: PoolTarget) -> None:
        r, label, pool, nodes = ctx.rec, t.label, t.pool, t.nodes
        if not (pool.taints and nodes):
            return
        missing = []
        for n in nodes:
            have = {
                (t.get("key"), t.get("value") or None, t.get("effect"))
                for t in (n.get("spec") or {}).get("taints") or []
            }
            lacks = [t for t in pool.taints if (t.key, t.value or None, t.effect) not in have]
            if lacks:
                missing.append(f"{meta(n).get('name')} lacks " + ", ".join(taint(t) for t in lacks))
        if missing:
            r.drift(
                self.code,
                label,
                pool,
                f"pool '{pool.id}': {'; '.join(missing[:5])}: other workloads can land on these nodes",
                field="taints",
            )
        else:
            r.ok(self.code, label, pool, "every node carries the declared taints", field="taints")


POOL_CHECKS: tuple[type[PoolCheck], ...] = (PoolGpus, PoolTaints)
