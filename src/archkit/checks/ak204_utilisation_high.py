"""AK204: a stage runs above 80 % utilisation (or overloaded) at the design rate."""

from collections.abc import Iterator

from archkit.checks.common import capacities
from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity
from archkit.spec.model import Node


@register
class UtilisationHigh(Rule):
    """A stage's utilisation ρ = λS/c exceeds 0.8 at the design rate (≥ 1 is an overload)."""

    code = "AK204"
    name = "utilisation-high"
    severity = Severity.WARNING
    source = "seed 000 §2.1 (Little's law: queue length L = λW explodes as ρ → 1)"
    rationale = """
Queueing delay grows like ρ/(1 − ρ): at ρ = 0.8 a request waits about 4 service times in an
M/M/1 queue, and small bursts push the queue over any budget. Model stages use ρ at the
realised batch size (λ/B batches per second × S(B) / instances); stages with `concurrency`
use λ·P50 / (concurrency × replicas). Above 0.8 is a warning, at or above 1 an error: the
queue grows without bound.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        from archkit.perf.capacity import worker_capacities

        for cap in capacities(ctx):
            p, model = cap.declared, cap.stage.model
            if p is None or model is None or p.rho <= 0.8:  # capacities() analyses model stages only
                continue
            yield self._finding(
                ctx,
                model,
                "instances",
                cap.stage.id,
                p.rho,
                f"{p.replicas}×{p.instances} instances at batch ~{p.mean_batch:.1f}",
            )
        for w in ctx.memo("workers", lambda: worker_capacities(ctx.spec)):
            if w.rho > 0.8:
                yield self._finding(ctx, w.stage, "concurrency", w.stage.id, w.rho, f"{w.servers} workers")

    def _finding(self, ctx: Context, obj: Node, field: str, sid: str, rho: float, what: str) -> Diagnostic:
        sev = Severity.ERROR if rho >= 1 else Severity.WARNING
        state = "overloaded: the queue grows without bound" if rho >= 1 else "queueing delay dominates"
        return ctx.at(
            obj,
            field,
            f"stage '{sid}' utilisation ρ = {rho:.2f} with {what} ({state})",
            severity=sev,
            stage=sid,
            rho=round(rho, 3),
        )
