"""A cache's hit and miss latencies and their mix (seed 004 §3.3: a repeated upload, 1200 → 35 ms).

Seed 004 §3.3 caches the OCR text by the image's hash: a repeated upload skips the GPU
inference and answers in 35 ms instead of 1200 ms. A stage with `cache` settings that names
the stages a hit `skips` and its `hit_p99_ms` has two latencies for the part of the flow the
cache covers (the lookup and the skipped stages):

- **miss**: the lookup (the cache stage's own P50 / P99) and then every skipped stage, summed
  at P50 and at P99 (the P99 sum is conservative, as for a data-flow path, seed 000 §3.1);
- **hit**: `hit_p99_ms`, taken as the whole of a hit's time (a bound: the hit's spread is not
  declared, so its P99 stands for every hit).

With `hit_ratio` h the segment's latency is a mixture: a share h at the hit time and 1 − h
spread log-normally through the miss P50 and P99 (σ = ln(P99 / P50) / z₀.₉₉, uncapped: the
segment's declared P99 is kept whatever its spread). Its P99 is the smallest x with
h·1[x ≥ hit] + (1 − h)·F_miss(x) ≥ 0.99, i.e. max(hit, Q_miss(q′)) with
q′ = (0.99 − h) / (1 − h) (0 when h ≥ 0.99); its mean is at most h·hit + (1 − h)·miss mean,
the log-normal mean being P50·exp(σ²/2). The cached segment's P99 on a data-flow path is then
the mixture's instead of the miss's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

from archkit.perf.latency import stage_p99
from archkit.spec.model import Spec, Stage

__all__ = ["CacheMix", "cache_mixes", "mixed_quantile"]

_Q = 0.99


@dataclass(frozen=True)
class CacheMix:
    """One cache's hit and miss latencies over the segment it covers (ms)."""

    stage: str
    skips: tuple[str, ...]
    hit_ms: float
    miss_p50_ms: float
    miss_p99_ms: float
    hit_ratio: float | None

    @property
    def mixed_p99_ms(self) -> float | None:
        """The segment's P99 over hits and misses; None without a hit ratio."""
        if self.hit_ratio is None:
            return None
        return mixed_quantile(self.hit_ratio, self.hit_ms, self.miss_p50_ms, self.miss_p99_ms)

    @property
    def mean_ms(self) -> float | None:
        """An upper bound of the segment's mean (a hit counted at its P99); None without a hit ratio."""
        if self.hit_ratio is None:
            return None
        sigma = _sigma(self.miss_p50_ms, self.miss_p99_ms)
        miss_mean = self.miss_p50_ms * math.exp(sigma * sigma / 2)
        return self.hit_ratio * self.hit_ms + (1 - self.hit_ratio) * miss_mean


def mixed_quantile(hit_ratio: float, hit_ms: float, miss_p50: float, miss_p99: float, q: float = _Q) -> float:
    """The q-quantile of a share `hit_ratio` at `hit_ms` and the rest log-normal through (P50, P99)."""
    if hit_ratio >= q:
        return hit_ms
    inner = (q - hit_ratio) / (1 - hit_ratio)
    sigma = _sigma(miss_p50, miss_p99)
    miss_q = miss_p50 * math.exp(sigma * NormalDist().inv_cdf(inner)) if miss_p50 > 0 else miss_p99
    return max(hit_ms, miss_q)


def _sigma(p50: float, p99: float) -> float:
    """σ of the log-normal through (P50, P99); 0 when the spread is not known."""
    if p50 <= 0 or p99 <= p50:
        return 0.0
    return math.log(p99 / p50) / NormalDist().inv_cdf(_Q)


def cache_mixes(spec: Spec) -> list[CacheMix]:
    """Each cache stage that names what a hit skips and how long a hit takes."""
    out = []
    for st in spec.dataflow.stages:
        c = st.cache
        if c is None or c.hit_p99_ms is None or not c.skips:
            continue
        path = _longest(spec, c.skips)
        p50 = (st.p50_ms or 0.0) + sum(s.p50_ms or 0.0 for s in path)
        p99 = stage_p99(st) + sum(stage_p99(s) for s in path)
        out.append(CacheMix(st.id, tuple(s.id for s in path), c.hit_p99_ms, p50, p99, c.hit_ratio))
    return out


def _longest(spec: Spec, ids: list[str]) -> list[Stage]:
    """The skipped stages' heaviest chain by P99 over the sync edges among them: stages one after
    the other add up, alternatives (a fast and a precise model) count once, the slower.

    Iterative (issue 28: no recursion on the spec's depth): each stage's heaviest chain onward,
    taken in reverse topological order; a stage on a cycle (which a data flow should not hold)
    counts its own P99 and whatever it reaches outside the cycle."""
    wanted = set(ids)
    stages = {s.id: s for s in spec.dataflow.stages if s.id in wanted}
    succ: dict[str, list[str]] = {sid: [] for sid in stages}
    indegree = dict.fromkeys(stages, 0)
    for e in spec.dataflow.edges:
        if e.mode == "sync" and e.from_ in stages and e.to in stages and e.from_ != e.to:
            succ[e.from_].append(e.to)
            indegree[e.to] += 1
    order = [sid for sid in stages if indegree[sid] == 0]
    k = 0
    while k < len(order):
        for t in succ[order[k]]:
            indegree[t] -= 1
            if indegree[t] == 0:
                order.append(t)
        k += 1
    placed = set(order)
    cyclic = [sid for sid in stages if sid not in placed]
    best: dict[str, tuple[float, list[str]]] = {}
    for sid in cyclic + order[::-1]:
        tails = [best[t] for t in succ[sid] if t in best]
        tail = max(tails, key=lambda x: x[0], default=(0.0, []))
        best[sid] = (stage_p99(stages[sid]) + tail[0], [sid, *tail[1]])
    chain = max((best[sid] for sid in stages), key=lambda x: x[0], default=(0.0, []))[1]
    return [stages[sid] for sid in chain]
