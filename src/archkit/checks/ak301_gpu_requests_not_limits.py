"""AK301: a service's GPU request differs from its GPU limit."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic


@register
class GpuRequestsNotLimits(Rule):
    """nvidia.com/gpu requests ≠ limits: Kubernetes refuses or never schedules the pod."""

    code = "AK301"
    name = "gpu-requests-not-limits"
    source = "seed 004 §2.3 (GPU requests must equal limits; requests=0.5 left a pod Pending for 6 hours)"
    rationale = """
Extended resources such as nvidia.com/gpu cannot be overcommitted: Kubernetes requires the
request to equal the limit (a limit alone implies an equal request) and GPUs come in whole
units. A fractional or mismatched value leaves the pod Pending or rejected. Share a GPU
with MIG or a memory fraction instead (AK304).
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for svc in ctx.spec.topology.services:
            req, lim = svc.resources.requests.gpu, svc.resources.limits.gpu
            if req is None and lim is None:
                continue
            if req is not None and lim is None:
                yield ctx.at(
                    svc.resources.requests,
                    "gpu",
                    f"service '{svc.id}' requests {req:g} GPU but sets no GPU limit",
                )
            elif req is not None and req != lim:
                yield ctx.at(
                    svc.resources.requests, "gpu", f"service '{svc.id}' GPU request {req:g} ≠ limit {lim:g}"
                )
            elif lim is not None and lim != int(lim):
                yield ctx.at(
                    svc.resources.limits, "gpu", f"service '{svc.id}' asks for a fractional GPU ({lim:g})"
                )
