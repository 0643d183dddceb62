"""The event loop of the whole-pipeline simulation, on plain arrays (see `pipesim` for the model).

Written in the subset of Python that numba compiles; `pipesim_kernel` compiles it (or runs it as
plain Python). `_run` pops events and hands them to its parts, which numba inlines: a resource's
completion (`_on_resource`), a deadline (`_on_timeout`), a finished job (`_finish_job`), a visit's
admission and calls (`_enter`, `_pick`, `_send`), a free server taking work (`_take_work`,
`_start_job`). Events: (time, sequence, kind, a, b) on one binary heap; the sequence number
breaks ties in the order events were scheduled, so a seed fixes the whole run. What a stage's
server does with its queue is its service model's handler (`archkit.perf.service_models`): how a
visit splits into calls, what a free server takes, how long that runs; `_calls`, `_take` and
`_work` dispatch on the step's handler slot to the functions bound to `_hN_*` (`pipesim_kernel.bind`).
"""

from __future__ import annotations

import heapq
import math

import numpy as np

# isort: off
from archkit.perf.pipesim_state import (
    G_HEAD, G_IN, G_LIMIT, G_QUEUE, G_TAIL, G_WLEN, J_CALLS, J_FIRST, J_ITEMS, J_KIND, J_NEXT, J_REP,
    J_RES, J_STEP, P_BUSY, P_N, P_T, P_V, P_VER, Q_FREE, Q_HEAD, Q_LEN, Q_OUT, Q_STEP, Q_TAIL, Q_TIMER,
    R_ATT, R_HELD, R_PEND, R_POS, R_WNEXT, S_BACKOFF, S_BATCH, S_BMULT, S_DELAY, S_FALLBACK, S_GROUP,
    S_HANDLER, S_IPC, S_MAXQ, S_REPS, S_RES, S_RETRIES, S_ROUTING, S_SERVERS, S_TIMEOUT,
    allocate, grow_calls, grow_i, grow_jobs, pools,
)  # fmt: skip

# isort: on
from archkit.perf.service_models import worker_pool as _stub

EV_RES, EV_DONE, EV_TIMER, EV_TIMEOUT, EV_RETRY, EV_NONE = 0, 1, 2, 3, 4, 5
INF = math.inf
Event = tuple[float, int, int, int]  # what a part schedules: (time, kind, a, b)
NO_EVENT = (0.0, EV_NONE, 0, 0)
# numba's on-disk cache keys on this file alone: the built-in handlers live in other modules,
# so a change to their bodies must change this stamp (tests/perf/test_service_models.py
# checks it against their source) or a stale compiled loop would be loaded
HANDLERS_STAMP = "a855aea0c3446db7"
# the loop's parts as named in this module, for `pipesim_kernel` to compile: the state's
# allocation and growth as calls (once a run, or when a pool is full), the rest inlined into `_run`
GROWTH = ("allocate", "pools", "grow_i", "grow_calls", "grow_jobs")
# a digest of `pipesim_state`, whose values the compiled loop embeds (see there; tests check it)
STATE_STAMP = "752663c86a11f5b3"
PARTS = (
    "_calls", "_take", "_work", "_end", "_advance", "_vmin", "_next_done", "_on_resource", "_on_timeout",
    "_finish_job", "_enter", "_pick", "_send", "_take_work", "_start_job",
)  # fmt: skip


# the handler slots (archkit.perf.service_models.MAX_HANDLERS); `bind` fills them, and a slot
# no model uses keeps the worker pool's handler (numba types every branch of the dispatch)
_h0_calls = _h1_calls = _h2_calls = _h3_calls = _stub.calls
_h0_take = _h1_take = _h2_take = _h3_take = _stub.take
_h0_work = _h1_work = _h2_work = _h3_work = _stub.work


def _calls(h: int, k_items: int, per: int) -> tuple[int, int, int]:
    """(calls, items per call, items) of a visit of `k_items` items at a step with handler `h`."""
    if h == 0:
        return _h0_calls(k_items, per)
    if h == 1:
        return _h1_calls(k_items, per)
    if h == 2:
        return _h2_calls(k_items, per)
    return _h3_calls(k_items, per)


