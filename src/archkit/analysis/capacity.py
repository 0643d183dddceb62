"""Capacity of a whole spec: per-stage arrival rate, utilisation, batching prediction, ceiling.

Arrival rate: every stage on the request path is assumed to see the design rate
`budgets.throughput_rps` times the stage's `items_per_request` (a fan-out such as the line
crops of a page); branch conditions on edges are not weighted: conservative. With a fan-out,
latency predictions are per item, while utilisation and ceilings are exact for the item rate.
Servers: a model stage runs `model.instances` instances in each of its service's
`replicas`; a non-model stage with `concurrency` runs that many workers per replica and is
modelled as M/M/c (see `archkit.analysis.queueing` for which model applies where).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

from archkit.analysis import queueing as q
from archkit.analysis.batching import (
    BatchPrediction,
    Recommendation,
    ServiceTable,
    candidate_batch_sizes,
    ceiling_rps,
    predict,
    recommend,
)
from archkit.spec.model import Device, Spec, Stage


@dataclass
class StageCapacity:
    """The capacity analysis of one model stage at its declared settings."""

    stage: Stage
    arrival_rps: float | None
    peak_rps: float | None
    replicas: int
    instances: int
    gpus_per_replica: float
    table: ServiceTable | None
    batch_size: int  # the batcher's target: largest preferred size, else max
    max_batch_size: int
    max_queue_delay_us: int
    budget_ms: float | None  # the binding P99 budget
    budget_source: str
    declared: BatchPrediction | None = None

    @cached_property
    def per_batch(self) -> list[BatchPrediction]:
        """Predictions for each candidate batch size at the declared delay (batch 1: no delay)."""
        if self.table is None or self.arrival_rps is None:
            return []
        bt = self.stage.model.batching
        return [
            predict(
                self.table,
                self.arrival_rps,
                b,
                self.max_queue_delay_us if b > 1 else 0,
                self.instances,
                self.replicas,
            )
            for b in candidate_batch_sizes(
                self.table, self.max_batch_size, bt.preferred_batch_sizes if bt else ()
            )
        ]

    @property
    def servers(self) -> int:
        return self.replicas * self.instances

    @property
    def ceiling_rps(self) -> float | None:
        """Best throughput over batch sizes with full batches (ρ = 1)."""
        if not self.table:
            return None
        return max(
            ceiling_rps(self.table, b, self.servers)
            for b in candidate_batch_sizes(self.table, self.max_batch_size)
        )

    @cached_property
    def recommendation(self) -> Recommendation | None:
        if not self.table or self.arrival_rps is None or self.budget_ms is None:
            return None
        return recommend(
            self.table,
            self.arrival_rps,
            self.budget_ms,
            self.max_batch_size,
            self.stage.model.batching.preferred_batch_sizes if self.stage.model.batching else (),
            self.instances,
        )

    @cached_property
    def simulated(self):
        """Discrete-event simulation of the declared configuration (see `simulate`)."""
        from archkit.analysis.simulate import simulate

        if self.table is None or self.arrival_rps is None:
            return None
        return simulate(self.table, self.arrival_rps, self.batch_size, self.max_queue_delay_us, self.servers)

    @property
    def required_gpus(self) -> float | None:
        rec = self.recommendation
        if not rec or not rec.met or not rec.prediction:
            return None
        return rec.prediction.replicas * self.gpus_per_replica


def binding_budget(spec: Spec, stage: Stage) -> tuple[float | None, str]:
    """The tighter of the stage's own P99 budget and the end-to-end P99 budget."""
    cands = []
    if stage.p99_ms is not None:
        cands.append((stage.p99_ms, f"stage '{stage.id}' p99_ms"))
    if spec.budgets.p99_ms is not None:
        cands.append((spec.budgets.p99_ms, "budgets.p99_ms"))
    if not cands:
        return None, ""
    return min(cands, key=lambda c: c[0])


def stage_capacity(spec: Spec, stage: Stage) -> StageCapacity | None:
    """Analyse one model stage; None for stages without a model."""
    m = stage.model
    if m is None:
        return None
    svc = spec.service(stage.service) if stage.service else None
    replicas = max(1, svc.replicas) if svc else 1
    gpus = 0.0
    if svc is not None:
        gpus = svc.resources.limits.gpu or svc.resources.requests.gpu or 0.0
    if not gpus and m.device is Device.gpu:
        gpus = 1.0
    table = ServiceTable((t.batch_size, t.total_ms) for t in m.service_time) if m.service_time else None
    bt = m.batching
    max_b = bt.max_batch_size if bt else 1
    target = max(bt.preferred_batch_sizes) if bt and bt.preferred_batch_sizes else max_b
    target = min(target, max_b)
    delay = bt.max_queue_delay_us if bt else 0
    budget, src = binding_budget(spec, stage)
    # a stage that fans out (line crops of a page) sees items, not requests: scale the rates
    k = stage.items_per_request
    rate = spec.budgets.throughput_rps * k if spec.budgets.throughput_rps is not None else None
    peak = spec.budgets.peak_throughput_rps * k if spec.budgets.peak_throughput_rps is not None else None
    cap = StageCapacity(
        stage, rate, peak, replicas, m.instances, gpus, table, target, max_b, delay, budget, src
    )
    if table is not None and cap.arrival_rps is not None:
        cap.declared = predict(table, cap.arrival_rps, target, delay, m.instances, replicas)
    return cap


def model_capacities(spec: Spec) -> list[StageCapacity]:
    """Capacity analysis of every model stage, in document order."""
    out = []
    for st in spec.dataflow.stages:
        cap = stage_capacity(spec, st)
        if cap is not None:
            out.append(cap)
    return out


@dataclass
class WorkerCapacity:
    """M/M/c analysis of a non-model stage with `concurrency` workers per replica."""

    stage: Stage
    arrival_rps: float
    servers: int
    service_ms: float
    rho: float
    wait_mean_ms: float
    wait_p99_ms: float


def worker_capacities(spec: Spec) -> list[WorkerCapacity]:
    """Non-model stages that declare `concurrency` and a P50: ρ and Erlang-C waiting."""
    lam = spec.budgets.throughput_rps
    out = []
    if lam is None:
        return out
    for st in spec.dataflow.stages:
        if st.model is not None or st.concurrency is None or st.p50_ms is None:
            continue
        svc = spec.service(st.service) if st.service else None
        c = st.concurrency * (max(1, svc.replicas) if svc else 1)
        s = st.p50_ms / 1000  # the P50 stands in for the mean service time
        rate = lam * st.items_per_request
        rho = q.utilisation(rate, s, c)
        w = q.mmc_wait(rate, s, c)
        w99 = q.mmc_wait_quantile(rate, s, c)
        out.append(
            WorkerCapacity(
                st,
                rate,
                c,
                st.p50_ms,
                rho,
                1000 * w if math.isfinite(w) else w,
                1000 * w99 if math.isfinite(w99) else w99,
            )
        )
    return out
