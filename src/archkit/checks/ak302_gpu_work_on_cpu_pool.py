"""AK302: a GPU model stage, a stage declared on the GPU, or a service asking for GPUs, sits on a pool without GPUs."""

from collections.abc import Iterator

from archkit.checks.common import stages_by_service
from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic
from archkit.spec.model import Device


@register
class GpuWorkOnCpuPool(Rule):
    """A GPU model or a GPU-requesting service is placed on a node pool that has no GPUs."""

    code = "AK302"
    name = "gpu-work-on-cpu-pool"
    source = "seed 004 §2.3 (hardware is a dedicated pipeline, not a pool); seed 000 §3.3 (gpu-node-t4 for inference)"
    rationale = """
Each stage has its own hardware: preprocessing on many-core CPUs, detection and recognition
on GPUs (seed 004 §2.3's table). A GPU model placed on a CPU pool either never schedules
(nvidia.com/gpu is not there) or silently falls back to CPU at ten times the latency. A
non-model stage says `device: gpu` when its own work runs there (seed 000 §2.1 moved resize
and normalise to the GPU, 15 → 3 ms): on a GPU-less pool it is back at the CPU's 15 ms.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        spec = ctx.spec
        by_svc = stages_by_service(ctx)
        for svc in spec.topology.services:
            pool = spec.pool(svc.pool)
            if pool is None or pool.gpu is not None:
                continue
            gpu_stages = [
                s.id
                for s in by_svc.get(svc.id, [])
                if (s.model.device if s.model else s.device) is Device.gpu
            ]
            asks = (svc.resources.limits.gpu or svc.resources.requests.gpu or 0) > 0
            if gpu_stages or asks:
                why = f"runs GPU stage(s) {', '.join(gpu_stages)}" if gpu_stages else "requests GPUs"
                yield ctx.at(svc, "pool", f"service '{svc.id}' {why} but pool '{pool.id}' has no GPUs")