def _take(
    h: int,
    head: int,
    c_next: np.ndarray,
    c_items: np.ndarray,
    c_enq: np.ndarray,
    batch: int,
    delay_s: float,
    now: float,
) -> tuple[int, int, int, float]:
    """(last call, calls, items, wait until) a free server of handler `h` takes from its queue."""
    if h == 0:
        return _h0_take(head, c_next, c_items, c_enq, batch, delay_s, now)
    if h == 1:
        return _h1_take(head, c_next, c_items, c_enq, batch, delay_s, now)
    if h == 2:
        return _h2_take(head, c_next, c_items, c_enq, batch, delay_s, now)
    return _h3_take(head, c_next, c_items, c_enq, batch, delay_s, now)


def _work(h: int, s: int, total: int, first: int, batch_s: np.ndarray, c_work: np.ndarray) -> float:
    """Seconds of processor time the work taken runs."""
    if h == 0:
        return _h0_work(s, total, first, batch_s, c_work)  # type: ignore[no-any-return]
    if h == 1:
        return _h1_work(s, total, first, batch_s, c_work)  # type: ignore[no-any-return]
    if h == 2:
        return _h2_work(s, total, first, batch_s, c_work)  # type: ignore[no-any-return]
    return _h3_work(s, total, first, batch_s, c_work)  # type: ignore[no-any-return]


# The parts. numba counts a reference on each array an inlined part takes and drops it at the
# array's last use; last uses in different branches are never paired up, and each atomic count in
# the loop costs more than a part's work (a split that left them took twice the CPU). So each part
# ends on one line naming every array it takes (`a, b = a, b`): all last uses in its one exit,
# where numba's reference-count pruning removes the pairs (docs/benchmarks.md, "Pipeline
# simulation"). No part grows an array: `_run` makes room first, so none is handed back.
def _end(
    i: int, code: int, now: float, rq: np.ndarray, status: np.ndarray, done_at: np.ndarray,
    gs: np.ndarray, todo: np.ndarray, n_todo: int,
) -> int:  # fmt: skip
    """Request i ends with status `code`; its admission places go to the oldest waiting requests."""
    status[i] = code
    done_at[i] = now
    h = rq[R_HELD, i]
    g = 0
    while h != 0:  # `todo` has room for one request per group (the caller reserves it)
        if h & 1:
            gs[G_IN, g] -= 1
            if gs[G_WLEN, g] > 0:
                j = gs[G_HEAD, g]
                gs[G_HEAD, g] = rq[R_WNEXT, j]
                if gs[G_HEAD, g] < 0:
                    gs[G_TAIL, g] = -1
                gs[G_WLEN, g] -= 1
                gs[G_IN, g] += 1
                rq[R_HELD, j] |= 1 << g
                todo[n_todo] = j  # starts the visit it waited for
                n_todo += 1
        h >>= 1
        g += 1
    rq[R_HELD, i] = 0
    rq, status, done_at, gs, todo = rq, status, done_at, gs, todo
    return n_todo


def _advance(r: int, now: float, pf: np.ndarray, pi: np.ndarray, units: np.ndarray) -> None:
    """Resource r's virtual clock and busy time up to `now`."""
    k = pi[P_N, r]
    if k > 0:
        rate = units[r] / k if k > units[r] else 1.0
        pf[P_V, r] += (now - pf[P_T, r]) * rate
        pf[P_BUSY, r] += (now - pf[P_T, r]) * min(float(k), units[r])
    pf[P_T, r] = now
    pf, pi, units = pf, pi, units


def _vmin(r: int, act: np.ndarray, n_act: int, jobs: np.ndarray, j_vf: np.ndarray) -> float:
    """The earliest virtual finish time of the jobs active on resource r."""
    vmin = INF
    for x in range(n_act):
        jid = act[x]
        if jobs[J_RES, jid] == r and j_vf[jid] < vmin:
            vmin = j_vf[jid]
    act, jobs, j_vf = act, jobs, j_vf
    return vmin


def _next_done(
    r: int, now: float, pf: np.ndarray, pi: np.ndarray, units: np.ndarray, act: np.ndarray, n_act: int,
    jobs: np.ndarray, j_vf: np.ndarray,
) -> Event:  # fmt: skip
    """Resource r's next completion (it runs a job)."""
    vmin = _vmin(r, act, n_act, jobs, j_vf)
    rate = units[r] / pi[P_N, r] if pi[P_N, r] > units[r] else 1.0
    ev = (now + max(0.0, vmin - pf[P_V, r]) / rate, EV_RES, r, pi[P_VER, r])
    pf, pi, units, act, jobs, j_vf = pf, pi, units, act, jobs, j_vf
    return ev


