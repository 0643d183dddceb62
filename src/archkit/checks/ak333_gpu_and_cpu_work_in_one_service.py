"""AK333: one service runs both GPU stages and stages whose work is CPU-bound."""

from collections.abc import Iterator

from archkit.checks.common import stages_by_service
from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity
from archkit.spec.model import Device, Stage


def _on_gpu(st: Stage) -> bool:
    return (st.model.device if st.model else st.device) is Device.gpu


def _cpu_bound(st: Stage) -> bool:
    """A CPU model, or a stage off the GPU whose own processor time is declared (`cpu_ms`)."""
    if st.model is not None:
        return st.model.device is Device.cpu
    return st.device is not Device.gpu and st.cpu_ms is not None


@register
class GpuAndCpuWorkInOneService(Rule):
    """A service runs GPU stages and CPU-bound stages together, so both scale by one unit."""

    code = "AK333"
    name = "gpu-and-cpu-work-in-one-service"
    severity = Severity.WARNING
    source = "seed 004 §1 (split an OCR service into preprocessing, layout, recognition and post-check services); seed 004 §2.3 (scale each by its own resource)"
    rationale = """
Seed 004 §1: even a simple OCR service has to be split into preprocessing, layout analysis,
recognition and post-check services, because each stage's resource needs, scaling rhythm and
retry logic differ; §2.3's table scales the CPU stages by cores or threads and the GPU stages
by cards. One service that runs a GPU model and a CPU-bound stage (a CPU model, or a stage
that declares `cpu_ms`) scales both by the same replica count: more replicas for the CPU work
take GPUs it does not need, and more GPUs bring CPU replicas along. Put the CPU-bound stages
in a service of their own on a CPU pool.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for svc in ctx.spec.topology.services:
            stages = stages_by_service(ctx).get(svc.id, [])
            gpu = [s.id for s in stages if _on_gpu(s)]
            cpu = [s.id for s in stages if _cpu_bound(s)]
            if gpu and cpu:
                yield ctx.at(
                    svc,
                    "id",
                    f"service '{svc.id}' runs GPU stage(s) {', '.join(gpu)} and CPU-bound stage(s) "
                    f"{', '.join(cpu)}: they scale by one replica count; give the CPU work a service of its own",
                )
