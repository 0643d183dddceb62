"""Traffic that reaches each stage and the demand it puts on shared processors (cores, GPUs).

The model (printed by `archkit capacity`, stated in docs/checks.md):
- **Reach.** A stage without inbound edges is visited by every request. Otherwise its share
  of the requests is the sum over its inbound edges (sync and async: both do work) of the
  source's share × the edge's `weight` (unset: 1), capped at 1, so a spec without weights
  keeps the old, conservative answer: every stage sees the full rate. A fan-out stage then
  sees `items_per_request` items per visit. A stage that a cache's hit `skips` runs only on a
  miss: its share is lowered by the hit ratio (`_cache_skipped`).
- **Where work runs.** A stage runs on its service. A model on a GPU uses the service's GPUs
  (`resources.limits.gpu`, else requests, else 1 per replica; a MIG slice counts as one
  GPU, its service times are the slice's; on a pool whose GPUs are time-sliced or split by
  memory fraction, every service on the pool shares the pool's GPUs); everything else
  uses the service's cores
  (limits, else requests, else the pool's node size), but only a stage that declares
  `cpu_ms` (its processor time per item): a P50 alone is latency, which may be waiting on
  I/O or a remote call. An environment with `cpu_cores` puts every service on one machine
  with that many cores (a development box). Stages without `cpu_ms` or a model are delays
  (with `concurrency`, each replica's workers are servers held for that time). Instances and replicas that share a GPU or
  a set of cores share its time: one batch or one worker thread uses at most one unit, and
  when more run than there are units they slow each other down (processor sharing).
- **Demand.** Processor-seconds per request on each resource: Σ reach × items × time per
  item (for a model on a GPU its copy + compute time: the per-batch overhead runs on the
  host), with a model's time per item taken at the batch the batcher forms under load (the
  target batch, whole requests of `items_per_call` items) and a worker stage's at the mean
  of a log-normal with median `cpu_ms` and its measured spread (`cpu_p99_ms`), else the
  spread of its P50 → P99 budgets (`service_mean_ms`).
- **Ceiling.** The request rate at which the first resource, or the first stage's own
  instances, reach 100 %: min over resources of units / demand and over stages of
  servers / (reach × items × time per item), and over connection pools (`perf.pools`, seed 004
  §1) of the visits their connections admit: size × client replicas / (calls per request × hold
  time), Little's law. That resource, stage or pool is the bottleneck.
All of it is closed form: work is linear in stages + edges, whatever the rates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from archkit.perf.service_table import ServiceTable
from archkit.spec.model import Device, Edge, GpuSharing, Service, Spec, Stage

# a stage's P99 is at most this many P50s for the log-normal fit of its service time; beyond
# it the P99 budget is headroom for queueing, not spread of the work itself
_MAX_SPREAD = 4.0
Z99 = 2.3263478740408408  # standard normal 99th percentile


@dataclass(frozen=True)
class StageLoad:
    """What one stage asks of the processors per request, and how many servers it has."""

    stage: str
    service: str | None
    kind: str  # "model" (a batcher and instances), "worker" (a pool of workers), "delay"
    reach: float  # share of the requests that visit the stage
    items_per_request: float  # items per visit (a fan-out: line crops of a page)
    items_per_call: int  # items per inference request (the batcher never splits one)
    batch_items: int  # items in a batch under load (the target batch, whole calls)
    replicas: int
    servers_per_replica: int | None  # instances or workers per replica; None: unbounded
    item_s: float  # processor time per item under load (s)
    resource: str | None  # id of the shared resource it runs on; None: unconstrained
    hold_s: float | None = None  # time an instance is held per item (a GPU model's host overhead too)

    @property
    def demand_s(self) -> float:
        """Processor-seconds this stage needs per request."""
        return self.reach * self.items_per_request * self.item_s

    @property
    def servers(self) -> int | None:
        return None if self.servers_per_replica is None else self.servers_per_replica * self.replicas

    @property
    def ceiling_rps(self) -> float:
        """Request rate at which this stage's own servers are all busy (∞ when unbounded)."""
        held = self.reach * self.items_per_request * (self.item_s if self.hold_s is None else self.hold_s)
        if self.servers is None or held <= 0:
            return math.inf
        return self.servers / held


@dataclass(frozen=True)
class SharedResource:
    """A set of cores or GPUs that several stages' instances share."""

    id: str
    kind: str  # "cpu" or "gpu"
    units: float  # cores or GPUs, over all replicas
    stages: tuple[str, ...]
    demand_s: float  # processor-seconds per request

    @property
    def ceiling_rps(self) -> float:
        return math.inf if self.demand_s <= 0 else self.units / self.demand_s

    def utilisation(self, rate_rps: float) -> float:
        return rate_rps * self.demand_s / self.units