def _on_resource(
    r: int, now: float, pf: np.ndarray, pi: np.ndarray, units: np.ndarray, act: np.ndarray, n_act: int,
    jobs: np.ndarray, j_vf: np.ndarray, fin: np.ndarray, scanned: int,
) -> tuple[int, int, int, Event]:  # fmt: skip
    """Resource r's completion: its finished jobs into `fin` (room for every active one), the next one."""
    _advance(r, now, pf, pi, units)
    scanned += n_act  # the scans are work too: the budget counts them (issue 28)
    vmin = _vmin(r, act, n_act, jobs, j_vf)
    n_fin = 0
    x = 0
    while x < n_act:
        jid = act[x]
        if jobs[J_RES, jid] == r and j_vf[jid] <= max(vmin, pf[P_V, r]) + 1e-12:
            fin[n_fin] = jid
            n_fin += 1
            n_act -= 1
            act[x] = act[n_act]
            pi[P_N, r] -= 1
        else:
            x += 1
    pi[P_VER, r] += 1
    ev = NO_EVENT
    if pi[P_N, r] > 0:
        ev = _next_done(r, now, pf, pi, units, act, n_act, jobs, j_vf)
    pf, pi, units, act, jobs, j_vf, fin = pf, pi, units, act, jobs, j_vf, fin
    return n_act, n_fin, scanned, ev


def _on_timeout(
    i: int, b: int, now: float, rq: np.ndarray, status: np.ndarray, done_at: np.ndarray,
    route_of: np.ndarray, route_stage: np.ndarray, sti: np.ndarray, stf: np.ndarray, gs: np.ndarray,
    todo: np.ndarray,
) -> tuple[int, Event]:  # fmt: skip
    """Attempt b of request i's visit ran out of time: retry after a backoff, or fail the request."""
    n_todo = 0
    ev = NO_EVENT
    if status[i] == 0 and rq[R_ATT, i] == b:
        s = route_stage[route_of[i], rq[R_POS, i]]
        if b < sti[S_RETRIES, s]:
            rq[R_ATT, i] = b + 1
            ev = (now + stf[S_BACKOFF, s] * stf[S_BMULT, s] ** b, EV_RETRY, i, b + 1)
        else:
            n_todo = _end(i, 3 if sti[S_FALLBACK, s] else 2, now, rq, status, done_at, gs, todo, n_todo)
    rq, status, done_at, route_of, route_stage, sti, stf, gs, todo = (
        rq, status, done_at, route_of, route_stage, sti, stf, gs, todo
    )  # fmt: skip
    return n_todo, ev


def _finish_job(
    jid: int, now: float, jobs: np.ndarray, over_s: np.ndarray, st_off: np.ndarray, sti: np.ndarray,
    qs: np.ndarray, dq: np.ndarray, n_dq: int, c_req: np.ndarray, c_att: np.ndarray, c_next: np.ndarray,
    c_free: int, rq: np.ndarray, status: np.ndarray, lat: np.ndarray, vstart: np.ndarray,
    todo: np.ndarray, n_todo: int, j_free: int,
) -> tuple[int, int, int, int, Event]:  # fmt: skip
    """Job jid's work is done: its host-side overhead follows, or its server and calls are freed and
    the requests with no call left move on (`todo` has room for each of its calls, `dq` for one)."""
    s = jobs[J_STEP, jid]
    sq = st_off[s] + jobs[J_REP, jid]
    nb = min(jobs[J_ITEMS, jid], over_s.shape[1] - 1)
    ev = NO_EVENT
    if jobs[J_KIND, jid] == 1 and over_s[s, nb] > 0:
        jobs[J_KIND, jid] = 2  # host-side overhead: the instance stays busy, the processor does not
        ev = (now + over_s[s, nb], EV_DONE, jid, 0)
    else:
        qs[Q_FREE, sq] += 1
        if sti[S_SERVERS, s] > 0:  # an unbounded pool frees nobody waiting
            dq[n_dq] = sq
            n_dq += 1
        c = jobs[J_FIRST, jid]
        while c >= 0:
            nxt = c_next[c]
            qs[Q_OUT, sq] -= 1
            i = c_req[c]
            if status[i] == 0 and rq[R_ATT, i] == c_att[c]:
                rq[R_PEND, i] -= 1
                if rq[R_PEND, i] == 0:
                    lat[s, i] = now - vstart[i]
                    rq[R_POS, i] += 1
                    rq[R_ATT, i] = 0
                    todo[n_todo] = i
                    n_todo += 1
            c_next[c] = c_free
            c_req[c] = -1
            c_free = c
            c = nxt
        jobs[J_NEXT, jid] = j_free
        j_free = jid
    jobs, over_s, st_off, sti, qs, dq, c_req, c_att, c_next, rq, status, lat, vstart, todo = (
        jobs, over_s, st_off, sti, qs, dq, c_req, c_att, c_next, rq, status, lat, vstart, todo
    )  # fmt: skip
    return n_dq, n_todo, c_free, j_free, ev


