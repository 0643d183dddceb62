"""Capacity of a whole spec: per-stage arrival rate, utilisation, batching prediction, ceiling.

Arrival rate: a stage sees the design rate `budgets.throughput_rps` times its share of the
requests (edge weights, `archkit.perf.resources.reach`; unweighted edges pass the full
rate: conservative) times its `items_per_request` (a fan-out such as the line crops of a page). With a fan-out,
latency predictions are per item, while utilisation and ceilings are exact for the item rate.
Servers: a model stage runs `model.instances` instances in each of its service's
`replicas`; a non-model stage with `concurrency` runs that many workers per replica and is
modelled as M/M/c (see `archkit.perf.queueing` for which model applies where). Requests
reach the replicas by the service's `routing` (see `archkit.perf.batching`).
Budget for a recommendation: the stage's own P99 budget, or the end-to-end P99 budget less
what the other stages on the heaviest data-flow path through it take at their P99s (the
composition AK202 checks, seed 000 §3.1), whichever is tighter. A recommendation that needs
more GPUs than the service's node pool holds says that the pool must grow.
The whole pipeline (shared cores and GPUs, edge weights) is `archkit.perf.pipeline`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

from archkit.perf.batching import (
    BatchPrediction,
    Recommendation,
    ServiceTable,
    candidate_batch_sizes,
    ceiling_rps,
    predict,
    recommend,
)
from archkit.perf.latency import PathLatency, dataflow_paths, stage_p99
from archkit.perf.resources import reach
from archkit.perf.service_models import model_for
from archkit.perf.simulate import SimResult, simulate
from archkit.spec.model import Device, Service, Spec, Stage


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
    routing: str = "random"
    declared_instances: int | None = None  # the spec's instances when fewer can run at once
    pool_gpus: float | None = None  # GPUs the service's node pool holds (nodes × GPUs per node)
    pool_id: str | None = None
    # the end-to-end P99 budget less the other stages on the heaviest path (`end_to_end_budget`)
    end_to_end: tuple[float | None, str] = (None, "")

    @cached_property
    def per_batch(self) -> list[BatchPrediction]:
        """Predictions for each candidate batch size at the declared delay (batch 1: no delay)."""
        if self.table is None or self.arrival_rps is None or self.stage.model is None:
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
                self.routing,
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
        if self.budget_ms is None:
            return None
        return self.recommend_for(self.budget_ms)

    def recommend_for(self, budget_ms: float) -> Recommendation | None:
        """The cheapest configuration for `budget_ms` at this stage's routing, or why none."""
        if not self.table or self.arrival_rps is None or self.stage.model is None:
            return None
        bt = self.stage.model.batching
        return recommend(
            self.table,
            self.arrival_rps,
            budget_ms,
            self.max_batch_size,
            bt.preferred_batch_sizes if bt else (),
            self.instances,
            routing=self.routing,
        )

    def pool_note(self, rec: Recommendation | None) -> str:
        """'' or what the recommendation asks of the node pool beyond what it holds."""
        if rec is None or not rec.met or rec.prediction is None or self.pool_gpus is None:
            return ""
        need = rec.prediction.replicas * self.gpus_per_replica
        if need <= self.pool_gpus + 1e-9:
            return ""
        return (
            f"the pool '{self.pool_id}' holds {self.pool_gpus:g} GPU(s): it must grow to at least "
            f"{math.ceil(need):g} for this"
        )

    @cached_property
    def simulated(self) -> SimResult | None:
        """Discrete-event simulation of the declared configuration (see `simulate`)."""

        if self.table is None or self.arrival_rps is None:
            return None
        if self.routing == "least-request":
            return simulate(
                self.table, self.arrival_rps, self.batch_size, self.max_queue_delay_us, self.servers
            )
        return simulate(
            self.table,
            self.arrival_rps / self.replicas,
            self.batch_size,
            self.max_queue_delay_us,
            self.instances,
        )

    @property
    def required_gpus(self) -> float | None:
        rec = self.recommendation
        if not rec or not rec.met or not rec.prediction:
            return None
        return rec.prediction.replicas * self.gpus_per_replica


# stage id -> (the largest P99 sum of a data-flow path through it, that path)
Reserves = dict[str, tuple[float, list[str]]]


def path_reserves(spec: Spec, paths: list[PathLatency] | None = None) -> Reserves:
    """For every stage on a data-flow path: the heaviest path through it (its P99 sum, its stages).

    One pass over the paths (`latency.dataflow_paths`, computed once per run and passed in when
    the caller has them), so analysing every model stage stays linear in the paths' length
    instead of recomputing the paths per stage (quadratic: 1.4 s on a 1,000-stage spec)."""
    out: Reserves = {}
    for p in dataflow_paths(spec) if paths is None else paths:
        for sid in p.stages:
            best = out.get(sid)
            if best is None or p.p99_sum > best[0]:  # the first path wins a tie
                out[sid] = (p.p99_sum, p.stages)
    return out


def path_reserve_ms(spec: Spec, stage: Stage, reserves: Reserves | None = None) -> tuple[float, list[str]]:
    """P99 the other stages (and edges) take on the heaviest data-flow path through `stage`."""
    heaviest = (path_reserves(spec) if reserves is None else reserves).get(stage.id)
    own = stage_p99(stage)
    if heaviest is None or heaviest[0] - own <= 0.0:
        return 0.0, [stage.id]
    return heaviest[0] - own, heaviest[1]


