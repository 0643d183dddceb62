"""AK308: an RDMA network keeps a small MTU."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity


@register
class RdmaMtuSmall(Rule):
    """An RDMA network plane has an MTU below 9000 bytes."""

    code = "AK308"
    name = "rdma-mtu-small"
    severity = Severity.WARNING
    source = "seed 000 §5.5 (ib0 MTU 65520 cut P99 by 37 %; the default 1500 floods soft interrupts)"
    rationale = """
GPU-to-GPU traffic over RDMA in 1500-byte frames means many small packets and a CPU busy
with soft interrupts. The seed sets `mtu 65520` on InfiniBand (IPoIB connected mode); RoCE
networks use jumbo frames (9000). Label the GPU network with its MTU on the diagram.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for net in ctx.spec.topology.networks:
            if net.kind == "rdma" and net.mtu < 9000:
                yield ctx.at(
                    net,
                    "mtu" if "mtu" in net.model_fields_set else "kind",
                    f"RDMA network '{net.id}' has MTU {net.mtu} (< 9000)",
                    hint="mtu: 65520",
                )