def _enter(
    i: int, now: float, rq: np.ndarray, status: np.ndarray, done_at: np.ndarray, vstart: np.ndarray,
    route_of: np.ndarray, route_len: np.ndarray, route_stage: np.ndarray, sti: np.ndarray,
    stf: np.ndarray, gs: np.ndarray, todo: np.ndarray, n_todo: int,
) -> tuple[int, int, Event]:  # fmt: skip
    """Request i's next visit: (its step, or -1: answered, waiting for an admission place or refused)."""
    rt = route_of[i]
    s = -1
    ev = NO_EVENT
    if rq[R_POS, i] >= route_len[rt]:
        n_todo = _end(i, 1, now, rq, status, done_at, gs, todo, n_todo)
    else:
        s = route_stage[rt, rq[R_POS, i]]
        g = sti[S_GROUP, s]
        if g >= 0 and (rq[R_HELD, i] >> g) & 1 == 0:  # the first visit to a limited service
            if gs[G_IN, g] < gs[G_LIMIT, g]:
                gs[G_IN, g] += 1
                rq[R_HELD, i] |= 1 << g
            elif gs[G_WLEN, g] < gs[G_QUEUE, g]:
                if gs[G_TAIL, g] >= 0:
                    rq[R_WNEXT, gs[G_TAIL, g]] = i
                else:
                    gs[G_HEAD, g] = i
                gs[G_TAIL, g] = i
                rq[R_WNEXT, i] = -1
                gs[G_WLEN, g] += 1
                s = -1  # waits for a place (`_end` of another request starts the visit)
            else:
                n_todo = _end(i, 4, now, rq, status, done_at, gs, todo, n_todo)
                s = -1
        if s >= 0:
            vstart[i] = now
            if stf[S_TIMEOUT, s] > 0:
                ev = (now + stf[S_TIMEOUT, s], EV_TIMEOUT, i, rq[R_ATT, i])
    rq, status, done_at, vstart, route_of, route_len, route_stage, sti, stf, gs, todo = (
        rq, status, done_at, vstart, route_of, route_len, route_stage, sti, stf, gs, todo
    )  # fmt: skip
    return s, n_todo, ev


def _pick(
    s: int, sti: np.ndarray, st_off: np.ndarray, rr: np.ndarray, qs: np.ndarray, uniform: np.ndarray,
    u_i: int, scanned: int,
) -> tuple[int, int, int]:  # fmt: skip
    """The replica of step s a call goes to, by the step's routing."""
    reps = sti[S_REPS, s]
    rep = 0
    if reps > 1:
        if sti[S_ROUTING, s] == 1:
            rr[s] = (rr[s] + 1) % reps
            rep = rr[s]
        elif sti[S_ROUTING, s] == 2:
            best = qs[Q_OUT, st_off[s]]
            scanned += reps >> 4  # a contiguous scan: ~16x cheaper per replica
            for y in range(1, reps):
                if qs[Q_OUT, st_off[s] + y] < best:
                    best = qs[Q_OUT, st_off[s] + y]
                    rep = y
        else:
            rep = int(uniform[u_i % uniform.shape[0]] * reps)
            u_i += 1
    sti, st_off, rr, qs, uniform = sti, st_off, rr, qs, uniform
    return rep, u_i, scanned


