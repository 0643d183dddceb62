"""The end-to-end latency of a data flow whose requests take different routes, as one mixture.

A decision that sends 90 % of the requests to a fast model and 10 % to a precise one (seed 004
§2.1) gives two populations of latencies, not one path: the P50 of all the requests is set by
the 90 % (the 10 % branch may not set it unless its share makes it so), while the P99 lies in
the 10 % branch's tail (1 % of all the requests is a tenth of that branch). So each sink's
latency is judged over the routes a request takes (`pipesim_routes.enumerate_routes`: weighted
edges taken or not, a decision's exclusive edges one of them, a cache hit past what it skips;
the same routes the simulation draws):

- each route that reaches the sink is a component with the share of those requests that take
  it (its probability over the probability of reaching the sink), and the route's critical path
  to the sink (`latency.dataflow_paths` within the route's stages): its P50 sum, its P99 sum
  (conservative) and its independent-stages P99 estimate;
- a component's latency is log-normal through its P50 and P99 (as the cache mix,
  `perf.cache`: exact at both for one route, so a spec without weighted edges is judged on its
  sums as before), degenerate at the P50 when the P99 is not above it;
- the mixture's q-quantile is the smallest x with Σ wᵢ·Fᵢ(x) ≥ q, found by bisection.
The component "setting" the quantile is the one with the largest share of requests at or above
it (wᵢ·P(Lᵢ ≥ x)). With more weighted choices than `MAX_WORK` allows to enumerate, the
conservative sums of the critical paths stand (`exact` False).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

from archkit.perf.latency import PathLatency, dataflow_paths
from archkit.perf.pipesim_routes import choice_groups, enumerate_routes
from archkit.spec.model import Spec

__all__ = ["Component", "SinkMix", "mixture_quantile", "sink_mixes"]

# routes × stages × edges walked to enumerate the routes: past it, the critical paths' sums
MAX_WORK = 2_000_000
_Z99 = NormalDist().inv_cdf(0.99)


@dataclass(frozen=True)
class Component:
    """One route's critical path to a sink and the share of the sink's requests that take it."""

    share: float
    path: PathLatency


@dataclass(frozen=True)
class SinkMix:
    """The routes into one sink (the critical path alone when there is one route)."""

    sink: str
    components: tuple[Component, ...]
    exact: bool = True  # False: too many routes to enumerate, the critical path's sums stand

    def quantile(self, q: float, independent: bool = False) -> float:
        """The q-quantile of the sink's latency over its routes (P99s: the conservative sums, or
        `independent`: the independent-stages estimates)."""
        return mixture_quantile(
            [(c.share, c.path.p50_sum, _p99(c.path, independent)) for c in self.components], q
        )

    def setter(self, x: float, independent: bool = False) -> Component:
        """The component with the largest share of the requests at or above x."""

        def tail(c: Component) -> float:
            return c.share * _survival(c.path.p50_sum, _p99(c.path, independent), x)

        return max(self.components, key=lambda c: (tail(c), c.path.p99_sum))


def _p99(p: PathLatency, independent: bool) -> float:
    return p.p99_rss if independent else p.p99_sum


def _sigma(p50: float, p99: float) -> float:
    return math.log(p99 / p50) / _Z99 if p50 > 0 and p99 > p50 else 0.0


def _cdf(p50: float, p99: float, x: float) -> float:
    s = _sigma(p50, p99)
    if s == 0.0:
        return 1.0 if x >= p50 else 0.0
    if x <= 0:
        return 0.0
    return NormalDist().cdf(math.log(x / p50) / s)


def _survival(p50: float, p99: float, x: float) -> float:
    """P(L ≥ x), with a degenerate component at or above x counted (x·(1 − 1e-9): rounding)."""
    return 1.0 - _cdf(p50, p99, x * (1 - 1e-9)) if _sigma(p50, p99) else float(p50 >= x * (1 - 1e-9))


def mixture_quantile(parts: list[tuple[float, float, float]], q: float) -> float:
    """The q-quantile of a mixture of (share, P50, P99) log-normal components (shares sum to 1).

    One component: its own P50 or P99 exactly where q is 0.5 or 0.99 (no rounding by the search)."""
    live = [p for p in parts if p[0] > 0]
    if not live:
        return 0.0
    if len(live) == 1:
        w, p50, p99 = live[0]
        if q == 0.99:
            return p99
        if q == 0.5 or _sigma(p50, p99) == 0.0:
            return p50
    total = sum(p[0] for p in live)

    def mass(x: float) -> float:
        return sum(w * _cdf(p50, p99, x) for w, p50, p99 in live) / total

    lo, hi = 0.0, max(max(p50, p99) for _, p50, p99 in live) or 1.0
    while mass(hi) < q:  # a log-normal's quantiles above 0.99 lie past its P99
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if mass(mid) >= q:
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-9 * max(1.0, hi):
            break
    # a degenerate component's step: land on it exactly when the search ends within rounding of it
    for _, p50, _ in live:
        if abs(hi - p50) <= 1e-6 * max(1.0, p50):
            return p50
    return hi


def sink_mixes(spec: Spec) -> list[SinkMix]:
    """Per sink of the sync data flow, its routes' critical paths with their shares (see module)."""
    ids = [s.id for s in spec.dataflow.stages]
    known = set(ids)
    sync = [e for e in spec.dataflow.edges if e.mode == "sync" and e.from_ in known and e.to in known]
    combos = math.prod(len(g) + 1 for g in choice_groups(sync))
    caches = sum(
        1 for s in spec.dataflow.stages if s.cache is not None and s.cache.hit_ratio and s.cache.skips
    )
    work = combos * (2**caches) * max(1, len(ids)) * max(1, len(sync))
    whole = dataflow_paths(spec)
    if combos * 2**caches <= 1 or work > MAX_WORK:
        return [SinkMix(p.stages[-1], (Component(1.0, p),), exact=work <= MAX_WORK) for p in whole]
    routes, probs = enumerate_routes(spec, known)
    by_sink: dict[str, list[Component]] = {}
    reached: dict[str, float] = {}
    for route, prob in zip(routes, probs, strict=True):
        for p in dataflow_paths(spec, set(route)):
            sink = p.stages[-1]
            by_sink.setdefault(sink, []).append(Component(prob, p))
            reached[sink] = reached.get(sink, 0.0) + prob
    order = {sid: i for i, sid in enumerate(ids)}
    out = []
    for sink in sorted(by_sink, key=lambda s: order[s]):
        comps = tuple(Component(c.share / reached[sink], c.path) for c in by_sink[sink])
        out.append(SinkMix(sink, _merged(comps)))
    return out


def _merged(comps: tuple[Component, ...]) -> tuple[Component, ...]:
    """Routes whose critical path to the sink is the same path, as one component (shares added),
    heaviest P99 sum first."""
    merged: dict[tuple[str, ...], Component] = {}
    for c in comps:
        key = tuple(c.path.stages)
        prev = merged.get(key)
        merged[key] = c if prev is None else Component(prev.share + c.share, prev.path)
    return tuple(sorted(merged.values(), key=lambda c: (-c.path.p99_sum, c.path.stages)))
