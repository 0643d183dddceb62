"""AK208: the calls on a control-flow path need more than the request deadline."""

from collections.abc import Iterator

from archkit.checks.common import control_latency, fmt_ms
from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity
from archkit.spec.model import Node


@register
class ControlPathOverDeadline(Rule):
    """The targets' P99s along a control-flow path to a success terminal exceed the request deadline."""

    code = "AK208"
    name = "control-path-over-deadline"
    severity = Severity.WARNING
    source = "seed 000 §3.2 (control-flow diagram: calls in series with their timeouts); seed 004 §2.1"
    rationale = """
A control-flow path runs its calls one after another; the P99s of their targets add up.
If a path to a success terminal needs more than the request deadline (`controlflow.timeout_ms`,
else the end-to-end P99 budget), its slow requests are cut off by the deadline before
they reach any degraded answer.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        spec = ctx.spec
        deadline = spec.controlflow.timeout_ms or spec.budgets.p99_ms
        if deadline is None:
            return
        where: Node = spec.controlflow if spec.controlflow.timeout_ms else spec.budgets
        field = "timeout_ms" if spec.controlflow.timeout_ms else "p99_ms"
        seen = set()
        for p in control_latency(ctx):
            if p.outcome == "success" and p.nominal_ms > deadline + 1e-9 and tuple(p.nodes) not in seen:
                seen.add(tuple(p.nodes))
                yield ctx.at(
                    where,
                    field,
                    f"control path {' -> '.join(p.nodes)}: target P99s add up to "
                    f"{fmt_ms(p.nominal_ms)} > deadline {fmt_ms(deadline)}",
                )
