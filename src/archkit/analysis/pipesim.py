"""A discrete-event simulation of the whole pipeline: the second opinion on `resources` and `batching`.

What it simulates (every choice is the spec's or stated here):
- Arrivals: Poisson at `rate_rps`, or recorded send times.
- Route: each request visits the stages reached from the sources over sync edges, each edge
  taken with its `weight` (unset: always), in topological order, one after the other. Async
  hand-offs are off the request's path and are not simulated.
- Other stages: a time drawn from a log-normal with median `cpu_ms` (else the P50) and the
  spread of the stage's P50 → P99 (`resources.lognormal_sigma`): work on the shared cores
  when the stage declares `cpu_ms`, else a delay; with `concurrency`, each replica has that
  many workers and a FIFO queue, otherwise every visit starts at once.
- Model stages: a visit sends ⌈items / items_per_call⌉ calls at once (a fan-out of
  `items_per_request` items, the fractional part drawn per visit); each call goes to a
  replica by the service's `routing` (random, round-robin, least-request) and waits in that
  replica's queue. Triton's dynamic batcher: a free instance takes whole calls in arrival
  order up to the target batch; a batch short of it waits until the oldest call has waited
  `max_queue_delay_us` (or until it fills). A queue already holding `max_queue_size` calls
  rejects the call (the request fails). Batch service times come from the spec's table.
- Shared processors: every batch and every worker visit is a job on its resource (cores or
  GPUs, `resources.load_model`); n jobs on c units each run at min(1, c/n) of full speed
  (processor sharing, tracked with a virtual clock per resource).
- Timeouts and retries: a control-flow call that targets a stage gives the visit a
  deadline; when it passes, the visit is abandoned (its work still runs to completion) and
  retried after the backoff, or the request fails when no attempt is left.
Deterministic: one seed fixes every draw. Bounded: at most `requests` requests (capped at
MAX_REQUESTS) and a fixed number of events per request.
"""

from __future__ import annotations

import heapq
import math
import random
from dataclasses import dataclass, field

import numpy as np

from archkit.analysis.resources import (
    LoadModel,
    busy_table_of,
    lognormal_sigma,
    service_median_ms,
    table_of,
    target_batch,
)
from archkit.spec.model import Spec

MAX_REQUESTS = 5_000_000
_EVENTS_PER_REQUEST = 400  # a hard stop for pathological specs (retry storms): far above any route

_EV_RES, _EV_DONE, _EV_TIMER, _EV_TIMEOUT, _EV_RETRY = 0, 1, 2, 3, 4
_ROUTING = {"random": 0, "round-robin": 1, "least-request": 2}


@dataclass
class _Step:
    """One stage on a route, compiled into plain numbers."""

    index: int  # position of the stage in the spec
    stage: str
    model: bool
    resource: int  # -1: unconstrained
    replicas: int
    servers: int  # per replica; 0: unbounded
    routing: int
    batch: int  # target batch in items (model)
    delay_s: float
    max_queue: int  # 0: unbounded
    items_mean: float
    items_per_call: int
    batch_s: list[float] = field(default_factory=list)  # processor time of a batch of n items, n = 0..batch
    over_s: list[float] = field(default_factory=list)  # host-side overhead after it (a model on a GPU)
    p50_s: float = 0.0
    sigma: float = 0.0
    dist: str = "lognormal"
    timeout_s: float = 0.0
    retries: int = 0
    backoff_s: float = 0.0
    backoff_mult: float = 1.0
    fallback: bool = False  # a failed visit ends the request at a fallback that still answers


@dataclass(frozen=True)
class StageSim:
    """Simulated latency of one stage's visits (ms; all fan-out calls of a visit included)."""

    stage: str
    visits: int
    mean_ms: float
    p50_ms: float
    p95_ms: float
    p99_ms: float


@dataclass(frozen=True)
class PipelineSim:
    """End-to-end results of one simulated run."""

    requests: int
    completed: int  # answered, degraded answers included
    failed: int  # rejected by a full queue or out of retries, without a fallback that answers
    degraded: int  # answered by a call's fallback after a timeout or a full queue
    rate_rps: float
    throughput_rps: float  # completed requests per second of simulated time
    mean_ms: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    stable: bool  # False when latency kept growing through the run (overload)
    utilisation: dict[str, float]  # busy share of each shared resource
    stages: tuple[StageSim, ...]
    seed: int


