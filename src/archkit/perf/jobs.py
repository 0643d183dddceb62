"""The GPU time batch/offline jobs take from the online stages that share their GPUs (seed 004 §4.4).

Seed 004 §4.4's OCR service ran its GPU at 30 % by day and 95 % by night: a nightly job
re-processed historical images with 100 tasks at once on the GPU the online service needed,
until a semaphore let three in. AK332 counts such a job's GPU memory; this module counts its
GPU time, in the terms of the shared-resource model (`archkit.perf.resources`):

- **The job's share.** While a job runs, each of its tasks keeps one GPU busy for
  `gpu_duty_cycle` of its time (one task, like one batch, uses at most one GPU), so the job
  takes min(`max_concurrency`, the GPUs its service has) × `gpu_duty_cycle` GPUs from the
  resource its service's GPU work runs on (the service's GPUs, or the whole pool's when the
  pool time-slices or splits GPUs by memory fraction). A job with no cap may run a task on
  every GPU its service has.
- **The online stages' utilisation while it runs.** At rate λ the online stages on that
  resource need λ × D GPU-seconds a second (D: their demand per request); with J of its U
  GPUs taken, their utilisation rises from λD / U to λD / (U − J), unbounded once J ≥ U.
- Each job is taken on its own: `schedule` is text, so which jobs overlap is not known.
- With `gpu_ms_per_task`, the job's own rate at its cap: cap × duty × 3,600,000 / gpu_ms
  tasks an hour (a task takes gpu_ms / duty of wall time).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from archkit.perf.resources import LoadModel, gpu_resource, load_model
from archkit.spec.model import Spec

__all__ = ["JobLoad", "job_loads"]


@dataclass(frozen=True)
class JobLoad:
    """One batch job's GPU time against the online stages on the GPUs it shares."""

    job: str
    service: str
    resource: str  # the shared resource's id, as `LoadModel.resources` names it
    units: float  # the resource's GPUs
    service_gpus: float  # the GPUs the job's service has (its tasks can use no others)
    max_concurrency: int | None  # None: uncapped
    duty_cycle: float
    stages: tuple[str, ...]  # online stages on the resource
    online_demand_s: float  # their GPU-seconds per request
    tasks_per_hour: float | None  # at the cap, from gpu_ms_per_task; None when not declared

    @property
    def taken(self) -> float:
        """GPUs the job's tasks keep busy while it runs."""
        cap = (
            self.service_gpus
            if self.max_concurrency is None
            else min(self.max_concurrency, self.service_gpus)
        )
        return cap * self.duty_cycle

    def utilisation(self, rate_rps: float, with_job: bool = True) -> float:
        """The online stages' utilisation at `rate_rps`, with the job running or without (∞: none left)."""
        left = self.units - (self.taken if with_job else 0.0)
        need = rate_rps * self.online_demand_s
        if left <= 1e-12:
            return math.inf if need > 0 else 0.0
        return need / left

    def ceiling_rps(self, with_job: bool = True) -> float:
        """The request rate that fills the GPUs the online stages have left while the job runs."""
        left = self.units - (self.taken if with_job else 0.0)
        if self.online_demand_s <= 0:
            return math.inf
        return max(0.0, left) / self.online_demand_s


def job_loads(spec: Spec, model: LoadModel | None = None) -> list[JobLoad]:
    """Every job on a service that exists, against the online GPU work on its resource (none: demand 0)."""
    lm = model if model is not None else load_model(spec)
    out = []
    for job in spec.jobs:
        svc = spec.service(job.service)
        if svc is None:
            continue  # AK103 reports the dangling reference
        rid, units = gpu_resource(spec, svc)
        svc_gpus = (svc.resources.limits.gpu or svc.resources.requests.gpu or 1.0) * max(1, svc.replicas)
        shared = lm.resource(rid)
        stages = shared.stages if shared is not None else ()
        demand = shared.demand_s if shared is not None else 0.0
        per_hour = None
        if job.gpu_ms_per_task and job.max_concurrency is not None:
            tasks = min(job.max_concurrency, svc_gpus)
            per_hour = tasks * job.gpu_duty_cycle * 3_600_000 / job.gpu_ms_per_task
        out.append(
            JobLoad(
                job.id,
                svc.id,
                rid,
                units,
                min(svc_gpus, units),
                job.max_concurrency,
                job.gpu_duty_cycle,
                stages,
                demand,
                per_hour,
            )
        )
    return out
