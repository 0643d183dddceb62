"""Latency composition along the data flow and the control flow.

Data flow: stages joined by *sync* edges form paths (async edges hand work off and do not
add to the caller's latency). Per path archkit sums stage P50s (plus edge transfer times)
and bounds the P99 two ways:
- `p99_sum`: the sum of stage P99s — a conservative bound (it assumes every stage is at its
  own P99 on the same request; budget allocations must fit it, seed 000 §3.1);
- `p99_rss`: P50 sum + sqrt(Σ (P99ᵢ − P50ᵢ)²) — the estimate when stage delays are
  independent (tails add like variances), used to tell "tight" from "impossible".
The critical path is the path with the largest `p99_sum`; the stage that eats the budget is
the one with the largest P99 on it. Longest paths are found by dynamic programming over
the DAG (linear in stages + edges), so a 1,000-stage spec costs milliseconds; cycles
(reported by AK104) are broken by ignoring back edges. Paths start at stages with no
inbound edge at all; a stage fed only by async edges is off the request path.

Control flow: each path from `start` to a terminal is walked (bounded); a call costs its
target's P99 in the nominal case and timeout × attempts + backoffs in the worst case.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from archkit.spec.model import Call, Decision, Edge, Spec, Stage, Terminal


@dataclass
class PathLatency:
    """One data-flow path and its composed latency (ms)."""

    stages: list[str]
    p50_sum: float
    p99_sum: float
    p99_rss: float
    dominant: str  # the stage with the largest P99 on the path
    dominant_p99: float
    missing: list[str] = field(default_factory=list)  # stages without a P99 budget


def sync_graph(spec: Spec) -> tuple[dict[str, Stage], dict[str, list[Edge]], dict[str, int]]:
    stages: dict[str, Stage] = {}
    for s in spec.dataflow.stages:
        stages.setdefault(s.id, s)
    succ: dict[str, list[Edge]] = {sid: [] for sid in stages}
    indeg = {sid: 0 for sid in stages}
    for e in spec.dataflow.edges:
        if e.mode == "sync" and e.from_ in stages and e.to in stages:
            succ[e.from_].append(e)
            indeg[e.to] += 1
    return stages, succ, indeg


def topo_order(stages: dict[str, Stage], succ: dict[str, list[Edge]]) -> list[str]:
    """Topological order ignoring back edges (iterative DFS, so deep chains don't recurse)."""
    order: list[str] = []
    state: dict[str, int] = {}
    for root in stages:
        if root in state:
            continue
        stack = [(root, iter(succ[root]))]
        state[root] = 1
        while stack:
            node, it = stack[-1]
            e = next(it, None)
            if e is None:
                state[node] = 2
                order.append(node)
                stack.pop()
            elif e.to not in state:
                state[e.to] = 1
                stack.append((e.to, iter(succ[e.to])))
    order.reverse()
    return order


def dataflow_paths(spec: Spec, within: set[str] | None = None) -> list[PathLatency]:
    """For each sink of the sync data flow, its critical path (largest P99 sum) from any source.

    `within`: only these stages and the sync edges among them (one route a request takes,
    `perf.branch_mix`); a sink is then a stage of theirs with no sync edge onward among them."""
    stages, succ, _ = sync_graph(spec)
    if within is not None:
        stages = {sid: st for sid, st in stages.items() if sid in within}
        succ = {sid: [e for e in succ[sid] if e.to in within] for sid in stages}
    has_inbound = {e.to for e in spec.dataflow.edges}
    order = topo_order(stages, succ)
    pos = {sid: i for i, sid in enumerate(order)}
    # best[s] = (p99_sum, p50_sum, var_sum, predecessor, edge) of the heaviest path ending at s
    best: dict[str, tuple[Any, ...]] = {}
    for sid in order:
        st = stages[sid]
        p99 = stage_p99(st)
        p50 = _p50(st)
        if sid not in best:
            if sid in has_inbound:
                continue  # reached only through async hand-offs: off the request path
            best[sid] = (p99, p50, (p99 - p50) ** 2, None)
        cur = best[sid]
        for e in succ[sid]:
            if pos.get(e.to, -1) <= pos[sid]:
                continue  # back edge of a cycle
            t = stages[e.to]
            e99 = e.p99_ms or e.p50_ms or 0.0
            e50 = e.p50_ms or 0.0
            t99, t50 = stage_p99(t), _p50(t)
            cand = (cur[0] + e99 + t99, cur[1] + e50 + t50, cur[2] + (e99 - e50) ** 2 + (t99 - t50) ** 2, sid)
            if e.to not in best or cand[0] > best[e.to][0]:
                best[e.to] = cand
    out = []
    for sid in order:
        if sid not in best or any(pos.get(e.to, -1) > pos[sid] for e in succ[sid]):
            continue  # off the request path, or not a sink
        p99_sum, p50_sum, var, _ = best[sid]
        path = [sid]
        while best[path[-1]][3] is not None:
            path.append(best[path[-1]][3])
        path.reverse()
        dom = max(path, key=lambda s: stage_p99(stages[s]))
        out.append(
            PathLatency(
                path,
                p50_sum,
                p99_sum,
                p50_sum + math.sqrt(var),
                dom,
                stage_p99(stages[dom]),
                [s for s in path if stages[s].p99_ms is None],
            )
        )
    return out


def stage_p99(st: Stage) -> float:
    """A stage's P99 as the latency model reads it: the declared P99, else P95, else P50 (0: none)."""
    return st.p99_ms if st.p99_ms is not None else (st.p95_ms or st.p50_ms or 0.0)


def _p50(st: Stage) -> float:
    return st.p50_ms if st.p50_ms is not None else 0.0


def critical_path(spec: Spec) -> PathLatency | None:
    """The data-flow path with the largest P99 sum."""
    paths = dataflow_paths(spec)
    return max(paths, key=lambda p: p.p99_sum) if paths else None


# ---------------------------------------------------------------- control flow


@dataclass
class ControlPath:
    """One path through the control flow with its nominal and worst-case latency (ms)."""

    nodes: list[str]
    terminal: str | None
    outcome: str | None
    nominal_ms: float  # Σ P99 of the stages the calls target
    worst_ms: float  # Σ timeout × attempts + backoffs (+ decision timeouts)


def call_worst_ms(call: Call) -> float | None:
    """Worst-case time a call can take: every attempt times out, plus the backoffs between them
    (a geometric series in closed form, so the cost does not grow with the attempt count)."""
    if call.timeout_ms is None:
        return None
    retries = call.retry.attempts if call.retry else 0
    backoff = 0.0
    if call.retry and retries:
        step, mult = call.retry.backoff_ms, call.retry.backoff_multiplier
        backoff = step * retries if mult == 1 else step * (mult**retries - 1) / (mult - 1)
    return (1 + retries) * call.timeout_ms + backoff


def target_p99(spec: Spec, target: str) -> float | None:
    st = spec.stage(target)
    if st is not None:
        return st.p99_ms
    return None


class ControlPaths(list["ControlPath"]):
    """The control paths found; `truncated` when the walk stopped at its path or work limit
    (the paths listed are then the first ones in depth-first order, not all of them)."""

    truncated: bool = False


# Node visits, summed over the paths walked: keeps the walk under ~1 s however the control
# flow branches (the number of paths can grow exponentially with the number of decisions).
MAX_WALK_WORK = 1_000_000


def control_paths(spec: Spec, limit: int = 2000, max_work: int = MAX_WALK_WORK) -> ControlPaths:
    """Paths from `start` to terminals (each node once per path), at most `limit` of them and at
    most `max_work` node visits in all."""
    cf = spec.controlflow
    nodes: dict[str, Decision | Call | Terminal] = {}
    for n in cf.nodes():
        nodes.setdefault(n.id, n)
    start = cf.start or (next(iter(nodes)) if nodes else None)
    out = ControlPaths()
    if start is None or start not in nodes:
        return out

    def succs(n: Decision | Call | Terminal) -> list[str]:
        if isinstance(n, Decision):
            ids = [b.next for b in n.branches] + ([n.on_failure] if n.on_failure else [])
        elif isinstance(n, Call):
            ids = [x for x in (n.next, n.on_failure) if x]
        else:
            ids = []
        seen, res = set(), []
        for i in ids:
            if i in nodes and i not in seen:
                seen.add(i)
                res.append(i)
        return res

    def cost(n: Decision | Call | Terminal) -> tuple[float, float]:
        if isinstance(n, Call):
            return (target_p99(spec, n.target) or 0.0, call_worst_ms(n) or 0.0)
        if isinstance(n, Decision):
            return (0.0, n.timeout_ms or 0.0)
        return (0.0, 0.0)

    # Depth-first with one path that grows and shrinks (backtracking), so a step costs O(1)
    # and only an emitted path is copied; `work` counts steps plus the nodes of emitted paths.
    def leaf_or_next(nid: str) -> list[str] | None:
        n = nodes[nid]
        nxt = [s for s in succs(n) if s not in on_path]
        return None if isinstance(n, Terminal) or not nxt else nxt

    def emit() -> None:
        n = nodes[path[-1]]
        tid, outcome = (n.id, n.outcome) if isinstance(n, Terminal) else (None, None)
        out.append(ControlPath(list(path), tid, outcome, noms[-1], worsts[-1]))

    c0 = cost(nodes[start])
    path, on_path, noms, worsts = [start], {start}, [c0[0]], [c0[1]]
    first = leaf_or_next(start)
    if first is None:
        emit()
        return out
    iters = [iter(first)]
    work = 0
    while iters:
        work += 1
        if len(out) >= limit or work > max_work:
            out.truncated = True
            break
        nid = next(iters[-1], None)
        if nid is None:
            iters.pop()
            on_path.discard(path.pop())
            noms.pop()
            worsts.pop()
            continue
        if nid in on_path:
            continue
        c = cost(nodes[nid])
        path.append(nid)
        on_path.add(nid)
        noms.append(noms[-1] + c[0])
        worsts.append(worsts[-1] + c[1])
        nxt = leaf_or_next(nid)
        if nxt is None:
            emit()
            work += len(path)
            on_path.discard(path.pop())
            noms.pop()
            worsts.pop()
        else:
            iters.append(iter(nxt))
    return out
