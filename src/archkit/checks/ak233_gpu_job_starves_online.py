"""AK233: a batch GPU job, at its cap, leaves the online stages sharing its GPUs over their utilisation limit."""

from __future__ import annotations

import math
from collections.abc import Iterator

from pydantic import Field

from archkit.checks.ak213_shared_resource_over_capacity import load_model
from archkit.checks.registry import Context, Rule, RuleSettings, register
from archkit.diagnostics import Diagnostic, Severity


@register
class GpuJobStarvesOnline(Rule):
    """While a batch GPU job runs at its cap, the online stages on its GPUs exceed `max_utilisation` at the design rate."""

    code = "AK233"
    name = "gpu-job-starves-online"
    severity = Severity.WARNING
    source = "seed 004 §4.4 (the GPU 30 % busy by day, 95 % by night: a batch job's 100 tasks took it from the online OCR)"
    rationale = """
Seed 004 §4.4's nightly job took the GPU from the online OCR service until a semaphore let
three tasks in at once. AK332 counts such a job's GPU memory; this rule counts its GPU time
(`archkit.perf.jobs`, printed by `archkit capacity`): while the job runs, each task keeps one
GPU busy for `gpu_duty_cycle` of its time, so the job takes min(`max_concurrency`, its
service's GPUs) × `gpu_duty_cycle` GPUs from the resource its service's GPU work runs on.
The online stages there need rate × their GPU-seconds per request (the shared-resource
model's demand, at the peak rate when declared); with the job's GPUs taken their utilisation
is that over the GPUs left. Above `Settings.max_utilisation` (0.8, as AK204: queueing delay
dominates past it) is a warning, at or above 1 an error: the online queue grows without
bound while the job runs. Fix: a lower cap, a lower duty cycle (tasks that wait on I/O), the
job on GPUs of its own, or its schedule in hours when the rate is lower (then the spec's rate
is not the one it runs at; say so with a `jobs` entry on a service of its own).
"""

    class Settings(RuleSettings):
        max_utilisation: float = Field(
            0.8, gt=0, le=1, description="the online stages' utilisation limit while a job runs (as AK204)"
        )

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        from archkit.perf.jobs import job_loads

        spec = ctx.spec
        b = spec.budgets
        rate = max(x for x in (b.throughput_rps, b.peak_throughput_rps, 0.0) if x is not None)
        if rate <= 0 or not spec.jobs:
            return
        limit = ctx.settings(self.Settings).max_utilisation
        for jl in job_loads(spec, load_model(ctx)):
            if jl.online_demand_s <= 0:
                continue
            rho = jl.utilisation(rate)
            if rho <= limit:
                continue
            job = next(j for j in spec.jobs if j.id == jl.job)
            cap = "uncapped" if jl.max_concurrency is None else f"{jl.max_concurrency} task(s)"
            after = "none left for them" if math.isinf(rho) else f"{100 * rho:.0f} % with it"
            yield ctx.at(
                job,
                "max_concurrency" if job.max_concurrency is not None else "id",
                f"job '{jl.job}' ({cap} × duty {jl.duty_cycle:g}) takes {jl.taken:g} of {jl.units:g} GPU(s) of "
                f"'{jl.resource}': online stages {', '.join(jl.stages)} are "
                f"{100 * jl.utilisation(rate, with_job=False):.0f} % busy without it, {after} at {rate:g} req/s "
                f"(limit {100 * limit:.0f} %)",
                severity=Severity.ERROR if rho >= 1 else Severity.WARNING,
            )
