"""AK231: GPUs with a declared hourly cost sit mostly idle at the design rate."""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import Field

from archkit.checks.ak213_shared_resource_over_capacity import load_model
from archkit.checks.registry import Context, Rule, RuleSettings, register
from archkit.diagnostics import Diagnostic, Severity

HOURS_PER_MONTH = 730  # 365 × 24 / 12


@register
class GpuMostlyIdle(Rule):
    """At the design rate, GPUs that declare `cost_per_hour` are idle for more than `max_idle_share` of the time."""

    code = "AK231"
    name = "gpu-mostly-idle"
    severity = Severity.INFO
    source = "seed 004 §4.4 (GPU idle time costs more than inference: 30 % utilised by day)"
    rationale = """
Seed 004 §4.4 found its OCR GPUs 30 % busy by day and 95 % by night: idle GPU hours are
paid for all the same. With `gpu.cost_per_hour` on a node pool, archkit takes the GPU time
the stages on each GPU resource need per request (the demand model AK213 uses), the busy
share at the design rate (`budgets.throughput_rps`), and reports the GPUs when more than
`Settings.max_idle_share` of their time is idle, with what the idle share costs a month
(730 hours). Remedies: fewer GPUs or replicas, a smaller MIG slice, or batch jobs (`jobs`,
capped by AK332) scheduled into the idle hours.
"""

    class Settings(RuleSettings):
        max_idle_share: float = Field(0.7, ge=0, le=1, description="seed 004 §4.4: 30 % busy is 70 % idle")

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        spec = ctx.spec
        rate = spec.budgets.throughput_rps
        if not rate:
            return
        limit = ctx.settings(self.Settings).max_idle_share
        lm = load_model(ctx)
        for r in lm.resources:
            if r.kind != "gpu" or not r.stages or r.units <= 0:
                continue
            st = spec.stage(r.stages[0])
            svc = spec.service(st.service) if st is not None and st.service else None
            pool = spec.pool(svc.pool) if svc is not None else None
            cost = pool.gpu.cost_per_hour if pool is not None and pool.gpu is not None else None
            if pool is None or pool.gpu is None or cost is None:
                continue
            busy = min(1.0, rate * r.demand_s / r.units)
            idle = 1.0 - busy
            if idle <= limit:
                continue
            monthly = idle * r.units * cost * HOURS_PER_MONTH
            yield ctx.at(
                pool.gpu,
                "cost_per_hour",
                f"{r.units:g} GPU(s) of {r.id} are {100 * busy:.0f} % busy at {rate:g} req/s: the idle "
                f"{100 * idle:.0f} % costs {monthly:,.0f} a month at {cost:g} an hour (seed 004 §4.4)",
            )
