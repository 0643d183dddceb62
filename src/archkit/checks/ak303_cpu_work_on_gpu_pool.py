"""AK303: a service with only CPU work sits on a GPU pool."""

from collections.abc import Iterator

from archkit.checks.common import stages_by_service
from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity
from archkit.spec.model import Device


@register
class CpuWorkOnGpuPool(Rule):
    """A service that runs only CPU stages and asks for no GPU is placed on a GPU node pool."""

    code = "AK303"
    name = "cpu-work-on-gpu-pool"
    severity = Severity.WARNING
    source = "seed 004 §2.3 (scale CPU stages by cores, GPU stages by cards); seed 000 §5.8 (KIND_CPU models)"
    rationale = """
CPU-only stages on GPU nodes take the CPU and memory that the GPU's own pre/post-processing
needs, and make the expensive node pool scale for the wrong reason. Put them on a CPU pool
(and taint GPU pools with nvidia.com/gpu so they cannot land there by accident).
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        spec = ctx.spec
        by_svc = stages_by_service(ctx)
        for svc in spec.topology.services:
            pool = spec.pool(svc.pool)
            stages = by_svc.get(svc.id, [])
            if pool is None or pool.gpu is None or not stages:
                continue
            if (svc.resources.limits.gpu or svc.resources.requests.gpu or 0) > 0:
                continue
            if any(s.model and s.model.device is Device.gpu for s in stages):
                continue
            yield ctx.at(
                svc,
                "pool",
                f"service '{svc.id}' runs only CPU work "
                f"({', '.join(s.id for s in stages)}) on GPU pool '{pool.id}'",
            )