def end_to_end_budget(spec: Spec, stage: Stage, reserves: Reserves | None = None) -> tuple[float | None, str]:
    """The end-to-end P99 budget less the other stages' P99s on the stage's heaviest path."""
    if spec.budgets.p99_ms is None:
        return None, ""
    reserve, path = path_reserve_ms(spec, stage, reserves)
    if reserve <= 0:
        return spec.budgets.p99_ms, "budgets.p99_ms"
    return (
        max(0.0, spec.budgets.p99_ms - reserve),
        f"budgets.p99_ms {spec.budgets.p99_ms:g} ms less {reserve:g} ms for the other stages on "
        f"{' -> '.join(path)}",
    )


def binding_budget(spec: Spec, stage: Stage, reserves: Reserves | None = None) -> tuple[float | None, str]:
    """The tighter of the stage's own P99 budget and its share of the end-to-end P99 budget."""
    cands = []
    if stage.p99_ms is not None:
        cands.append((stage.p99_ms, f"stage '{stage.id}' p99_ms"))
    e2e, src = end_to_end_budget(spec, stage, reserves)
    if e2e is not None:
        cands.append((e2e, src))
    if not cands:
        return None, ""
    return min(cands, key=lambda c: c[0])


def _replica_cores(spec: Spec, svc: Service) -> float | None:
    cores = svc.resources.limits.cpu_cores or svc.resources.requests.cpu_cores
    if cores:
        return cores
    pool = spec.pool(svc.pool)
    return pool.cpu_cores if pool is not None else None


def stage_capacity(
    spec: Spec, stage: Stage, share: float | None = None, reserves: Reserves | None = None
) -> StageCapacity | None:
    """Analyse one model stage; None for stages without a model.

    `reserves` (`path_reserves`) when analysing many stages: the paths are then walked once."""
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
    if m.device is not Device.gpu:
        gpus = 0.0  # an environment that runs the model on CPU uses no GPU
    table = ServiceTable((t.batch_size, t.total_ms) for t in m.service_time) if m.service_time else None
    # instances that share a GPU (or a replica's cores) share its time: they serve as many at
    # once as there are units (archkit.perf.resources; AK213 checks the whole pipeline)
    units = None
    if svc is not None:
        units = gpus if m.device is Device.gpu else _replica_cores(spec, svc)
    instances = min(m.instances, max(1, math.floor(units))) if units else m.instances
    bt = m.batching
    max_b = bt.max_batch_size if bt else 1
    target = max(bt.preferred_batch_sizes) if bt and bt.preferred_batch_sizes else max_b
    target = min(target, max_b)
    delay = bt.max_queue_delay_us if bt else 0
    if reserves is None:
        reserves = path_reserves(spec)
    budget, src = binding_budget(spec, stage, reserves)
    # a stage that fans out (line crops of a page) sees items, not requests: scale the rates
    k = stage.items_per_request * (reach(spec)[stage.id] if share is None else share)
    rate = spec.budgets.throughput_rps * k if spec.budgets.throughput_rps is not None else None
    peak = spec.budgets.peak_throughput_rps * k if spec.budgets.peak_throughput_rps is not None else None
    routing = svc.routing if svc is not None else "random"
    pool = spec.pool(svc.pool) if svc is not None else None
    pool_gpus = pool.count * pool.gpu.count if pool is not None and pool.gpu is not None else None
    cap = StageCapacity(
        stage,
        rate,
        peak,
        replicas,
        instances,
        gpus,
        table,
        target,
        max_b,
        delay,
        budget,
        src,
        routing=routing,
        pool_gpus=pool_gpus if m.device is Device.gpu else None,
        pool_id=pool.id if pool is not None else None,
        declared_instances=m.instances if instances != m.instances else None,
        end_to_end=end_to_end_budget(spec, stage, reserves),
    )
    if table is not None and cap.arrival_rps is not None:
        cap.declared = predict(table, cap.arrival_rps, target, delay, instances, replicas, routing)
    return cap


def model_capacities(spec: Spec, paths: list[PathLatency] | None = None) -> list[StageCapacity]:
    """Capacity analysis of every model stage, in document order (`paths`: the spec's
    `dataflow_paths` when the caller has computed them already)."""
    out = []
    shares = reach(spec)
    reserves = path_reserves(spec, paths)
    for st in spec.dataflow.stages:
        cap = stage_capacity(spec, st, shares[st.id], reserves)
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
    out: list[WorkerCapacity] = []
    if lam is None:
        return out
    shares = reach(spec)
    for st in spec.dataflow.stages:
        if st.model is not None or st.concurrency is None or st.p50_ms is None:
            continue
        svc = spec.service(st.service) if st.service else None
        rate = lam * st.items_per_request * shares[st.id]
        # the stage's service model (a worker pool: M/M/c, `service_models.worker_pool`)
        p = model_for(st).predict(spec, st, rate, max(1, svc.replicas) if svc else 1)
        if p is None:
            continue
        out.append(WorkerCapacity(st, rate, p.servers, st.p50_ms, p.rho, p.wait_mean_ms, p.wait_p99_ms))
    return out
