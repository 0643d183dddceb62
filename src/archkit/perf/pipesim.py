"""A discrete-event simulation of the whole pipeline: the second opinion on `resources` and `batching`.

What it simulates (every choice is the spec's or stated here):
- Arrivals: Poisson at `rate_rps`, or recorded send times.
- Route: each request visits the stages reached from the sources over sync edges, each edge
  taken with its `weight` (unset: always), in topological order, one after the other; edges
  from one stage that name the same `decision` are exclusive (a request takes one of them, each
  with its weight, or none with the rest). Async hand-offs are off the request's path and are
  not simulated.
- Other stages: a time drawn from a log-normal with median `cpu_ms` (else the P50) and the
  stage's measured spread, else its P50 → P99 budgets' (`resources.service_sigma`): work on the shared cores
  when the stage declares `cpu_ms`, else a delay; with `concurrency`, each replica has that
  many workers and a FIFO queue, otherwise every visit starts at once.
- Model stages: a visit sends ⌈items / items_per_call⌉ calls at once (a fan-out of
  `items_per_request` items, the fractional part drawn per visit), or, where the stage declares
  its measured fan-out (`fanout.table`), each visit's items and calls drawn together from that
  table's rows by weight, the items split over the calls as evenly as they go (7 in 4: 2, 2, 2,
  1; issue 29: the gateway's calls by width bucket, the pages with the most lines); each call goes to a
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
MAX_REQUESTS, and lowered so that the calls they make stay under MAX_CALLS: the result's
`requests` says how many ran) and a budget of work (`max_work`: events, plus the jobs and
replicas each event scans; by default _EVENTS_PER_REQUEST per request). A run that spends
its budget stops there: the result says so (`cut_short`) and how much work it did (`work`: every
pass and refusal-cost round of it, which share the one budget; a round it cuts short after a
complete one is dropped for that one's answer, `rounds_cut`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from archkit.perf import pipesim_kernel as kernel
from archkit.perf import service_models
from archkit.perf.limits import admission_groups, apply_rate_limits, entry_refusal_stage, stage_queue_limits
from archkit.perf.pipesim_routes import enumerate_routes
from archkit.perf.resources import LoadModel
from archkit.perf.service_models import Step
from archkit.spec.model import Spec

MAX_REQUESTS = 5_000_000
MAX_CALLS = (
    40_000_000  # stage visits and inference calls in one run: fewer requests when each fans out widely
)
_EVENTS_PER_REQUEST = 400  # a hard stop for pathological specs (retry storms): far above any route

_ROUTING = {"random": 0, "round-robin": 1, "least-request": 2}


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
class FirstToken:
    """A streaming stage's first output as the user sees it (ms, P50/P95/P99 over the visits that
    reached it): from the request's arrival at the service to the stage's first token, i.e. the
    time before the stage (gateway, retrieval, their queues: `upstream_ms`) plus the stage's own
    time to first token (an LLM engine's TTFT, queueing in it included: `stage_ms`)."""

    stage: str
    visits: int
    upstream_ms: dict[str, float]
    stage_ms: dict[str, float]
    user_ms: dict[str, float]


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
    shed: int = 0  # refused by an admission or rate limit (`spec.traffic`): a fast 429/503
    work: int = 0  # events plus the jobs and replicas they scanned (the unit of `max_work`)
    cut_short: bool = False  # the work budget ran out before every request was answered
    first_token: tuple[FirstToken, ...] = ()  # per co-simulated streaming stage (an LLM's user TTFT)
    cut_in: str | None = None  # what the budget cut short in a co-simulated stage's own simulation
    cut_stage: str | None = None  # that stage (the first, when several were cut)
    # the refusal-cost round (2nd to `_REFUSAL_ROUNDS`th) the budget cut short, 0 if none: the
    # result is the round before it, complete but a step short of the fixed point
    rounds_cut: int = 0


def _answers(spec: Spec, node_id: str | None) -> bool:
    """True when a call's failure path leads to an answer (a degraded or success terminal, a fallback)."""
    from archkit.spec.model import Terminal

    if not node_id:
        return False
    node = spec.control_node(node_id)
    if isinstance(node, Terminal):
        return node.outcome in ("success", "degraded")
    return node is not None


def _call_bounded(spec: Spec, load: LoadModel) -> int:
    """Requests whose calls fit MAX_CALLS: a fan-out of thousands of items per request costs that many calls."""
    fan = {st.id: st.fanout.mean_calls for st in spec.dataflow.stages if st.fanout is not None}
    per = sum(
        s.reach * max(1.0, fan.get(s.stage) or s.items_per_request / max(1, s.items_per_call))
        for s in load.stages
    )
    return max(1000, int(MAX_CALLS / max(per, 1.0)))


def compile_steps(spec: Spec, load: LoadModel) -> tuple[dict[str, Step], list[str], list[float]]:
    """The simulation's view of each stage (by its service model) and the shared resources."""
    res_ids = [r.id for r in load.resources]
    res_units = [r.units for r in load.resources]
    calls = {c.target: c for c in spec.controlflow.calls}
    steps: dict[str, Step] = {}
    queue_limits = stage_queue_limits(spec)
    for i, (st, sl) in enumerate(zip(spec.dataflow.stages, load.stages, strict=True)):
        svc = spec.service(st.service) if st.service else None
        routing = _ROUTING.get(svc.routing if svc is not None else "random", 0)
        r = res_ids.index(sl.resource) if sl.resource is not None else -1
        call = calls.get(st.id)
        common: dict[str, Any] = {
            "index": i,
            "stage": st.id,
            "resource": r,
            "replicas": sl.replicas,
            "servers": sl.servers_per_replica or 0,
            "routing": routing,
            "items_mean": st.items_per_request,
            "items_per_call": sl.items_per_call,
            "fanout": list(st.fanout.table) if st.fanout is not None else [],
            "timeout_s": (call.timeout_ms or 0.0) / 1000 if call is not None else 0.0,
            "retries": call.retry.attempts if call is not None and call.retry else 0,
            "backoff_s": call.retry.backoff_ms / 1000 if call is not None and call.retry else 0.0,
            "backoff_mult": call.retry.backoff_multiplier if call is not None and call.retry else 1.0,
            "fallback": _answers(spec, call.on_failure) if call is not None else False,
        }
        step = service_models.model_for(st).step(spec, st, common)
        if step is not None:
            if st.id in queue_limits:  # traffic.admission with a stage: its queue length
                step.max_queue = min(queue_limits[st.id], step.max_queue or queue_limits[st.id])
            steps[st.id] = step
    return steps, res_ids, res_units


def simulate_pipeline(
    spec: Spec,
    load: LoadModel,
    rate_rps: float,
    requests: int = 100_000,
    seed: int = 7,
    arrivals: list[float] | None = None,
    compiled: bool = True,
    max_work: int | None = None,
) -> PipelineSim:
    """Simulate `requests` requests (Poisson at `rate_rps`, or the recorded `arrivals`, in s).

    `max_work` bounds the work (events and the scans they do; default _EVENTS_PER_REQUEST per
    request): a run that spends it stops with `cut_short` set.

    `compiled=False` runs the event loop as plain Python (same results, ~35× slower): for a
    plug-in service model under test, whose handler numba would otherwise compile afresh.
    A stage whose service model simulates its own visits (`ServiceModel.visits`: an LLM engine's
    continuous batching) is co-simulated: a first pass with that stage instantaneous gives each
    visit's arrival time at it, the model turns those into visit latencies, and a second pass
    runs with them as the visits' work (`_cosimulate`)."""
    steps, res_ids, res_units = compile_steps(spec, load)
    routes, probs = enumerate_routes(spec, steps)
    rng = np.random.default_rng(seed)
    if arrivals is not None:
        arr = np.sort(np.asarray(arrivals, dtype=np.float64))[:MAX_REQUESTS]
        n = int(arr.shape[0])
    else:
        n = max(0, min(int(requests), MAX_REQUESTS, _call_bounded(spec, load)))
        if rate_rps <= 0 or n == 0:
            return PipelineSim(0, 0, 0, 0, rate_rps, 0.0, 0.0, 0.0, 0.0, 0.0, True, {}, (), seed)
        arr = np.cumsum(rng.exponential(1 / rate_rps, n))
    if n == 0:
        return PipelineSim(0, 0, 0, 0, rate_rps, 0.0, 0.0, 0.0, 0.0, 0.0, True, {}, (), seed)
    order = sorted(steps.values(), key=lambda sp: sp.index)
    kidx = {sp.stage: k for k, sp in enumerate(order)}
    cum = np.cumsum(probs)
    route_of = np.minimum(np.searchsorted(cum, rng.random(n) * cum[-1], side="right"), len(routes) - 1)
    route_len = np.array([len(r) for r in routes], dtype=np.int64)
    route_stage = np.zeros((len(routes), max(1, int(route_len.max(initial=0)))), dtype=np.int64)
    for v, r in enumerate(routes):
        for j, sid in enumerate(r):
            route_stage[v, j] = kidx[sid]
    batch_s, over_s, work, items, ncalls = _draws(order, rng, n)
    # rate limits: token buckets applied to the arrival times before the loop (`perf.limits`),
    # with their own random stream so that a spec without limits draws exactly as before
    run = np.arange(n)
    t_in = arr
    bucket_refused_rps = 0.0  # refused by a token bucket, before the loop
    if spec.traffic.rate_limits:
        visits = {
            lim.stage: np.array([lim.stage in r for r in routes], dtype=bool)[route_of]
            for lim in spec.traffic.rate_limits
            if lim.stage is not None
        }
        t_lim, passed = apply_rate_limits(
            list(spec.traffic.rate_limits), arr, visits, np.random.default_rng([seed, 1])
        )
        run = np.flatnonzero(passed)
        run = run[np.argsort(t_lim[run], kind="stable")]
        t_in = t_lim[run]
        bucket_refused_rps = int(n - run.shape[0]) / max(float(arr[-1] - arr[0]), 1e-12) if n > 1 else 0.0
    if kernel.bound() != service_models.HANDLERS:
        kernel.bind(service_models.HANDLERS)
    noise = rng.random(max(4 * n, 1 << 16))
    rr = route_of[run].astype(np.int64)
    budget = _EVENTS_PER_REQUEST * n if max_work is None else max(1, int(max_work))
    args = (
        t_in, rr, route_len, route_stage, batch_s, over_s, work[:, run], items[:, run], ncalls[:, run], noise,
        budget,
    )  # fmt: skip
    cosim = [k for k, sp in enumerate(order) if sp.cosim]
    refusal = refusal_load(spec, order, len(res_units))
    bucket_cost = refusal_load(spec, order, len(res_units), bucket=True) if bucket_refused_rps else None

    def left(refused_rps: float) -> list[float]:
        """The units the admitted requests have while `refused_rps` are refused by the admission limits
        and `bucket_refused_rps` by the token buckets, each refusal costing its exchange."""
        out = []
        for j, u in enumerate(res_units):
            cost = refused_rps * (refusal[j] if refusal else 0.0)
            cost += bucket_refused_rps * (bucket_cost[j] if bucket_cost else 0.0)
            out.append(max(u * _MIN_UNITS_LEFT, u - cost))
        return out

    units = used = left(0.0)
    first: list[FirstToken] = []
    cut_in: tuple[str, str] | None = None
    # every round (and its co-simulation) draws on the one budget: a later round gets what the
    # earlier ones left (issue 28: each round had the whole budget again, up to 4x the work)
    spent = 0
    kept: tuple[Any, list[float], list[FirstToken], tuple[str, str] | None] | None = None
    rounds = _REFUSAL_ROUNDS if refusal is not None else 1
    stopped = 0  # the round the budget cut short after a complete one (its answer is not used)
    for rnd in range(rounds):
        used = units
        loop = _loop(spec, order, used, compiled)
        round_args = (*args[:_BUDGET], max(1, budget - spent))
        out = loop(*round_args)
        if cosim:
            first = []  # this round's first tokens only
            out, cut_in = _cosimulate(spec, order, cosim, loop, round_args, out, seed, arr[run], first)
        spent += int(out[4])
        if bool((out[1] == 0).any()):  # the budget ran out in this round: no round after it
            if kept is not None:
                # the previous round answered every request, with the refusals' load as the round
                # before it measured (a step short of the fixed point): its answer stands
                out, used, first, cut_in = kept
                stopped = rnd + 1
            break
        if refusal is None:
            break
        # refusals are a steady load on their cores: those left to the admitted requests are fewer,
        # which refuses more (a fixed point, reached within a few rounds: the load is a small share)
        refused_rps = int((out[1] == 4).sum()) / max(float(t_in[-1] - t_in[0]), 1e-12) if t_in.size else 0.0
        if refused_rps == 0:
            break
        kept = (out, used, first, cut_in)
        units = left(refused_rps)
    res = _result(spec, order, res_ids, res_units, arr, run, out, rate_rps, arrivals is None, seed, used)
    res = replace(res, work=spent, rounds_cut=stopped)
    if cut_in is not None:
        res = replace(res, cut_in=cut_in[1], cut_stage=cut_in[0])
    return replace(res, first_token=tuple(first)) if first else res


# Rounds of the refusal-cost fixed point: the first runs with the whole cores, each later one with
# the cores the previous round's refusals left; the refused load is a few per cent of the cores, so
# the shed share moves by well under a point after the third.
_REFUSAL_ROUNDS = 4
_MIN_UNITS_LEFT = 0.05  # refusals never take more than 95 % of a resource


def refusal_load(spec: Spec, order: list[Step], n_res: int, bucket: bool = False) -> list[float] | None:
    """Processor-seconds per refused request on each resource (`limits.refusal_stage`: the mean work
    of the refusing service's ingress stage), None when no refusal costs anything.

    An admission limit's refusal is charged to the first admission group with such a stage; with
    one group (the reference gateway) that is the one that refused it. `bucket`: a token bucket's
    refusal instead, charged to the service every request enters (`limits.entry_refusal_stage`)."""
    from archkit.perf.resources import service_mean_ms

    stages = [entry_refusal_stage(spec)] if bucket else [g.refusal_stage for g in admission_groups(spec)]
    cost = [0.0] * n_res
    for sid in stages:
        st = spec.stage(sid) if sid else None
        sp = next((x for x in order if st is not None and x.stage == st.id), None)
        if st is None or sp is None or sp.resource < 0:
            continue
        cost[sp.resource] += service_mean_ms(st) / 1000
        break  # the first group's: see the docstring
    return cost if any(c > 0 for c in cost) else None


def _draws(order: list[Step], rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    """Per-stage inputs: batch and overhead tables, each request's worker-visit work, fan-out items
    and calls (0: the handler splits the items; a `fanout` table's row gives both)."""
    n_k = len(order)
    bmax = max([len(sp.batch_s) for sp in order] + [2])
    batch_s = np.zeros((max(n_k, 1), bmax))
    over_s = np.zeros((max(n_k, 1), bmax))
    work = np.zeros((max(n_k, 1), n))
    items = np.ones((max(n_k, 1), n), dtype=np.int64)
    ncalls = np.zeros((max(n_k, 1), n), dtype=np.int64)
    for k, sp in enumerate(order):
        if sp.tabled:
            batch_s[k, : len(sp.batch_s)] = sp.batch_s
            batch_s[k, len(sp.batch_s) :] = sp.batch_s[-1]
            over_s[k, : len(sp.over_s)] = sp.over_s
        elif sp.dist == "exponential":
            work[k] = rng.exponential(sp.p50_s / math.log(2), n)
        elif sp.dist == "deterministic" or sp.sigma <= 0:
            work[k] = sp.p50_s
        else:
            work[k] = sp.p50_s * np.exp(sp.sigma * rng.standard_normal(n))
        if sp.fanout and sp.tabled:  # a batcher's calls (a worker visit is one job whatever it carries)
            items[k], ncalls[k] = fanout_draws(sp.fanout, rng.random(n))
            continue
        frac = sp.items_mean - math.floor(sp.items_mean)
        base = max(1, math.floor(sp.items_mean))
        items[k] = base + (rng.random(n) < frac) if frac > 0 else base
    return batch_s, over_s, work, items, ncalls


def fanout_draws(table: list[tuple[int, int, float]], u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each visit's (items, calls): the table's row whose cumulative weight share first passes its
    U(0, 1) draw in `u` (rows in the table's order)."""
    rows = np.asarray(table, dtype=np.float64).reshape(-1, 3)
    cum = np.cumsum(rows[:, 2])
    pick = np.minimum(np.searchsorted(cum, u * cum[-1], side="right"), rows.shape[0] - 1)
    return rows[pick, 0].astype(np.int64), rows[pick, 1].astype(np.int64)


def _offsets(order: list[Step]) -> np.ndarray:
    st_off = np.zeros(len(order) + 1, dtype=np.int64)
    for k, sp in enumerate(order):
        st_off[k + 1] = st_off[k] + sp.replicas
    return st_off


def _loop(spec: Spec, order: list[Step], res_units: list[float], compiled: bool) -> Callable[..., Any]:
    """The event loop with every per-stage constant bound: (arrivals, routes, ..., work, items, noise, n) -> out."""

    def col(attr: str, dtype: type) -> np.ndarray:
        return np.array([getattr(sp, attr) for sp in order], dtype=dtype)

    # admission groups: each limited service's in-flight count, over the steps of its stages
    groups = admission_groups(spec)
    g_of = {g.service: j for j, g in enumerate(groups)}
    stage_svc = {st.id: st.service for st in spec.dataflow.stages}
    st_group = np.array([g_of.get(stage_svc.get(sp.stage) or "", -1) for sp in order], dtype=np.int64)
    fn: Callable[..., Any] = kernel.run if compiled else kernel.run_python
    per_stage = [col(a, t) for a, t in _COLUMNS]
    fallback = np.array([1 if sp.fallback else 0 for sp in order], dtype=np.int64)
    g_inflight = np.array([g.max_inflight for g in groups], dtype=np.int64)
    g_queue = np.array([g.max_queue for g in groups], dtype=np.int64)
    units = np.array(res_units, dtype=np.float64)
    st_off = _offsets(order)

    def loop(*a: Any) -> Any:
        """(arrivals, routes, route lengths, route stages, batch_s, over_s, work, items, calls, noise, budget)."""
        t_in, rr, route_len, route_stage, batch_s, over_s, work, items, ncalls, noise, budget = a
        return fn(
            t_in, rr, route_len, route_stage, *per_stage, fallback, st_off, st_group, g_inflight, g_queue,
            batch_s, over_s, work, items, ncalls, units, noise, budget,
        )  # fmt: skip

    return loop


_BUDGET = 10  # the loop's arguments: the budget of work is the last, after the noise

_COLUMNS = (
    ("handler", np.int64), ("resource", np.int64), ("replicas", np.int64), ("servers", np.int64),
    ("routing", np.int64), ("batch", np.int64), ("delay_s", np.float64), ("max_queue", np.int64),
    ("items_per_call", np.int64), ("timeout_s", np.float64), ("retries", np.int64),
    ("backoff_s", np.float64), ("backoff_mult", np.float64),
)  # fmt: skip


def _cosimulate(
    spec: Spec,
    order: list[Step],
    cosim: list[int],
    loop: Callable[..., Any],
    args: tuple[Any, ...],
    out: Any,
    seed: int,
    sent_s: np.ndarray,
    first: list[FirstToken],
) -> tuple[Any, tuple[str, str] | None]:
    """The second pass: co-simulated stages' visits get the latencies their own model gives them.

    A visit's arrival at stage k is when the first pass (stage k instantaneous) finished it: the
    request's completion less the later stages' visits on its route (exact when those stages do
    not retry). The other inputs are the first pass's, so the stages before k see the same draws.
    A stage whose model also gives each visit's first output adds a `FirstToken` to `first`: its
    time before the stage runs from the request's sending (`sent_s`, before any rate limit's delay)
    to that same arrival, the one the stage's own simulation was given.

    One budget (args' last, simulated events) for the three: the first pass spent some, each
    stage's own simulation gets what is left less as much again for the second pass
    (`ServiceModel.visits`; issue 28: an LLM engine per replica per pass was uncounted work), the
    second pass what remains after them. A visit its
    model did not answer within that (`Visits.answered`) leaves its request unanswered (status 0:
    the run is cut short) and the stage's latency unknown (NaN), never 0 s. Returns the second
    pass's results, the work of all three, and (stage, what) the budget cut short in a model's
    simulation, if it did."""
    rr, route_len, route_stage = args[1], args[2], args[3]
    work = args[6].copy()
    done_at, lat = out[0], out[2]
    left = int(args[_BUDGET]) - int(out[4])
    unanswered: list[tuple[int, np.ndarray]] = []  # (stage, request indices) a model did not answer
    cuts: list[tuple[str, str]] = []
    for k in cosim:
        seen = ~np.isnan(lat[k])
        if not seen.any():
            continue
        after = np.zeros(lat.shape[1])
        for v in range(route_len.shape[0]):
            pos = [p for p in range(route_len[v]) if route_stage[v, p] == k]
            if not pos:
                continue
            mine = rr == v
            for p in range(pos[0] + 1, route_len[v]):
                after[mine] += np.nan_to_num(lat[route_stage[v, p]][mine])
        at = done_at[seen] - after[seen]
        st = spec.stage(order[k].stage)
        assert st is not None
        # the second pass will cost about what the first did: that much is kept for it
        took = service_models.model_for(st).visits(spec, st, at, seed, max_work=max(left - int(out[4]), 0))
        if took is not None:
            left -= took.work
            work[k, seen] = np.nan_to_num(took.latency_s)  # an unanswered visit: no work (not reported)
            if took.answered is not None:
                unanswered.append((k, np.flatnonzero(seen)[~took.answered]))
            if took.cut is not None:
                cuts.append((order[k].stage, took.cut))
            if took.first_s is not None:
                ok = slice(None) if took.answered is None else took.answered
                first.append(_first_token(order[k].stage, (at - sent_s[seen])[ok], took.first_s[ok]))
    second = loop(*args[:6], work, *args[7:_BUDGET], max(1, left))
    status, lat2 = second[1], second[2]
    for k, idx in unanswered:
        status[idx] = 0  # cut short: `_result` counts it neither answered nor failed
        lat2[k, idx] = np.nan
    spent = int(args[_BUDGET]) - left  # the first pass and the models' simulations
    cut = (cuts[0][0], "; ".join(c for _, c in cuts)) if cuts else None
    return (*second[:4], second[4] + spent, second[5]), cut


def _result(
    spec: Spec, order: list[Step], res_ids: list[str], res_units: list[float], arr: np.ndarray,
    run: np.ndarray, out: Any, rate_rps: float, poisson: bool, seed: int, left: list[float] | None = None,
) -> PipelineSim:  # fmt: skip
    """Percentiles, counts, utilisation and stability of one run (`left`: the units the admitted
    requests had, the rest being refusals' work)."""
    done_in, status_in, lat_in, busy, work_done, end = out
    n = arr.shape[0]
    cut_short = bool((status_in == 0).any())
    if run.shape[0] < n:  # requests a bucket refused are answered at once with a 429/503
        done_at = arr.astype(np.float64).copy()
        status = np.full(n, 4, dtype=np.int64)
        lat = np.full((lat_in.shape[0], n), np.nan)
        done_at[run], status[run], lat[:, run] = done_in, status_in, lat_in
    else:
        done_at, status, lat = done_in, status_in, lat_in
    answered = (status == 1) | (status == 3)
    e2e = 1000 * (done_at[answered] - arr[answered])
    completed = int(answered.sum())
    nfail = int((status == 2).sum())
    nshed = int((status == 4).sum())
    srt = np.sort(e2e)
    span = (float(np.nanmax(done_at)) if completed else 0.0) - float(arr[0])
    # overload shows as latency that keeps growing: compare the last tenth with the middle
    tenth = max(1, completed // 10)
    stable = (
        (
            completed > 0
            and completed + nfail + nshed >= n
            and (float(e2e[-tenth:].mean()) < 2 * float(e2e[4 * tenth : 5 * tenth].mean()) + 1e-9)
        )
        if completed >= 5
        else completed + nfail + nshed >= n and completed > 0
    )  # too few to compare
    end = max(float(end), 1e-12)
    left = left or list(res_units)
    # a resource's busy share counts the refusals' work; saturation is the admitted work's alone
    util = {
        rid: (float(busy[j]) / end + res_units[j] - left[j]) / res_units[j] for j, rid in enumerate(res_ids)
    }
    admitted = [float(busy[j]) / (left[j] * end) for j in range(len(res_ids))]
    # a saturated processor is overload too, whatever the latencies did (timeouts cap them)
    stable = bool(stable) and max(admitted, default=0.0) < 0.995
    stage_out = []
    for k, sp in enumerate(order):
        v = lat[k][~np.isnan(lat[k])] * 1000
        if v.size == 0:
            continue
        v.sort()
        stage_out.append(
            StageSim(
                sp.stage, int(v.size), float(v.mean()), _pct_np(v, 0.5), _pct_np(v, 0.95), _pct_np(v, 0.99)
            )
        )
    return PipelineSim(
        n,
        completed,
        nfail,
        int((status == 3).sum()),
        rate_rps if poisson else (n / max(float(arr[-1] - arr[0]), 1e-12)),
        completed / span if span > 0 else 0.0,
        float(e2e.mean()) if completed else math.nan,
        _pct_np(srt, 0.5),
        _pct_np(srt, 0.95),
        _pct_np(srt, 0.99),
        stable,
        util,
        tuple(stage_out),
        seed,
        nshed,
        int(work_done),
        cut_short,
    )


def _first_token(stage: str, upstream_s: np.ndarray, first_s: np.ndarray) -> FirstToken:
    def pcts(seconds: np.ndarray) -> dict[str, float]:
        ms = np.sort(1000 * seconds)
        return {"p50": _pct_np(ms, 0.5), "p95": _pct_np(ms, 0.95), "p99": _pct_np(ms, 0.99)}

    return FirstToken(
        stage, int(first_s.shape[0]), pcts(upstream_s), pcts(first_s), pcts(upstream_s + first_s)
    )


def _pct_np(sorted_ms: np.ndarray, p: float) -> float:
    n = int(sorted_ms.shape[0])
    if n == 0:
        return math.nan
    return float(sorted_ms[min(n - 1, max(0, int(math.ceil(p * n)) - 1))])
