"""AK332: a batch GPU job has no concurrency cap, or its capped tasks and the online models overflow the GPU."""

from __future__ import annotations

from collections.abc import Iterator

from archkit.checks.ak319_gpu_memory_over_budget import gpu_budget_gb, loaded_gb
from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic


@register
class GpuJobUncapped(Rule):
    """A batch/offline GPU job is uncapped, or its tasks at the cap plus the online models exceed GPU memory."""

    code = "AK332"
    name = "gpu-job-uncapped"
    source = "seed 004 §4.4 (a nightly batch job sent 100 requests at once to the GPU; a semaphore of 3)"
    rationale = """
Seed 004 §4.4's OCR service ran its GPU at 30 % by day and 95 % by night: a scheduled job
re-processed historical images with no concurrency control, 100 requests competing for the
GPU the online service needed. The fix was a semaphore letting three tasks in at once. A job
declared in `jobs` on a service's GPUs must say its `max_concurrency`; with `gpu_memory_gb`
per task, the online models' memory (instances × loaded versions × size, as AK319 counts it)
plus the cap × the task's memory must fit one replica's GPU budget, since the scheduler may
put every task on one replica.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        spec = ctx.spec
        for job in spec.jobs:
            svc = spec.service(job.service)
            if job.max_concurrency is None:
                yield ctx.at(
                    job,
                    "id",
                    f"job '{job.id}' on service '{job.service}' has no max_concurrency: every queued task "
                    "may take the GPU at once (seed 004 §4.4 capped it at 3)",
                )
                continue
            if svc is None or job.gpu_memory_gb is None:
                continue
            pool = spec.pool(svc.pool)
            budget = gpu_budget_gb(pool, svc) if pool is not None else None
            if budget is None:
                continue
            online, parts = loaded_gb(spec, svc)
            batch = job.max_concurrency * job.gpu_memory_gb
            if online + batch <= budget[0] + 1e-9:
                continue
            what = f"{online:g} GB of online models ({' + '.join(parts)}) + " if parts else ""
            yield ctx.at(
                job,
                "max_concurrency",
                f"job '{job.id}' at its cap holds {job.max_concurrency} × {job.gpu_memory_gb:g} GB; "
                f"{what}{batch:g} GB exceeds service '{svc.id}' GPU budget of {budget[0]:g} GB ({budget[1]})",
            )
