"""AK319: the models a service loads do not fit in its GPUs' memory."""

from __future__ import annotations

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic
from archkit.spec.llm_catalogue import accelerator
from archkit.spec.model import Device, NodePool, Service, Spec


def gpu_budget_gb(pool: NodePool, svc: Service) -> tuple[float, str] | None:
    """GPU memory one replica of `svc` may use on `pool`, and how it was derived (None: unknown)."""
    g = pool.gpu
    if g is None:
        return None
    acc = accelerator(g.model)
    per_gpu = g.memory_gb or (acc.memory_gb if acc is not None and acc.kind == "gpu" else None)
    how = f"{g.model}"
    if g.mig_profile and acc is not None and acc.mig(g.mig_profile) is not None:
        mig = acc.mig(g.mig_profile)
        assert mig is not None
        per_gpu, how = mig.memory_gb, f"MIG {g.mig_profile}"
    if per_gpu is None:
        return None
    gpus = svc.resources.limits.gpu or svc.resources.requests.gpu or 1
    fraction = g.memory_fraction or 1.0
    budget = per_gpu * gpus * fraction
    how = f"{gpus:g} × {per_gpu:g} GB ({how})" + (f" × fraction {fraction:g}" if fraction < 1 else "")
    return budget, how


def loaded_gb(spec: Spec, svc: Service) -> tuple[float, list[str]]:
    """GPU memory the models served by `svc` hold per replica: instances × loaded versions × size."""
    total, parts = 0.0, []
    for st in spec.dataflow.stages:
        m = st.model
        if st.service != svc.id or m is None or m.device != Device.gpu or not m.gpu_memory_gb:
            continue
        versions = 1
        if m.version_policy is not None:
            versions = m.version_policy.latest_num_versions or max(1, len(m.version_policy.specific))
        gb = m.instances * versions * m.gpu_memory_gb
        total += gb
        parts.append(f"{m.name} {m.instances}×{versions}×{m.gpu_memory_gb:g}")
    return total, parts


@register
class GpuMemoryOverBudget(Rule):
    """A service's models (instances × loaded versions × memory) exceed its GPUs' memory budget."""

    code = "AK319"
    name = "gpu-memory-over-budget"
    source = "seed 004 §1 (GPU out of memory answered 502 within three days); seed 000 §5.1, §2.2, §2.3"
    rationale = """
Every model instance holds its own copy of the weights and workspace on the GPU, and a
version policy that keeps two versions loaded (seed 000 §2.2) holds two. Seed 004 §1's
service answered 502 within three days of launch when GPU memory ran out; seed 000 §5.1's
new model collapsed the service with CUDA OOM; seed 000 §2.3 caps each process at 80 % of
the GPU (`set_per_process_memory_fraction(0.8)`). The budget is the GPUs per replica × GPU
memory (or the MIG slice's) × the pool's `memory_fraction`; models without `gpu_memory_gb`
are not counted.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        spec = ctx.spec
        pools = {p.id: p for p in spec.topology.node_pools}
        for svc in spec.topology.services:
            pool = pools.get(svc.pool)
            if pool is None:
                continue
            need, parts = loaded_gb(spec, svc)
            budget = gpu_budget_gb(pool, svc)
            if not parts or budget is None or need <= budget[0] + 1e-9:
                continue
            yield ctx.at(
                svc,
                "pool",
                f"service '{svc.id}' loads {need:g} GB of models ({' + '.join(parts)}) "
                f"into {budget[0]:g} GB of GPU memory ({budget[1]})",
            )
