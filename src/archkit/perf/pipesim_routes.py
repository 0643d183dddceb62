"""The routes a request can take through the data flow, with their probabilities.

A weighted edge is a choice a request makes (taken or not); the edges from one stage that name the
same control-flow decision are one choice among them (exactly one, or none). A cache with a `hit_ratio` splits each route through it in two: a hit
that leaves out the stages the cache `skips` and a miss that runs them (seed 004 §3.3). The
simulation (`perf.pipesim`) draws each request's route from this list.
"""

from __future__ import annotations

import math
from collections.abc import Container

from archkit.perf.latency import sync_graph, topo_order
from archkit.spec.model import Edge, Spec

# At most this many weighted choice combinations are enumerated (2^12 independent edges).
MAX_ROUTES = 1 << 12


def choice_groups(sync: list[Edge]) -> list[list[Edge]]:
    """The weighted choices a request makes, in edge order: one edge alone (taken or not), or the
    edges from one stage naming the same decision (exactly one of them, or none)."""
    groups: list[list[Edge]] = []
    by_decision: dict[tuple[str, str], list[Edge]] = {}
    for e in sync:
        if e.weight is None or e.weight >= 1:
            continue
        if e.decision is None:
            groups.append([e])
            continue
        key = (e.from_, e.decision)
        if key not in by_decision:
            by_decision[key] = []
            groups.append(by_decision[key])
        by_decision[key].append(e)
    kept: list[list[Edge]] = []
    combos = 1
    for g in groups:
        combos *= len(g) + 1
        if combos > MAX_ROUTES:
            break
        kept.append(g)
    return kept


def enumerate_routes(spec: Spec, steps: Container[str]) -> tuple[list[list[str]], list[float]]:
    """Distinct routes with their probabilities (enumerated over weighted choices, at most 2^12),
    each the stages of `steps` (the simulated ones) that the request visits."""
    ids = [s.id for s in spec.dataflow.stages]
    known = set(ids)
    sync = [e for e in spec.dataflow.edges if e.mode == "sync" and e.from_ in known and e.to in known]
    inbound = {e.to for e in spec.dataflow.edges if e.to in known}
    sources = [i for i in ids if i not in inbound]
    groups = choice_groups(sync)
    order = {sid: i for i, sid in enumerate(ids)}
    stages, succ, _ = sync_graph(spec)
    topo = {sid: i for i, sid in enumerate(topo_order(stages, succ))}
    routes: dict[tuple[str, ...], float] = {}
    total = math.prod(len(g) + 1 for g in groups)
    for combo in range(total):
        # mixed radix, the first group fastest: choice 0 takes none of a group's edges, choice k
        # its k-th (for a lone edge: bit j of a mask over the edges, as before exclusive groups)
        prob = 1.0
        closed: set[int] = set()
        rest = combo
        for g in groups:
            pick = rest % (len(g) + 1)
            rest //= len(g) + 1
            if pick:
                prob *= float(g[pick - 1].weight or 0.0)
            else:
                prob *= 1 - sum(float(e.weight or 0.0) for e in g)
            closed.update(id(e) for k, e in enumerate(g, start=1) if k != pick)
        if prob <= 0:
            continue
        seen: set[str] = set()
        stack = list(sources)
        while stack:
            sid = stack.pop()
            if sid in seen:
                continue
            seen.add(sid)
            stack.extend(e.to for e in sync if e.from_ == sid and id(e) not in closed and e.weight != 0)
        route = tuple(sorted((s for s in seen if s in steps), key=lambda s: (topo.get(s, 0), order[s])))
        routes[route] = routes.get(route, 0.0) + prob
    routes = _cache_hits(spec, routes)
    keys = sorted(routes, key=lambda r: (-routes[r], r))
    return [list(k) for k in keys], [routes[k] for k in keys]


def _cache_hits(spec: Spec, routes: dict[tuple[str, ...], float]) -> dict[tuple[str, ...], float]:
    """Each route through a cache with a hit ratio h as a hit (share h, without the stages the hit
    skips; the stages after them still run on the cached result) and a miss (1 − h), one cache
    after another. Routes the probabilities merge stay one entry."""
    for st in spec.dataflow.stages:
        c = st.cache
        if c is None or not c.hit_ratio or not c.skips:
            continue
        skipped = set(c.skips) - {st.id}
        split: dict[tuple[str, ...], float] = {}
        for route, prob in routes.items():
            if st.id not in route or skipped.isdisjoint(route):
                split[route] = split.get(route, 0.0) + prob
                continue
            hit = tuple(s for s in route if s not in skipped)
            for r, p in ((hit, prob * c.hit_ratio), (route, prob * (1 - c.hit_ratio))):
                if p > 0:
                    split[r] = split.get(r, 0.0) + p
        routes = split
    return routes
