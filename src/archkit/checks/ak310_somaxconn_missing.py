"""AK310: a busy or public service runs with the kernel's default accept backlog."""

from collections.abc import Iterator

from archkit.checks.common import stages_by_service
from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity

KEY = "net.core.somaxconn"


@register
class SomaxconnMissing(Rule):
    """A public or busy service (≥ 128 req/s per replica) has no net.core.somaxconn setting."""

    code = "AK310"
    name = "somaxconn-missing"
    severity = Severity.WARNING
    source = "seed 000 §5.9 (net.core.somaxconn=65535 belongs in the diagram's OS Tuning box)"
    rationale = """
The accept queue holds connections the process has not accepted yet; with the old kernel
default of 128 a one-second burst of a busy or public service overflows it and clients see
resets and SYN retries (seconds of latency). Set net.core.somaxconn (65535 in the seed) in
the service's sysctls or in topology.os_tuning.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        spec = ctx.spec
        node_level = spec.topology.os_tuning and KEY in spec.topology.os_tuning.sysctls
        if node_level:
            return
        rate = spec.budgets.peak_throughput_rps or spec.budgets.throughput_rps or 0
        by_svc = stages_by_service(ctx)
        for svc in spec.topology.services:
            if svc.external or KEY in svc.sysctls:
                continue
            busy = by_svc.get(svc.id) and rate / max(1, svc.replicas) >= 128
            if svc.public or busy:
                why = "public" if svc.public else f"{rate / max(1, svc.replicas):.0f} req/s per replica"
                yield ctx.at(
                    svc,
                    "id",
                    f"service '{svc.id}' ({why}) does not set {KEY}",
                    hint=f"sysctls: {{{KEY}: 65535}}",
                )
