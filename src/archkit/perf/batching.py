"""Dynamic batching: predicted fill time, latency and throughput ceiling of a batched model stage.

The model (stated in docs/checks.md and printed by `archkit capacity`):
- Requests arrive as a Poisson stream of λ req/s, split evenly over R replicas; each
  replica's dynamic batcher (Triton's) collects requests until it has the target batch b
  (the largest preferred size, else max_batch_size) or the first request has waited
  `max_queue_delay_us` (D). Requests that queue while every instance is busy join the next
  batch too, so under load batches grow by themselves.
- Service time of a batch of n items comes from the spec's per-batch table (copy +
  compute + overhead, seed 000 §2.1), **linearly interpolated** between measured batch
  sizes and linearly extrapolated beyond the largest one (flagged as an extrapolation).
- Waiting uses the same split as the fill, by the service's `routing`: with `random` (a
  Kubernetes Service's kube-proxy; the default) each replica is its own M/D/k queue fed by
  a Poisson λ/R (exact splitting); `round-robin` is the same queue with the waiting scaled
  by the arrivals' squared coefficient of variation 1/R (Allen–Cunneen, approximate);
  `least-request` pools the R·k instances into one M/D/c queue (join-the-shortest-queue
  behaves nearly like one shared queue; approximate). The M/D/c mean wait is Cosmetatos'
  (see `queueing`).
- Latency of a request = fill wait + queueing wait + service time of its batch.
  Mean: E[fill]/2 (an average request is mid-batch) + E[Wq] + S(E[B]).
  P99: fill-time bound (the first request's 99th-percentile wait, never above D)
  + P99 of Wq + S(99th-percentile batch size). Summing component P99s over-estimates the
  true P99 when batches form (the fill wait and the wait for an instance overlap), so
  `archkit.perf.simulate` is the second opinion: AK203 errs only when both miss, and
  recommendations are confirmed by simulation.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from archkit.perf import queueing as q
from archkit.perf.service_table import ServiceTable, TimingPoint
from archkit.perf.simulate import simulate

__all__ = ["ServiceTable", "TimingPoint", "BatchPrediction", "Recommendation", "predict", "recommend"]

INF = math.inf


@dataclass(frozen=True)
class BatchPrediction:
    """What one batching configuration does at one arrival rate (times in ms)."""

    batch_size: int
    max_queue_delay_us: int
    replicas: int
    instances: int  # per replica
    arrival_rps: float
    mean_batch: float  # realised mean batch size
    p99_batch: int
    service_ms: float  # service time of a mean batch
    fill_mean_ms: float  # mean wait of a request for its batch to form
    fill_p99_ms: float  # fill-time bound: first request's P99 wait, ≤ D
    wait_mean_ms: float  # queueing for a free instance (M/D/c)
    wait_p99_ms: float
    rho: float
    p50_ms: float
    mean_ms: float
    p99_ms: float
    ceiling_rps: float  # throughput with full batches of `batch_size`
    extrapolated: bool
    routing: str = "random"  # how requests reach the replicas (see module docstring)

    @property
    def stable(self) -> bool:
        return self.rho < 1

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        return {
            k: (
                None
                if isinstance(v, float) and math.isinf(v)
                else (round(v, 3) if isinstance(v, float) else v)
            )
            for k, v in d.items()
        }


def fill_time_bound_ms(
    arrival_rps: float, batch_size: int, max_queue_delay_us: float, quantile: float = 0.99
) -> float:
    """Bound on the time the first request of a batch waits for the batch to form (ms).

    It waits for b − 1 more Poisson arrivals (a Gamma(b−1, λ) time) but never longer than
    the queue delay D; its `quantile` is min(Gamma quantile, D). Non-decreasing in D.
    """
    d_s = max_queue_delay_us / 1e6
    if batch_size <= 1 or d_s <= 0:
        return 0.0
    t = q.erlang_time_quantile(batch_size - 1, arrival_rps, quantile)
    return 1000 * min(t, d_s)


def ceiling_rps(table: ServiceTable, batch_size: int, servers: int) -> float:
    """Throughput ceiling with full batches: c · b / S(b) (unbounded when S(b) is 0)."""
    s = table.ms(batch_size) / 1000
    return INF if s <= 0 else servers * batch_size / s


def predict(
    table: ServiceTable,
    arrival_rps: float,
    batch_size: int = 1,
    max_queue_delay_us: float = 0,
    instances: int = 1,
    replicas: int = 1,
    routing: str = "random",
) -> BatchPrediction:
    """Predict the latency of a batched stage at one configuration (see module docstring)."""
    b = max(1, int(batch_size))
    r = max(1, int(replicas))
    k = max(1, int(instances))
    lam = max(0.0, float(arrival_rps))
    lam_r = lam / r
    # the queue a batch waits in: one per replica, or all instances pooled (least-request)
    pooled = routing == "least-request"
    q_lam, c = (lam, r * k) if pooled else (lam_r, k)
    scale = 1 / r if routing == "round-robin" else 1.0
    d_s = max(0.0, max_queue_delay_us) / 1e6
    fill_first_s = q.mean_min_erlang(b - 1, lam_r, d_s) if b > 1 else 0.0

    def at(mean_b: float) -> tuple[float, float, float]:
        s = table.ms(mean_b) / 1000
        lam_b = q_lam / mean_b
        return s, lam_b, (lam_b * s / c)

    # fixed point: requests that queue for a busy instance join the forming batch
    mean_b = 1 + q.mean_min_poisson(lam_r * d_s, b - 1) if b > 1 else 1.0
    wait_s = 0.0
    for _ in range(40):
        s, lam_b, rho = at(mean_b)
        wait_s = scale * q.mdc_wait(lam_b, s, c) if lam > 0 else 0.0
        window = d_s + (wait_s if math.isfinite(wait_s) else 10 * s)
        target = 1 + q.mean_min_poisson(lam_r * window, b - 1) if b > 1 else 1.0
        if abs(target - mean_b) < 1e-6:
            break
        mean_b = 0.5 * mean_b + 0.5 * target
    s, lam_b, rho = at(mean_b)
    wait_s = scale * q.mdc_wait(lam_b, s, c) if lam > 0 else 0.0
    wait99_s = scale * q.mdc_wait_quantile(lam_b, s, c, 0.99) if lam > 0 else 0.0
    wait50_s = scale * q.mdc_wait_quantile(lam_b, s, c, 0.5) if lam > 0 else 0.0
    window = d_s + (wait_s if math.isfinite(wait_s) else 0.0)
    p99_b = min(b, 1 + q.poisson_quantile(lam_r * window, 0.99, cap=b - 1)) if b > 1 else 1
    p99_b = max(p99_b, min(b, math.ceil(mean_b)))
    fill99_ms = fill_time_bound_ms(lam_r, b, max_queue_delay_us)
    fill_mean_ms = 1000 * fill_first_s / 2
    s_ms = 1000 * s
    if rho >= 1:
        p50 = mean = p99 = INF
        wait_mean_ms = wait_p99_ms = INF
    else:
        wait_mean_ms, wait_p99_ms = 1000 * wait_s, 1000 * wait99_s
        mean = fill_mean_ms + wait_mean_ms + s_ms
        p50 = fill_mean_ms + 1000 * wait50_s + s_ms
        p99 = fill99_ms + wait_p99_ms + table.ms(p99_b)
    return BatchPrediction(
        batch_size=b,
        max_queue_delay_us=int(max_queue_delay_us),
        replicas=r,
        instances=k,
        arrival_rps=lam,
        mean_batch=mean_b,
        p99_batch=p99_b,
        service_ms=s_ms,
        fill_mean_ms=fill_mean_ms,
        fill_p99_ms=fill99_ms,
        wait_mean_ms=wait_mean_ms,
        wait_p99_ms=wait_p99_ms,
        rho=rho,
        p50_ms=p50,
        mean_ms=mean,
        p99_ms=p99,
        ceiling_rps=ceiling_rps(table, b, r * k),
        extrapolated=table.extrapolated(b),
        routing=routing,
    )


DELAY_GRID_US = (0, 100, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000)


@dataclass(frozen=True)
class Recommendation:
    """The cheapest configuration meeting a P99 budget, or why none does."""

    budget_ms: float
    met: bool
    prediction: BatchPrediction | None
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "budget_ms": self.budget_ms,
            "met": self.met,
            "reason": self.reason,
            "prediction": self.prediction.as_dict() if self.prediction else None,
        }


def candidate_batch_sizes(
    table: ServiceTable, max_batch_size: int, preferred: Sequence[int] = ()
) -> list[int]:
    """Batch sizes worth trying: 1, measured sizes, preferred sizes and powers of two ≤ max."""
    sizes = {1, max_batch_size, *preferred, *(b for b, _ in table.points)}
    p = 2
    while p <= max_batch_size:
        sizes.add(p)
        p *= 2
    return sorted(s for s in sizes if 1 <= s <= max_batch_size)


def recommend(
    table: ServiceTable,
    arrival_rps: float,
    budget_ms: float,
    max_batch_size: int,
    preferred: Sequence[int] = (),
    instances: int = 1,
    max_replicas: int = 256,
    delays_us: Sequence[int] = DELAY_GRID_US,
    verify: bool = True,
    routing: str = "random",
) -> Recommendation:
    """Fewest replicas (then lowest P99) over batch size × queue delay that meets `budget_ms`.

    Memoised on its arguments (a few hundred predictions and up to a few simulations each:
    ~0.1–0.3 s): `check` and `capacity` ask for the same stage more than once, and specs
    repeat stages.

    Instances per replica stay as declared; replicas vary from 1 to `max_replicas`. A
    configuration meets the budget when the analytic P99 does and (with `verify`) a
    discrete-event simulation of it does too: the M/D/c tail is an approximation that can
    be a few per cent optimistic for unbatched stages. When no configuration meets the
    budget the reason names the floor: the service time of one item, which no amount of
    hardware removes. `routing` is the service's (see `predict`); the simulation that
    confirms a candidate simulates one replica at λ/R for random and round-robin routing
    (exact for random: Poisson splitting makes replicas independent) and the pooled
    instances for least-request.
    """
    return _recommend(
        table,
        arrival_rps,
        budget_ms,
        max_batch_size,
        tuple(preferred),
        instances,
        max_replicas,
        tuple(delays_us),
        verify,
        routing,
    )


@functools.lru_cache(maxsize=512)
def _recommend(
    table: ServiceTable,
    arrival_rps: float,
    budget_ms: float,
    max_batch_size: int,
    preferred: tuple[int, ...],
    instances: int,
    max_replicas: int,
    delays_us: tuple[int, ...],
    verify: bool,
    routing: str,
) -> Recommendation:

    def meets(p: BatchPrediction) -> bool:
        if p.p99_ms > budget_ms:
            return False
        if not verify:
            return True
        if routing == "least-request":
            lam, servers = arrival_rps, p.replicas * p.instances
        else:
            lam, servers = arrival_rps / p.replicas, p.instances
        sim = simulate(table, lam, p.batch_size, p.max_queue_delay_us, servers, requests=10_000)
        return sim.stable and sim.p99_ms <= budget_ms

    sizes = candidate_batch_sizes(table, max_batch_size, preferred)
    floor = table.ms(1)
    if floor > budget_ms:
        fastest = predict(
            table,
            arrival_rps,
            1,
            0,
            instances,
            _stable_replicas(table, arrival_rps, 1, instances, max_replicas),
            routing,
        )
        return Recommendation(
            budget_ms,
            False,
            fastest,
            f"the service time of a single item ({floor:g} ms) already exceeds "
            f"the {budget_ms:g} ms budget: no batch size, queue delay or "
            f"instance count can meet it; a faster model or GPU is needed",
        )
    # 1. analytic search: for each batch size × delay, the fewest replicas that meet the budget
    slack = 3  # replicas beyond the analytic optimum that the simulation may still need
    cands: list[BatchPrediction] = []
    top = max_replicas
    for b in sizes:
        if table.ms(b) > budget_ms:
            continue
        for d in delays_us if b > 1 else (0,):
            r0 = _stable_replicas(table, arrival_rps, b, instances, max_replicas + 1)
            if r0 > min(max_replicas, top + slack):
                continue  # even full batches overload that many replicas
            prev = math.inf
            for r in range(r0, min(max_replicas, top + slack) + 1):
                p = predict(table, arrival_rps, b, d, instances, r, routing)
                if p.p99_ms <= budget_ms:
                    cands.append(p)
                    top = min(top, r)
                    break
                # once nobody queues for an instance, more replicas only stretch the batch
                # fill time; stop when the P99 no longer improves
                if p.wait_p99_ms == 0 and p.p99_ms >= prev:
                    break
                prev = p.p99_ms
    # 2. confirm in order of cost; a candidate the simulation rejects may pass with a replica more
    best: BatchPrediction | None = None
    for c in sorted(cands, key=lambda p: (p.replicas, p.p99_ms, p.batch_size, p.max_queue_delay_us)):
        if best is not None and c.replicas >= best.replicas:
            break
        for r in range(c.replicas, min(max_replicas, c.replicas + slack) + 1):
            if best is not None and r >= best.replicas:
                break
            p = (
                c
                if r == c.replicas
                else predict(table, arrival_rps, c.batch_size, c.max_queue_delay_us, instances, r, routing)
            )
            if meets(p):
                best = p
                break
    if best is None:
        return Recommendation(
            budget_ms,
            False,
            None,
            f"no configuration with up to {max_replicas} replicas meets "
            f"{budget_ms:g} ms at {arrival_rps:g} req/s (routing {routing})",
        )
    confirmed = ", confirmed by simulation" if verify else ""
    return Recommendation(
        budget_ms,
        True,
        best,
        f"batch {best.batch_size}, max_queue_delay_us {best.max_queue_delay_us}, "
        f"{best.replicas} replica(s) × {best.instances} instance(s): "
        f"predicted P99 {best.p99_ms:.1f} ms ≤ {budget_ms:g} ms{confirmed} (routing {routing})",
    )


def _stable_replicas(table: ServiceTable, lam: float, b: int, k: int, limit: int) -> int:
    """Fewest replicas for which full batches of b keep ρ < 1 (a lower bound to search from)."""
    cap_per_replica = ceiling_rps(table, b, k)
    if lam <= 0 or not math.isfinite(cap_per_replica):
        return 1
    return max(1, min(limit, math.floor(lam / cap_per_replica) + 1))