@dataclass(frozen=True)
class LoadModel:
    """The whole pipeline's demand: per stage, per shared resource, and the ceiling."""

    stages: tuple[StageLoad, ...]
    resources: tuple[SharedResource, ...]
    ceiling_rps: float
    bottleneck: str | None  # "resource <id>", "stage <id>" or "pool <id>"; None when nothing limits
    machine_cores: float | None  # the environment's single machine, when it declares one

    def stage(self, stage_id: str) -> StageLoad | None:
        return next((s for s in self.stages if s.stage == stage_id), None)

    def resource(self, resource_id: str) -> SharedResource | None:
        return next((r for r in self.resources if r.id == resource_id), None)


def reach(spec: Spec) -> dict[str, float]:
    """Share of the requests that visit each stage, from edge weights (see module docstring)."""
    ids = [s.id for s in spec.dataflow.stages]
    known = set(ids)
    inbound: dict[str, list[Edge]] = {i: [] for i in ids}
    outdeg: dict[str, list[str]] = {i: [] for i in ids}
    for e in spec.dataflow.edges:
        if e.from_ in known and e.to in known and e.from_ != e.to:
            inbound[e.to].append(e)
            outdeg[e.from_].append(e.to)
    # Kahn's order; stages left on a cycle (reported by AK104) keep the conservative 1
    pending = {i: len(inbound[i]) for i in ids}
    ready = [i for i in ids if pending[i] == 0]
    share: dict[str, float] = {}
    while ready:
        sid = ready.pop()
        if not inbound[sid]:
            share[sid] = 1.0
        else:
            total = sum(
                share.get(e.from_, 1.0) * (1.0 if e.weight is None else e.weight) for e in inbound[sid]
            )
            share[sid] = min(1.0, total)
        for t in outdeg[sid]:
            pending[t] -= 1
            if pending[t] == 0:
                ready.append(t)
    return _cache_skipped(spec, {i: share.get(i, 1.0) for i in ids})


def _cache_skipped(spec: Spec, share: dict[str, float]) -> dict[str, float]:
    """`share` less the visits a cache's hits make unnecessary (seed 004 §3.3: a repeated upload
    skips the GPU inference), in place.

    A cache stage with a `hit_ratio` h and the stages a hit `skips`: of the requests that visit
    both the cache and a skipped stage, the share h never runs that stage, so its arrival rate,
    demand and the ceiling it sets are λ·(1 − h) where the cache sees every request that visits
    it. The overlap is taken as the smaller of the two shares (a cache in front of what it
    skips, as the seed's is); the stages after a skipped one still run on a hit (they take the
    cached result). The shares the caches see are read before any of them is lowered."""
    before = dict(share)
    for st in spec.dataflow.stages:
        c = st.cache
        if c is None or not c.hit_ratio or st.id not in before:
            continue
        for sid in dict.fromkeys(c.skips):
            if sid in share and sid != st.id:
                share[sid] = max(0.0, share[sid] - c.hit_ratio * min(before[sid], before[st.id]))
    return share


def lognormal_sigma(p50_ms: float | None, p99_ms: float | None) -> float:
    """σ of the log-normal service time through a stage's P50 and P99 (0: deterministic)."""
    if not p50_ms or not p99_ms or p99_ms <= p50_ms:
        return 0.0
    return math.log(min(p99_ms / p50_ms, _MAX_SPREAD)) / Z99


def service_sigma(stage: Stage) -> float:
    """σ of a non-model stage's log-normal work: its measured spread (`cpu_ms` → `cpu_p99_ms`, which
    `archkit calibrate` records) when it has one, else the spread of its P50 → P99 budgets."""
    if stage.cpu_ms and stage.cpu_p99_ms:
        return lognormal_sigma(stage.cpu_ms, stage.cpu_p99_ms)
    return lognormal_sigma(stage.p50_ms, stage.p99_ms)


def service_median_ms(stage: Stage) -> float:
    """Median time of one item of a non-model stage: its `cpu_ms` when it declares one, else its P50."""
    return stage.cpu_ms if stage.cpu_ms is not None else (stage.p50_ms or 0.0)


def service_mean_ms(stage: Stage) -> float:
    """Mean time of one item, by `service_distribution` around that median.

    Log-normal (the default): the spread of `service_sigma`, mean = median·e^(σ²/2);
    exponential: mean = median / ln 2; deterministic: the median.
    """
    med = service_median_ms(stage)
    if stage.service_distribution == "exponential":
        return med / math.log(2)
    if stage.service_distribution == "deterministic":
        return med
    s = service_sigma(stage)
    return med * math.exp(s * s / 2)


def table_of(stage: Stage) -> ServiceTable | None:
    """The stage's whole per-batch service time (copy + compute + overhead)."""
    m = stage.model
    if m is None or not m.service_time:
        return None
    return ServiceTable((t.batch_size, t.total_ms) for t in m.service_time)


def busy_table_of(stage: Stage) -> ServiceTable | None:
    """The part of each batch that occupies the processor the model runs on.

    On a GPU that is copy + compute: the fixed pre/post work per batch (`overhead_ms`, seed
    000 §2.1) runs on the host while the GPU serves other batches. On a CPU it is all of it.
    """
    m = stage.model
    if m is None or not m.service_time:
        return None
    if m.device is not Device.gpu:
        return table_of(stage)
    return ServiceTable((t.batch_size, t.copy_ms + t.compute_ms) for t in m.service_time)