def _pct(sorted_ms: list[float], p: float) -> float:
    n = len(sorted_ms)
    if n == 0:
        return math.nan
    return sorted_ms[min(n - 1, max(0, int(math.ceil(p * n)) - 1))]


def _routes(spec: Spec, steps: dict[str, _Step]) -> tuple[list[list[str]], list[float]]:
    """Distinct routes with their probabilities (enumerated over weighted edges, at most 2^12)."""
    ids = [s.id for s in spec.dataflow.stages]
    known = set(ids)
    sync = [e for e in spec.dataflow.edges if e.mode == "sync" and e.from_ in known and e.to in known]
    inbound = {e.to for e in spec.dataflow.edges if e.to in known}
    sources = [i for i in ids if i not in inbound]
    weighted = [e for e in sync if e.weight is not None and e.weight < 1][:12]
    order = {sid: i for i, sid in enumerate(ids)}
    from archkit.analysis.latency import _sync_graph, _topo

    stages, succ, _ = _sync_graph(spec)
    topo = {sid: i for i, sid in enumerate(_topo(stages, succ))}
    routes: dict[tuple[str, ...], float] = {}
    for mask in range(1 << len(weighted)):
        prob = 1.0
        closed = set()
        for j, e in enumerate(weighted):
            w = float(e.weight or 0.0)
            if mask >> j & 1:
                prob *= w
            else:
                prob *= 1 - w
                closed.add(id(e))
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
    keys = sorted(routes, key=lambda r: (-routes[r], r))
    return [list(k) for k in keys], [routes[k] for k in keys]


def _answers(spec: Spec, node_id: str | None) -> bool:
    """True when a call's failure path leads to an answer (a degraded or success terminal, a fallback)."""
    from archkit.spec.model import Terminal

    if not node_id:
        return False
    node = spec.control_node(node_id)
    if isinstance(node, Terminal):
        return node.outcome in ("success", "degraded")
    return node is not None


def compile_steps(spec: Spec, load: LoadModel) -> tuple[dict[str, _Step], list[str], list[float]]:
    """The simulation's view of each stage and the index of each shared resource."""
    res_ids = [r.id for r in load.resources]
    res_units = [r.units for r in load.resources]
    calls = {c.target: c for c in spec.controlflow.calls}
    steps: dict[str, _Step] = {}
    for i, (st, sl) in enumerate(zip(spec.dataflow.stages, load.stages, strict=True)):
        svc = spec.service(st.service) if st.service else None
        routing = _ROUTING.get(svc.routing if svc is not None else "random", 0)
        r = res_ids.index(sl.resource) if sl.resource is not None else -1
        call = calls.get(st.id)
        common = {
            "index": i,
            "stage": st.id,
            "resource": r,
            "replicas": sl.replicas,
            "servers": sl.servers_per_replica or 0,
            "routing": routing,
            "items_mean": st.items_per_request,
            "items_per_call": sl.items_per_call,
            "timeout_s": (call.timeout_ms or 0.0) / 1000 if call is not None else 0.0,
            "retries": call.retry.attempts if call is not None and call.retry else 0,
            "backoff_s": call.retry.backoff_ms / 1000 if call is not None and call.retry else 0.0,
            "backoff_mult": call.retry.backoff_multiplier if call is not None and call.retry else 1.0,
            "fallback": _answers(spec, call.on_failure) if call is not None else False,
        }
        m = st.model
        table = table_of(st)
        busy = busy_table_of(st)
        if m is not None and table is not None and busy is not None:
            b = target_batch(st)
            bt = m.batching
            steps[st.id] = _Step(
                model=True,
                batch=b,
                delay_s=(bt.max_queue_delay_us if bt else 0) / 1e6,
                max_queue=(bt.max_queue_size or 0) if bt else 0,
                batch_s=[0.0] + [busy.ms(n) / 1000 for n in range(1, b + 1)],
                over_s=[0.0] + [max(0.0, table.ms(n) - busy.ms(n)) / 1000 for n in range(1, b + 1)],
                **common,
            )
        elif service_median_ms(st) > 0:
            steps[st.id] = _Step(
                model=False,
                batch=1,
                delay_s=0.0,
                max_queue=0,
                p50_s=service_median_ms(st) / 1000,
                sigma=lognormal_sigma(st.p50_ms, st.p99_ms),
                dist=st.service_distribution,
                **common,
            )
    return steps, res_ids, res_units