def _send(
    i: int, s: int, ncalls: int, per: int, k_items: int, now: float, rq: np.ndarray, sti: np.ndarray,
    st_off: np.ndarray, rr: np.ndarray, qs: np.ndarray, uniform: np.ndarray, u_i: int, scanned: int,
    work: np.ndarray, c_req: np.ndarray, c_att: np.ndarray, c_items: np.ndarray, c_work: np.ndarray,
    c_enq: np.ndarray, c_next: np.ndarray, c_free: int, c_top: int, dq: np.ndarray, n_dq: int,
) -> tuple[bool, int, int, int, int, int]:  # fmt: skip
    """Request i's visit to step s as `ncalls` calls on replica queues (the pool and `dq` have room
    for each); (refused: a replica's queue was full, ...)."""
    rq[R_PEND, i] = ncalls
    refused = False
    for cc in range(ncalls):
        size = per if cc < ncalls - 1 else k_items - per * (ncalls - 1)
        rep, u_i, scanned = _pick(s, sti, st_off, rr, qs, uniform, u_i, scanned)
        sq = st_off[s] + rep
        if sti[S_MAXQ, s] > 0 and qs[Q_LEN, sq] >= sti[S_MAXQ, s]:
            refused = True
            break
        if c_free < 0:  # a call slot
            c = c_top
            c_top += 1
        else:
            c = c_free
            c_free = c_next[c]
        c_req[c] = i
        c_att[c] = rq[R_ATT, i]
        c_items[c] = size
        c_work[c] = work[s, i]
        c_enq[c] = now
        c_next[c] = -1
        if qs[Q_TAIL, sq] >= 0:  # enqueue on the replica
            c_next[qs[Q_TAIL, sq]] = c
        else:
            qs[Q_HEAD, sq] = c
        qs[Q_TAIL, sq] = c
        qs[Q_LEN, sq] += 1
        qs[Q_OUT, sq] += 1
        dq[n_dq] = sq
        n_dq += 1
    rq, sti, st_off, rr, qs, uniform, work, c_req, c_att, c_items, c_work, c_enq, c_next, dq = (
        rq, sti, st_off, rr, qs, uniform, work, c_req, c_att, c_items, c_work, c_enq, c_next, dq
    )  # fmt: skip
    return refused, c_free, c_top, n_dq, u_i, scanned


def _take_work(
    sq: int, s: int, now: float, sti: np.ndarray, stf: np.ndarray, qs: np.ndarray, c_next: np.ndarray,
    c_items: np.ndarray, c_enq: np.ndarray,
) -> tuple[int, int, int, Event]:  # fmt: skip
    """A free server of replica queue sq takes work: (first call, calls, items), first -1 while its
    handler holds the work back (a batch still filling: a timer wakes the queue)."""
    last, cnt, total, wait_until = _take(
        sti[S_HANDLER, s], qs[Q_HEAD, sq], c_next, c_items, c_enq, sti[S_BATCH, s], stf[S_DELAY, s], now
    )
    first = -1
    ev = NO_EVENT
    if wait_until > now:
        if qs[Q_TIMER, sq] == 0:
            qs[Q_TIMER, sq] = 1
            ev = (wait_until, EV_TIMER, sq, 0)
    else:
        first = qs[Q_HEAD, sq]
        qs[Q_HEAD, sq] = c_next[last]
        if qs[Q_HEAD, sq] < 0:
            qs[Q_TAIL, sq] = -1
        c_next[last] = -1
        qs[Q_LEN, sq] -= cnt
        qs[Q_FREE, sq] -= 1
    sti, stf, qs, c_next, c_items, c_enq = sti, stf, qs, c_next, c_items, c_enq
    return first, cnt, total, ev


def _start_job(
    sq: int, s: int, first: int, cnt: int, total: int, now: float, sti: np.ndarray, st_off: np.ndarray,
    jobs: np.ndarray, j_vf: np.ndarray, j_free: int, j_top: int, batch_s: np.ndarray,
    c_work: np.ndarray, pf: np.ndarray, pi: np.ndarray, units: np.ndarray, act: np.ndarray, n_act: int,
    scanned: int,
) -> tuple[int, int, int, int, Event]:  # fmt: skip
    """A job of the calls taken (the job pool and `act` have room for one more)."""
    if j_free < 0:
        jid = j_top
        j_top += 1
    else:
        jid = j_free
        j_free = jobs[J_NEXT, jid]
    jobs[J_KIND, jid] = 1
    jobs[J_STEP, jid] = s
    jobs[J_REP, jid] = sq - st_off[s]
    jobs[J_FIRST, jid] = first
    jobs[J_ITEMS, jid] = total
    jobs[J_CALLS, jid] = cnt
    r = sti[S_RES, s]
    jobs[J_RES, jid] = r
    w = _work(sti[S_HANDLER, s], s, total, first, batch_s, c_work)
    if r < 0:
        ev = (now + w, EV_DONE, jid, 0)
    else:
        _advance(r, now, pf, pi, units)
        pi[P_N, r] += 1
        j_vf[jid] = pf[P_V, r] + w
        act[n_act] = jid
        n_act += 1
        pi[P_VER, r] += 1
        scanned += n_act
        ev = _next_done(r, now, pf, pi, units, act, n_act, jobs, j_vf)
    sti, st_off, jobs, j_vf, batch_s, c_work, pf, pi, units, act = (
        sti, st_off, jobs, j_vf, batch_s, c_work, pf, pi, units, act
    )  # fmt: skip
    return n_act, j_free, j_top, scanned, ev