def target_batch(stage: Stage) -> int:
    """Items in a batch under load: the batcher's target (largest preferred, else max) in whole calls."""
    m = stage.model
    if m is None:
        return 1
    bt = m.batching
    b = max(bt.preferred_batch_sizes) if bt and bt.preferred_batch_sizes else (bt.max_batch_size if bt else 1)
    b = min(b, bt.max_batch_size) if bt else 1
    k = m.items_per_call
    return max(k, (b // k) * k)


def _cores(spec: Spec, svc: Service) -> float | None:
    lim = svc.resources.limits.cpu_cores or svc.resources.requests.cpu_cores
    if lim:
        return lim
    pool = spec.pool(svc.pool)
    return pool.cpu_cores if pool is not None else None


_TIME_SHARED = {GpuSharing.time_slicing, GpuSharing.memory_fraction}


def _gpus(spec: Spec, svc: Service) -> tuple[float, str]:
    g = svc.resources.limits.gpu or svc.resources.requests.gpu or 1.0
    pool = spec.pool(svc.pool)
    mig = pool.gpu.mig_profile if pool is not None and pool.gpu is not None else None
    return g, (f" (MIG {mig})" if mig else "")


def gpu_resource(spec: Spec, svc: Service) -> tuple[str, float]:
    """The shared GPU resource a service's GPU work runs on, and its GPUs over all replicas."""
    pool = spec.pool(svc.pool)
    if pool is not None and pool.gpu is not None and pool.gpu.sharing in _TIME_SHARED:
        # time-slicing or memory fractions: every service on the pool shares its GPUs
        return f"pool {pool.id}:gpu ({pool.gpu.sharing.value})", float(pool.count * pool.gpu.count)
    g, tag = _gpus(spec, svc)
    return f"{svc.id}:gpu{tag}", g * max(1, svc.replicas)


def load_model(spec: Spec) -> LoadModel:
    """Demand of every stage on every shared resource and the pipeline's ceiling.

    An environment applied with `Spec.with_environment` counts: its service times, device
    and `cpu_cores` (one machine for every service).
    """
    from archkit.perf.pools import pool_loads  # it reads this module's `reach`
    from archkit.perf.service_models import model_for  # its models use this module's helpers

    machine_cores = environment_cores(spec)
    shares = reach(spec)
    loads: list[StageLoad] = []
    units: dict[str, tuple[str, float]] = {}
    for st in spec.dataflow.stages:
        svc = spec.service(st.service) if st.service else None
        replicas = max(1, svc.replicas) if svc is not None else 1
        m = st.model
        resource: str | None = None
        d = model_for(st).demand(spec, st)
        b, item_s, hold_s, kind, per_replica = (
            d.batch_items,
            d.item_s,
            d.hold_s,
            d.kind,
            d.servers_per_replica,
        )
        if m is not None and m.device is Device.gpu and svc is not None:
            resource, n = gpu_resource(spec, svc)
            units[resource] = ("gpu", n)
        if d.on_processor and resource is None and svc is not None and not svc.external:
            if machine_cores is not None:
                resource = "machine:cpu"
                units[resource] = ("cpu", machine_cores)
            else:
                cores = _cores(spec, svc)
                if cores:
                    resource = f"{svc.id}:cpu"
                    units[resource] = ("cpu", cores * replicas)
        loads.append(
            StageLoad(
                st.id,
                svc.id if svc is not None else None,
                kind,
                shares[st.id],
                st.items_per_request,
                m.items_per_call if m is not None else 1,
                b,
                replicas,
                per_replica,
                item_s,
                resource,
                hold_s,
            )
        )
    resources = []
    for rid, (kind, n) in units.items():
        on = [sl for sl in loads if sl.resource == rid]
        resources.append(
            SharedResource(rid, kind, n, tuple(s.stage for s in on), sum(s.demand_s for s in on))
        )
    limits = [(r.ceiling_rps, f"resource {r.id}") for r in resources]
    limits += [(s.ceiling_rps, f"stage {s.stage}") for s in loads]
    limits += [(c, f"pool {p.pool}") for p in pool_loads(spec) if (c := p.ceiling_rps) is not None]
    finite = [x for x in limits if math.isfinite(x[0])]
    ceiling, bottleneck = min(finite) if finite else (math.inf, None)
    return LoadModel(tuple(loads), tuple(resources), ceiling, bottleneck, machine_cores)


def environment_cores(spec: Spec) -> float | None:
    """The applied environment's `cpu_cores` (one machine for every service), if it declares one.

    With a calibration that measured how the cores scale (`calibrate.apply.effective_cores`: two
    instances at once do 1.77x the work of one on this session's 2 vCPUs), the cores it delivers.
    """
    e = spec.applied_environment
    if e is None or e.cpu_cores is None:
        return None
    eff = spec._effective_cores
    return min(e.cpu_cores, eff) if eff else e.cpu_cores
