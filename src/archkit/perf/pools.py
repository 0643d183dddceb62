"""Connection pools against the concurrency the design rate drives into them (seed 004 §1).

A pool of `size` connections per client replica is a server group of `size` servers: a call
holds one connection for its hold time and a call that finds all of them busy waits (a
blocking pool) until one is freed or its checkout timeout passes. So, per client replica:

- **Offered load** (Little's law): A = λ × hold, the mean number of connections in use, where
  λ = rate × the share of requests that visit the target (edge weights,
  `archkit.perf.resources.reach`) × calls per visit / the client's replicas, and hold is
  `hold_ms` or, unset, the target stage's P99 (conservative).
- **Exhausted**: A ≥ size. The pool is busy all the time at the design rate; waits grow
  without bound and every call ends at its checkout timeout (the seed's 502s).
- **Wait probability**: Erlang C(size, A), the share of calls that find every connection busy
  (M/M/c: exact for exponential hold times; the seed gives no distribution).
- **Ceiling**: size × replicas / hold calls a second, i.e. that over (share × calls per visit)
  requests a second: the pool is an admission limit like a stage's servers, and one of the
  pipeline's ceiling (`resources.load_model`: the bottleneck line names the pool).
"""

from __future__ import annotations

from dataclasses import dataclass

from archkit.perf.latency import stage_p99
from archkit.perf.queueing import erlang_c
from archkit.perf.resources import reach
from archkit.spec.model import Spec

__all__ = ["PoolLoad", "design_rate", "pool_loads"]


@dataclass(frozen=True)
class PoolLoad:
    """One connection pool at the design rate, per client replica."""

    pool: str
    client: str
    target: str
    size: int
    replicas: int
    hold_ms: float
    hold_declared: bool  # False: the target's P99 stands in for the hold time
    calls_per_request: float  # share of requests visiting the target × calls per visit
    rate_rps: float  # the rate it was judged at (peak when declared)

    @property
    def per_replica_cps(self) -> float:
        """Calls a second one client replica sends through its pool."""
        return self.rate_rps * self.calls_per_request / max(1, self.replicas)

    @property
    def offered(self) -> float:
        """Mean connections in use per replica (Little's law: λ × hold)."""
        return self.per_replica_cps * self.hold_ms / 1000

    @property
    def wait_probability(self) -> float:
        """Share of calls that find every connection busy (Erlang C; 1 when exhausted)."""
        return erlang_c(self.size, self.offered)

    @property
    def ceiling_rps(self) -> float | None:
        """Requests a second the pools of all replicas admit; None when nothing goes through them."""
        if self.hold_ms <= 0 or self.calls_per_request <= 0:
            return None
        return self.size * max(1, self.replicas) * 1000 / self.hold_ms / self.calls_per_request


def design_rate(spec: Spec) -> float:
    """The rate a pool is judged at: the peak when declared, else the design rate (0: none)."""
    b = spec.budgets
    return max(x for x in (b.throughput_rps, b.peak_throughput_rps, 0.0) if x is not None)


def pool_loads(spec: Spec) -> list[PoolLoad]:
    """Each declared pool whose client and target exist, at the design rate."""
    share = reach(spec)
    rate = design_rate(spec)
    out = []
    for cp in spec.connection_pools:
        svc, st = spec.service(cp.client), spec.stage(cp.target)
        if svc is None or st is None:
            continue  # AK103 names the dangling reference
        hold = cp.hold_ms if cp.hold_ms is not None else stage_p99(st)
        out.append(
            PoolLoad(
                pool=cp.id,
                client=cp.client,
                target=cp.target,
                size=cp.size,
                replicas=svc.replicas,
                hold_ms=hold,
                hold_declared=cp.hold_ms is not None,
                calls_per_request=share.get(cp.target, 1.0) * cp.calls_per_visit,
                rate_rps=rate,
            )
        )
    return out