# One event (a heap pop, a visit or a dispatch) costs about as much as looking at 64 active
# jobs in processor sharing's scans (scattered reads, ~10 ns each) or 1,024 replicas in
# least-request routing's (one contiguous array): measured here on rag-chat (~120 jobs active
# at once) and the reference spec with 5,000 least-request replicas. The budget counts work in
# events, so a scan of n jobs weighs n/64 of one.
SCAN_PER_EVENT = 64


def _run(
    arr: np.ndarray,  # arrival times (s), sorted
    route_of: np.ndarray,  # route index per request
    route_len: np.ndarray,
    route_stage: np.ndarray,  # [route, position] -> step index
    sti: np.ndarray,  # [S_*, step] the steps' integer parameters (`pipesim_state`)
    stf: np.ndarray,  # [S_*, step] their times (s) and backoff multiplier
    st_off: np.ndarray,  # first replica-queue index of each step
    g_limit: np.ndarray,  # per admission group: requests in flight at most
    g_queue: np.ndarray,  # per admission group: requests that may wait for a place
    batch_s: np.ndarray,  # [step, n] processor time of a batch of n items
    over_s: np.ndarray,  # [step, n] host-side overhead after it
    work: np.ndarray,  # [step, request] work of a worker visit (s)
    items: np.ndarray,  # [step, request] items of a visit
    units: np.ndarray,  # cores or GPUs per resource
    uniform: np.ndarray,  # a pool of U(0,1) draws for random routing
    max_events: int,  # a budget of work: events plus the jobs and replicas each one scans
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, float]:
    n = arr.shape[0]
    n_res = units.shape[0]
    n_g = g_limit.shape[0]
    rq, status, vstart, done_at, lat, gs, pf, pi, qs, rr = allocate(n, sti, st_off, g_limit, g_queue, n_res)
    # `todo` holds requests whose current visit must start now (avoids recursion), `fin` finished
    # jobs, `dq` queues to dispatch, `act` jobs on a resource: arrays reused across events
    # (allocation per event costs more than the work), grown here before a part may need more
    todo, fin, dq, act, c_req, c_att, c_items, c_work, c_enq, c_next, jobs, j_vf = pools()
    n_act = 0
    c_free = -1
    c_top = 0
    j_free = -1
    j_top = 0
    # the parts hand back the event they schedule (at most one each): pushed here, since a call
    # that may raise inside a part keeps numba from pruning the part's reference counts
    heap = [(INF, 0, EV_NONE, 0, 0)]
    seq = 0
    now = 0.0
    events = 0
    scanned = 0  # jobs and replicas looked at; SCAN_PER_EVENT of them cost about one event
    ai = 0
    u_i = 0
    while ai < n or heap[0][0] < INF:
        events += 1
        if events + scanned // SCAN_PER_EVENT > max_events:
            break
        if ai < n and arr[ai] <= heap[0][0]:  # a fresh request: enter its first stage
            now, kind, a, b = arr[ai], EV_RETRY, ai, -1
            ai += 1
        else:
            top = heapq.heappop(heap)
            now, kind, a, b = top[0], top[2], top[3], top[4]
        n_todo = n_fin = n_dq = 0
        ev = NO_EVENT
        if kind == EV_RES:
            if b != pi[P_VER, a]:
                continue
            if fin.shape[0] < n_act:
                fin = grow_i(fin, n_act)
            n_act, n_fin, scanned, ev = _on_resource(
                a, now, pf, pi, units, act, n_act, jobs, j_vf, fin, scanned
            )
        elif kind == EV_DONE:
            fin[0] = a
            n_fin = 1
        elif kind == EV_TIMER:
            qs[Q_TIMER, a] = 0
            dq[0] = a
            n_dq = 1
        elif kind == EV_TIMEOUT:
            if todo.shape[0] < n_g:
                todo = grow_i(todo, n_g)
            n_todo, ev = _on_timeout(
                a, b, now, rq, status, done_at, route_of, route_stage, sti, stf, gs, todo
            )
        elif kind == EV_RETRY and (b < 0 or (status[a] == 0 and rq[R_ATT, a] == b)):
            todo[0] = a
            n_todo = 1
        if ev[1] != EV_NONE:
            seq += 1
            heapq.heappush(heap, (ev[0], seq, ev[1], ev[2], ev[3]))
        # ---- finished jobs, then requests to advance and queues to dispatch
        for f_i in range(n_fin):
            jid = fin[f_i]
            if todo.shape[0] < n_todo + jobs[J_CALLS, jid]:
                todo = grow_i(todo, n_todo + jobs[J_CALLS, jid])
            if dq.shape[0] < n_dq + 1:
                dq = grow_i(dq, n_dq + 1)
            n_dq, n_todo, c_free, j_free, ev = _finish_job(
                jid, now, jobs, over_s, st_off, sti, qs, dq, n_dq, c_req, c_att, c_next, c_free, rq,
                status, lat, vstart, todo, n_todo, j_free,
            )  # fmt: skip
            if ev[1] != EV_NONE:
                seq += 1
                heapq.heappush(heap, (ev[0], seq, ev[1], ev[2], ev[3]))
        t_i = 0
        while t_i < n_todo or n_dq > 0:
            if t_i < n_todo:  # ---- start a visit: its calls on replica queues
                i = todo[t_i]
                t_i += 1
                if todo.shape[0] < n_todo + n_g:
                    todo = grow_i(todo, n_todo + n_g)
                s, n_todo, ev = _enter(
                    i, now, rq, status, done_at, vstart, route_of, route_len, route_stage, sti, stf, gs,
                    todo, n_todo,
                )  # fmt: skip
                if ev[1] != EV_NONE:
                    seq += 1
                    heapq.heappush(heap, (ev[0], seq, ev[1], ev[2], ev[3]))
                if s < 0:
                    continue
                ncalls, per, k_items = _calls(sti[S_HANDLER, s], items[s, i], sti[S_IPC, s])
                if dq.shape[0] < n_dq + ncalls:
                    dq = grow_i(dq, n_dq + ncalls)
                if c_req.shape[0] < c_top + ncalls:
                    c_req, c_att, c_items, c_work, c_enq, c_next = grow_calls(
                        c_req, c_att, c_items, c_work, c_enq, c_next, c_top + ncalls
                    )
                refused, c_free, c_top, n_dq, u_i, scanned = _send(
                    i, s, ncalls, per, k_items, now, rq, sti, st_off, rr, qs, uniform, u_i, scanned, work,
                    c_req, c_att, c_items, c_work, c_enq, c_next, c_free, c_top, dq, n_dq,
                )  # fmt: skip
                if refused:
                    code = 3 if sti[S_FALLBACK, s] else 2
                    n_todo = _end(i, code, now, rq, status, done_at, gs, todo, n_todo)
                continue
            # ---- dispatch one replica queue: free servers take work
            n_dq -= 1
            sq = dq[n_dq]
            s = qs[Q_STEP, sq]
            while qs[Q_FREE, sq] > 0 and qs[Q_HEAD, sq] >= 0:
                first, cnt, total, ev = _take_work(sq, s, now, sti, stf, qs, c_next, c_items, c_enq)
                if first >= 0:
                    if j_free < 0 and j_top >= jobs.shape[1]:
                        jobs, j_vf = grow_jobs(jobs, j_vf)
                    if n_act >= act.shape[0]:
                        act = grow_i(act, n_act + 1)
                    n_act, j_free, j_top, scanned, ev = _start_job(
                        sq, s, first, cnt, total, now, sti, st_off, jobs, j_vf, j_free, j_top, batch_s,
                        c_work, pf, pi, units, act, n_act, scanned,
                    )  # fmt: skip
                if ev[1] != EV_NONE:
                    seq += 1
                    heapq.heappush(heap, (ev[0], seq, ev[1], ev[2], ev[3]))
                if first < 0:
                    break
    for r in range(n_res):  # the busy time up to the end
        _advance(r, now, pf, pi, units)
    return done_at, status, lat, pf[P_BUSY], events + scanned // SCAN_PER_EVENT, now  # the work done