def simulate_pipeline(
    spec: Spec,
    load: LoadModel,
    rate_rps: float,
    requests: int = 100_000,
    seed: int = 7,
    arrivals: list[float] | None = None,
) -> PipelineSim:
    """Simulate `requests` requests (Poisson at `rate_rps`, or the recorded `arrivals`, in s)."""
    steps, res_ids, res_units = compile_steps(spec, load)
    routes, probs = _routes(spec, steps)
    np_rng = np.random.default_rng(seed)
    rng = random.Random(seed)
    if arrivals is not None:
        arr = sorted(float(a) for a in arrivals)[:MAX_REQUESTS]
        n = len(arr)
    else:
        n = max(0, min(int(requests), MAX_REQUESTS))
        if rate_rps <= 0 or n == 0:
            return PipelineSim(0, 0, 0, 0, rate_rps, 0.0, 0.0, 0.0, 0.0, 0.0, True, {}, (), seed)
        arr = np.cumsum(np_rng.exponential(1 / rate_rps, n)).tolist()
    if n == 0:
        return PipelineSim(0, 0, 0, 0, rate_rps, 0.0, 0.0, 0.0, 0.0, 0.0, True, {}, (), seed)
    cum = np.cumsum(probs)
    route_of = np.minimum(
        np.searchsorted(cum, np_rng.random(n) * cum[-1], side="right"), len(routes) - 1
    ).tolist()
    route_steps = [[steps[s] for s in r] for r in routes]
    by_index = {sp.index: sp for sp in steps.values()}
    # per-stage draws, indexed by request: log-normal work and the fan-out's item count
    work: dict[int, list[float]] = {}
    items: dict[int, list[int]] = {}
    for sp in steps.values():
        if not sp.model:
            if sp.dist == "exponential":
                work[sp.index] = np_rng.exponential(sp.p50_s / math.log(2), n).tolist()
            elif sp.dist == "deterministic" or sp.sigma <= 0:
                work[sp.index] = [sp.p50_s] * n
            else:
                work[sp.index] = (sp.p50_s * np.exp(sp.sigma * np_rng.standard_normal(n))).tolist()
        frac = sp.items_mean - math.floor(sp.items_mean)
        base = max(1, math.floor(sp.items_mean))
        items[sp.index] = (base + (np_rng.random(n) < frac)).tolist() if frac > 0 else [base] * n

    nres = len(res_ids)
    r_units = list(res_units)
    r_v = [0.0] * nres  # virtual time: work each active job has received
    r_t = [0.0] * nres
    r_n = [0] * nres
    r_heap: list[list[tuple[float, int]]] = [[] for _ in range(nres)]
    r_ver = [0] * nres
    r_busy = [0.0] * nres  # unit-seconds of work done
    # replica queues: per step, per replica
    q_calls: dict[int, list[list]] = {}
    q_head: dict[int, list[int]] = {}
    q_free: dict[int, list[int]] = {}
    q_out: dict[int, list[int]] = {}  # calls outstanding (queued or in service) per replica
    q_timer: dict[int, list[bool]] = {}
    rr_next: dict[int, int] = {}
    for sp in steps.values():
        q_calls[sp.index] = [[] for _ in range(sp.replicas)]
        q_head[sp.index] = [0] * sp.replicas
        q_free[sp.index] = [sp.servers if sp.servers else 1 << 30] * sp.replicas
        q_out[sp.index] = [0] * sp.replicas
        q_timer[sp.index] = [False] * sp.replicas
        rr_next[sp.index] = 0
    # jobs: id -> (kind, step, replica, payload); kind 0: worker visit, 1: batch of calls
    jobs: dict[int, tuple] = {}
    job_seq = 0
    # requests: position on route, attempt, outstanding calls, visit start, start time
    pos = [0] * n
    attempt = [0] * n
    pending = [0] * n
    vstart = [0.0] * n
    done_at = [math.nan] * n
    failed = [False] * n
    degraded = [False] * n
    stage_lat: dict[int, list[float]] = {sp.index: [] for sp in steps.values()}
    heap: list[tuple] = []
    seq = 0
    now = 0.0
    push = heapq.heappush
    pop = heapq.heappop
    events = 0
    max_events = _EVENTS_PER_REQUEST * n

    def advance(r: int, t: float) -> None:
        k = r_n[r]
        if k:
            dt = t - r_t[r]
            rate = r_units[r] / k if k > r_units[r] else 1.0
            r_v[r] += dt * rate
            r_busy[r] += dt * min(k, r_units[r])
        r_t[r] = t

    def reschedule(r: int) -> None:
        nonlocal seq
        r_ver[r] += 1
        k = r_n[r]
        if k:
            rate = r_units[r] / k if k > r_units[r] else 1.0
            seq += 1
            push(heap, (now + max(0.0, r_heap[r][0][0] - r_v[r]) / rate, seq, _EV_RES, r, r_ver[r]))

    def start_job(r: int, w: float, job: tuple) -> None:
        nonlocal job_seq, seq
        job_seq += 1
        jobs[job_seq] = job
        if r < 0:
            seq += 1
            push(heap, (now + w, seq, _EV_DONE, job_seq, 0))
            return
        advance(r, now)
        r_n[r] += 1
        push(r_heap[r], (r_v[r] + w, job_seq))
        reschedule(r)

    def dispatch(sp: _Step, rep: int) -> None:
        nonlocal seq
        calls = q_calls[sp.index][rep]
        head = q_head[sp.index][rep]
        free = q_free[sp.index]
        while free[rep] > 0 and head < len(calls):
            if not sp.model:
                c = calls[head]
                head += 1
                free[rep] -= 1
                start_job(sp.resource, c[3], (0, sp, rep, c))
                continue
            total, j = 0, head
            while j < len(calls) and total + calls[j][2] <= sp.batch:
                total += calls[j][2]
                j += 1
            if j == head:  # a call larger than the batch: it goes alone
                total, j = calls[head][2], head + 1
            if total < sp.batch and sp.delay_s > 0 and now < calls[head][4] + sp.delay_s:
                if not q_timer[sp.index][rep]:
                    q_timer[sp.index][rep] = True
                    seq += 1
                    push(heap, (calls[head][4] + sp.delay_s, seq, _EV_TIMER, sp.index, rep))
                break
            batch = calls[head:j]
            head = j
            free[rep] -= 1
            bs = sp.batch_s
            w = bs[total] if total < len(bs) else bs[-1] * total / (len(bs) - 1)
            start_job(sp.resource, w, (1, sp, rep, batch))
        if head > 4096 and head * 2 > len(calls):
            del calls[:head]
            head = 0
        q_head[sp.index][rep] = head

    def pick(sp: _Step) -> int:
        if sp.replicas == 1:
            return 0
        if sp.routing == 1:
            rr_next[sp.index] = (rr_next[sp.index] + 1) % sp.replicas
            return rr_next[sp.index]
        if sp.routing == 2:
            out = q_out[sp.index]
            return out.index(min(out))
        return int(rng.random() * sp.replicas)

    def fail(i: int, sp: _Step | None = None) -> None:
        if sp is not None and sp.fallback:
            degraded[i] = True
        else:
            failed[i] = True
        done_at[i] = now
        pos[i] = -1

    def enter(i: int) -> None:
        """Start request i's visit of the stage at its route position (or finish it)."""
        nonlocal seq
        rsteps = route_steps[route_of[i]]
        if pos[i] >= len(rsteps):
            done_at[i] = now
            return
        sp = rsteps[pos[i]]
        vstart[i] = now
        a = attempt[i]
        if sp.timeout_s > 0:
            seq += 1
            push(heap, (now + sp.timeout_s, seq, _EV_TIMEOUT, i, a))
        if not sp.model:
            w = work[sp.index][i]
            if sp.servers == 0:
                pending[i] = 1
                start_job(sp.resource, w, (0, sp, 0, [i, a, 1, w, now]))
                return
            rep = pick(sp)
            pending[i] = 1
            q_calls[sp.index][rep].append([i, a, 1, w, now])
            q_out[sp.index][rep] += 1
            dispatch(sp, rep)
            return
        k = items[sp.index][i]
        per = sp.items_per_call
        ncalls = -(-k // per)
        pending[i] = ncalls
        touched = set()
        for c in range(ncalls):
            size = per if c < ncalls - 1 else k - per * (ncalls - 1)
            rep = pick(sp)
            q = q_calls[sp.index][rep]
            if sp.max_queue and len(q) - q_head[sp.index][rep] >= sp.max_queue:
                fail(i, sp)
                return
            q.append([i, a, size, 0.0, now])
            q_out[sp.index][rep] += 1
            touched.add(rep)
        for rep in sorted(touched):
            dispatch(sp, rep)

    def finish_call(i: int, a: int, sp: _Step) -> None:
        if pos[i] < 0 or attempt[i] != a:
            return  # an abandoned attempt, or the request already failed
        pending[i] -= 1
        if pending[i] == 0:
            stage_lat[sp.index].append(now - vstart[i])
            pos[i] += 1
            attempt[i] = 0
            enter(i)

    def job_done(jid: int) -> None:
        nonlocal seq
        kind, sp, rep, payload = jobs.pop(jid)
        if kind == 1 and sp.over_s:
            total = sum(c[2] for c in payload)
            over = sp.over_s[min(total, len(sp.over_s) - 1)]
            if over > 0:  # the host-side overhead: the instance stays busy, the GPU does not
                jobs[jid] = (2, sp, rep, payload)
                seq += 1
                push(heap, (now + over, seq, _EV_DONE, jid, 0))
                return
        if sp.servers or sp.model:
            q_free[sp.index][rep] += 1
        if kind == 0:
            if sp.servers:
                q_out[sp.index][rep] -= 1
            finish_call(payload[0], payload[1], sp)
        else:
            q_out[sp.index][rep] -= len(payload)
            for c in payload:
                finish_call(c[0], c[1], sp)
        if sp.servers or sp.model:
            dispatch(sp, rep)

    ai = 0
    while ai < n or heap:
        if events > max_events:
            break
        events += 1
        if ai < n and (not heap or arr[ai] <= heap[0][0]):
            now = arr[ai]
            enter(ai)
            ai += 1
            continue
        ev = pop(heap)
        now, kind, a, b = ev[0], ev[2], ev[3], ev[4]
        if kind == _EV_RES:
            if b != r_ver[a]:
                continue
            advance(a, now)
            rh = r_heap[a]
            finished = []
            while rh and rh[0][0] <= r_v[a] + 1e-12:
                finished.append(pop(rh)[1])
            if not finished:  # float drift: the earliest job is done
                finished.append(pop(rh)[1])
            r_n[a] -= len(finished)
            reschedule(a)
            for jid in finished:
                job_done(jid)
        elif kind == _EV_DONE:
            job_done(a)
        elif kind == _EV_TIMER:
            q_timer[a][b] = False
            dispatch(by_index[a], b)
        elif kind == _EV_TIMEOUT:
            i, att = a, b
            if pos[i] < 0 or attempt[i] != att or not math.isnan(done_at[i]):
                continue
            sp = route_steps[route_of[i]][pos[i]]
            if att < sp.retries:
                attempt[i] = att + 1
                seq += 1
                push(heap, (now + sp.backoff_s * sp.backoff_mult**att, seq, _EV_RETRY, i, att + 1))
            else:
                fail(i, sp)
        elif kind == _EV_RETRY:
            i = a
            if pos[i] >= 0 and attempt[i] == b:
                enter(i)
    lat = [1000 * (done_at[i] - arr[i]) for i in range(n) if not failed[i] and not math.isnan(done_at[i])]
    nfail = sum(failed)
    ndeg = sum(degraded)
    completed = len(lat)
    span = max((d for d in done_at if not math.isnan(d)), default=0.0) - arr[0]
    # overload shows as latency that keeps growing: compare the last tenth with the middle
    tenth = max(1, completed // 10)
    srt = sorted(lat)
    stable = (
        completed > 0
        and (sum(lat[-tenth:]) / tenth < 2 * (sum(lat[4 * tenth : 5 * tenth]) / tenth) + 1e-9)
        and completed + nfail >= n
    )
    end = max(now, 1e-12)
    util = {rid: r_busy[j] / (r_units[j] * end) for j, rid in enumerate(res_ids)}
    # a saturated processor is overload too, whatever the latencies did (timeouts cap them)
    stable = stable and max(util.values(), default=0.0) < 0.995
    stage_out = []
    for sp in sorted(steps.values(), key=lambda s: s.index):
        v = sorted(1000 * x for x in stage_lat[sp.index])
        if not v:
            continue
        stage_out.append(
            StageSim(sp.stage, len(v), sum(v) / len(v), _pct(v, 0.5), _pct(v, 0.95), _pct(v, 0.99))
        )
    return PipelineSim(
        n,
        completed,
        nfail,
        ndeg,
        rate_rps if arrivals is None else (n / max(arr[-1] - arr[0], 1e-12)),
        completed / span if span > 0 else 0.0,
        sum(lat) / completed if completed else math.nan,
        _pct(srt, 0.5),
        _pct(srt, 0.95),
        _pct(srt, 0.99),
        bool(stable),
        util,
        tuple(stage_out),
        seed,
    )
