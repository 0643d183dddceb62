"""AK321: a shared GPU has no memory fraction, or one above 0.8."""

from __future__ import annotations

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity
from archkit.spec.model import GpuSharing

MAX_FRACTION = 0.8  # seed 000 §2.3: torch.cuda.set_per_process_memory_fraction(0.8), 20 % headroom


@register
class SharedGpuMemoryFraction(Rule):
    """A GPU shared by time slicing, fractions or several tenants leaves no memory headroom."""

    code = "AK321"
    name = "shared-gpu-memory-fraction"
    severity = Severity.WARNING
    source = "seed 000 §2.3 (framework layer: set_per_process_memory_fraction(0.8) keeps 20 % headroom)"
    rationale = """
Where processes share a GPU without MIG, nothing in hardware stops one of them from taking
all of its memory. Seed 000 §2.3's framework layer caps each process at 80 %
(`torch.cuda.set_per_process_memory_fraction(0.8)`) to keep 20 % headroom. A pool whose GPUs
are shared (multi-tenant, time slicing or memory fractions) declares `memory_fraction`, at
most 0.8. (A multi-tenant pool with no isolation at all is AK304's finding.)
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for pool in ctx.spec.topology.node_pools:
            g = pool.gpu
            if g is None or g.sharing is GpuSharing.mig:
                continue
            shared = pool.multi_tenant or g.sharing in (GpuSharing.time_slicing, GpuSharing.memory_fraction)
            if not shared:
                continue
            if g.memory_fraction is None:
                if pool.multi_tenant:
                    continue  # AK304 reports an unisolated multi-tenant pool
                yield ctx.at(
                    g, "sharing", f"pool '{pool.id}' shares its {g.model} GPUs with no memory_fraction"
                )
            elif g.memory_fraction > MAX_FRACTION:
                yield ctx.at(
                    g,
                    "memory_fraction",
                    f"pool '{pool.id}' lets a process take {g.memory_fraction:g} of a shared GPU (> {MAX_FRACTION})",
                )
