"""AK304: a multi-tenant GPU pool shares GPUs without MIG or a memory fraction."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity
from archkit.spec.model import GpuSharing


@register
class SharedGpuUnisolated(Rule):
    """A multi-tenant GPU pool has neither MIG instances nor a per-process memory fraction."""

    code = "AK304"
    name = "shared-gpu-unisolated"
    severity = Severity.WARNING
    source = "seed 000 §2.3 (tenant B's FP16 slowed tenant A from 80 to 320 ms; MIG cut P99 jitter from ±210% to ±8%)"
    rationale = """
GPU tenants interfere through clocks, memory bandwidth and memory. The seed's fix has three
layers: MIG instances (hardware), NVIDIA_VISIBLE_DEVICES/capabilities (driver) and
torch.cuda.set_per_process_memory_fraction(0.8) (framework). A multi-tenant pool needs at
least MIG with a profile or a memory fraction; time slicing alone isolates nothing.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for pool in ctx.spec.topology.node_pools:
            g = pool.gpu
            if g is None or not pool.multi_tenant:
                continue
            if g.sharing is GpuSharing.mig and g.mig_profile:
                continue
            if g.sharing is GpuSharing.memory_fraction and g.memory_fraction:
                continue
            what = {
                GpuSharing.mig: "MIG without a mig_profile",
                GpuSharing.memory_fraction: "memory_fraction sharing without a fraction",
            }.get(g.sharing, f"sharing '{g.sharing.value}'")
            yield ctx.at(g, "sharing", f"multi-tenant pool '{pool.id}' shares {g.model} GPUs with {what}")
