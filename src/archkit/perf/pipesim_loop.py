"""The event loop of the whole-pipeline simulation and its parts, on plain arrays.

Written in the subset of Python that numba compiles; `pipesim_kernel` compiles it (or runs it
as plain Python). Each part (an event kind, a visit's calls, a dispatch, processor sharing) is
inlined into the loop at numba's IR level (`inline="always"`), so it costs no call.
Events: (time, sequence, kind, a, b) on one binary heap; the sequence number breaks ties in
the order events were scheduled, so a seed fixes the whole run.
What a stage's server does with its queue is its service model's handler
(`archkit.perf.service_models`): how a visit splits into calls, what a free server takes,
how long that runs. The loop reaches them through `_calls`, `_take` and `_work`, which
dispatch on the step's handler slot to the functions bound to `_hN_*` (`pipesim_kernel.bind`).
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from archkit.perf import pipesim_kernel_state as state
from archkit.perf.service_models import worker_pool as _stub

EV_RES, EV_DONE, EV_TIMER, EV_TIMEOUT, EV_RETRY, EV_NONE = 0, 1, 2, 3, 4, 5
INF = math.inf
# numba's on-disk cache keys on this file alone: the built-in handlers live in other modules,
# so a change to their bodies must change this stamp (tests/perf/test_service_models.py
# checks it against their source) or a stale compiled loop would be loaded; likewise the state's
# functions (`pipesim_kernel_state`, tests/perf/test_pipesim_kernel.py)
HANDLERS_STAMP = "a855aea0c3446db7"
STATE_STAMP = "c924703593e668b6"
# One event (a heap pop, a visit or a dispatch) costs about as much as looking at 64 active
# jobs in processor sharing's scans (scattered reads, ~10 ns each) or 1,024 replicas in
# least-request routing's (one contiguous array): measured here on rag-chat (~120 jobs active
# at once) and the reference spec with 5,000 least-request replicas. The budget counts work in
# events, so a scan of n jobs weighs n/64 of one.
SCAN_PER_EVENT = 64
Heap = list[tuple[float, int, int, int, int]]  # events: (time, sequence, kind, a, b)
# the parts numba inlines into the loop; what it calls (`pipesim_kernel_state`: the state's
# allocation, once a run; pool growth and `release`, rare) stays calls
INLINED = (
    "_calls", "_take", "_work", "_ps_advance", "_earliest", "_ps_next", "_on_resource", "_end", "_admit",
    "_replica", "_new_call", "_send_calls", "_new_job", "_occupy", "_take_calls", "_start_job", "_finish_jobs",
    "_on_timeout",
)  # fmt: skip
CALLED = (
    "grow_i", "grow_f", "release", "requests", "admission", "queues", "call_pool", "job_pool", "resources",
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


# ---- the parts of the loop, one concern each


def _end(
    i: int, code: int, now: float, status: np.ndarray, done_at: np.ndarray, held: np.ndarray, g_in: np.ndarray,
    g_head: np.ndarray, g_tail: np.ndarray, g_wlen: np.ndarray, w_next: np.ndarray, todo: np.ndarray, n_todo: int,
) -> tuple[np.ndarray, int]:  # fmt: skip
    """Request i ends with status `code`; its admission places go to requests waiting for them."""
    status[i] = code
    done_at[i] = now
    if held[i] != 0:
        todo, n_todo = state.release(i, held, g_in, g_head, g_tail, g_wlen, w_next, todo, n_todo)
    return todo, n_todo


def _admit(
    i: int, g: int, held: np.ndarray, g_in: np.ndarray, g_head: np.ndarray, g_tail: np.ndarray,
    g_wlen: np.ndarray, w_next: np.ndarray, g_limit: np.ndarray, g_queue: np.ndarray,
) -> int:  # fmt: skip
    """Request i's visit to a step of admission group g (-1: none): 0 goes ahead, 1 waits for a place
    (`_release` starts it), 2 is refused."""
    if g < 0 or (held[i] >> g) & 1 != 0:  # only the first visit to a limited service asks
        return 0
    if g_in[g] < g_limit[g]:
        g_in[g] += 1
        held[i] |= 1 << g
        return 0
    if g_wlen[g] < g_queue[g]:
        if g_tail[g] >= 0:
            w_next[g_tail[g]] = i
        else:
            g_head[g] = i
        g_tail[g] = i
        w_next[i] = -1
        g_wlen[g] += 1
        return 1
    return 2


def _on_timeout(
    i: int, b: int, s: int, now: float, heap: Heap, seq: int, st_retries: np.ndarray, st_backoff: np.ndarray,
    st_bmult: np.ndarray, st_fallback: np.ndarray, attempt: np.ndarray, status: np.ndarray, done_at: np.ndarray,
    held: np.ndarray, g_in: np.ndarray, g_head: np.ndarray, g_tail: np.ndarray, g_wlen: np.ndarray,
    w_next: np.ndarray, todo: np.ndarray, n_todo: int,
) -> tuple[int, np.ndarray, int]:  # fmt: skip
    """Attempt b of request i's visit to step s timed out: retry after the backoff, or fail (its
    fallback answers degraded). (seq, todo, n_todo)."""
    if b < st_retries[s]:
        attempt[i] = b + 1
        seq += 1
        heapq.heappush(heap, (now + st_backoff[s] * st_bmult[s] ** b, seq, EV_RETRY, i, b + 1))
        return seq, todo, n_todo
    todo, n_todo = _end(i, 3 if st_fallback[s] else 2, now, status, done_at, held, g_in, g_head, g_tail,
                        g_wlen, w_next, todo, n_todo)  # fmt: skip
    return seq, todo, n_todo


def _ps_advance(
    r: int, now: float, units: np.ndarray, r_v: np.ndarray, r_t: np.ndarray, r_n: np.ndarray, busy: np.ndarray
) -> None:
    """Bring resource r's virtual clock (processor sharing among its jobs) and busy time to `now`."""
    k = r_n[r]
    if k > 0:
        rate = units[r] / k if k > units[r] else 1.0
        r_v[r] += (now - r_t[r]) * rate
        busy[r] += (now - r_t[r]) * min(float(k), units[r])
    r_t[r] = now


def _earliest(r: int, act: np.ndarray, n_act: int, j_res: np.ndarray, j_vf: np.ndarray) -> float:
    """The earliest virtual finish time among resource r's active jobs."""
    vmin = INF
    for x in range(n_act):
        jid = act[x]
        if j_res[jid] == r and j_vf[jid] < vmin:
            vmin = j_vf[jid]
    return vmin


def _ps_next(
    heap: Heap, seq: int, now: float, r: int, vmin: float, units: np.ndarray, r_v: np.ndarray, r_n: np.ndarray,
    r_ver: np.ndarray,
) -> int:  # fmt: skip
    """Schedule resource r's next completion, stamped with its version (a later change voids it)."""
    rate = units[r] / r_n[r] if r_n[r] > units[r] else 1.0
    seq += 1
    heapq.heappush(heap, (now + max(0.0, vmin - r_v[r]) / rate, seq, EV_RES, r, r_ver[r]))
    return seq


def _on_resource(
    r: int, now: float, heap: Heap, seq: int, units: np.ndarray, r_v: np.ndarray, r_t: np.ndarray,
    r_n: np.ndarray, r_ver: np.ndarray, busy: np.ndarray, act: np.ndarray, n_act: int, j_res: np.ndarray,
    j_vf: np.ndarray, fin: np.ndarray, n_fin: int,
) -> tuple[np.ndarray, int, int, int]:  # fmt: skip
    """Resource r's earliest job is due: every job due by now joins `fin`. (fin, n_fin, n_act, seq)."""
    _ps_advance(r, now, units, r_v, r_t, r_n, busy)
    vmin = _earliest(r, act, n_act, j_res, j_vf)
    x = 0
    while x < n_act:
        jid = act[x]
        if j_res[jid] == r and j_vf[jid] <= max(vmin, r_v[r]) + 1e-12:
            if n_fin >= fin.shape[0]:
                fin = state.grow_i(fin)
            fin[n_fin] = jid
            n_fin += 1
            n_act -= 1
            act[x] = act[n_act]
            r_n[r] -= 1
        else:
            x += 1
    r_ver[r] += 1
    if r_n[r] > 0:
        seq = _ps_next(heap, seq, now, r, _earliest(r, act, n_act, j_res, j_vf), units, r_v, r_n, r_ver)
    return fin, n_fin, n_act, seq


def _finish_jobs(
    fin: np.ndarray, n_fin: int, now: float, heap: Heap, seq: int, over_s: np.ndarray, st_servers: np.ndarray, j_kind: np.ndarray, j_step: np.ndarray, j_q: np.ndarray, j_first: np.ndarray,
    j_items: np.ndarray, j_next: np.ndarray, j_free: int, q_free: np.ndarray, q_out: np.ndarray, dq: np.ndarray,
    n_dq: int, c_req: np.ndarray, c_att: np.ndarray, c_next: np.ndarray, c_free: int, status: np.ndarray,
    attempt: np.ndarray, pending: np.ndarray, pos: np.ndarray, vstart: np.ndarray, lat: np.ndarray,
    todo: np.ndarray, n_todo: int,
) -> tuple[int, int, np.ndarray, int, int, np.ndarray, int]:  # fmt: skip
    """Finished jobs: a job with host-side overhead after its work holds its instance for it; else
    its instance is free (its queue is dispatched) and its calls are answered, a visit whose calls
    are all answered moves its request on. (seq, j_free, dq, n_dq, c_free, todo, n_todo)."""
    for f_i in range(n_fin):
        jid = fin[f_i]
        s = j_step[jid]
        sq = j_q[jid]
        over = over_s[s, min(j_items[jid], over_s.shape[1] - 1)]
        if j_kind[jid] == 1 and over > 0:
            j_kind[jid] = 2  # host-side overhead: the instance stays busy, the processor does not
            seq += 1
            heapq.heappush(heap, (now + over, seq, EV_DONE, jid, 0))
            continue
        q_free[sq] += 1
        if st_servers[s] > 0:  # an unbounded pool frees nobody waiting
            if n_dq >= dq.shape[0]:
                dq = state.grow_i(dq)
            dq[n_dq] = sq
            n_dq += 1
        c = j_first[jid]
        while c >= 0:
            nxt = c_next[c]
            q_out[sq] -= 1
            i = c_req[c]
            if status[i] == 0 and attempt[i] == c_att[c]:
                pending[i] -= 1
                if pending[i] == 0:
                    lat[s, i] = now - vstart[i]
                    pos[i] += 1
                    attempt[i] = 0
                    if n_todo >= todo.shape[0]:
                        todo = state.grow_i(todo)
                    todo[n_todo] = i
                    n_todo += 1
            c_next[c] = c_free
            c_req[c] = -1
            c_free = c
            c = nxt
        j_next[jid] = j_free
        j_free = jid
    return seq, j_free, dq, n_dq, c_free, todo, n_todo


def _replica(
    s: int, st_reps: np.ndarray, st_routing: np.ndarray, st_off: np.ndarray, rr: np.ndarray, q_out: np.ndarray,
    uniform: np.ndarray, u_i: int,
) -> tuple[int, int, int]:  # fmt: skip
    """The replica a call to step s goes to (random, round-robin or least-request). (replica,
    draws used, replicas scanned weighed as jobs)."""
    reps = st_reps[s]
    rep = 0
    looked = 0
    if reps > 1:
        if st_routing[s] == 1:
            rr[s] = (rr[s] + 1) % reps
            rep = rr[s]
        elif st_routing[s] == 2:
            best = q_out[st_off[s]]
            looked = reps >> 4  # a contiguous scan: ~16x cheaper per replica
            for y in range(1, reps):
                if q_out[st_off[s] + y] < best:
                    best = q_out[st_off[s] + y]
                    rep = y
        else:
            rep = int(uniform[u_i % uniform.shape[0]] * reps)
            u_i += 1
    return rep, u_i, looked


def _new_call(
    c_free: int, c_top: int, c_req: np.ndarray, c_att: np.ndarray, c_items: np.ndarray, c_next: np.ndarray,
    c_work: np.ndarray, c_enq: np.ndarray,
) -> tuple[int, int, int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """A call slot from the free list, else a new one (the pool doubles when full).
    (c, c_free, c_top, and the pool's arrays)."""
    if c_free >= 0:
        return c_free, c_next[c_free], c_top, c_req, c_att, c_items, c_next, c_work, c_enq
    if c_top >= c_req.shape[0]:
        c_req = state.grow_i(c_req)
        c_att = state.grow_i(c_att)
        c_items = state.grow_i(c_items)
        c_next = state.grow_i(c_next)
        c_work = state.grow_f(c_work)
        c_enq = state.grow_f(c_enq)
    return c_top, c_free, c_top + 1, c_req, c_att, c_items, c_next, c_work, c_enq


def _send_calls(
    i: int, s: int, now: float, items: np.ndarray, work: np.ndarray, st_handler: np.ndarray, st_ipc: np.ndarray,
    st_maxq: np.ndarray, st_reps: np.ndarray, st_routing: np.ndarray, st_off: np.ndarray, rr: np.ndarray,
    uniform: np.ndarray, u_i: int, attempt: np.ndarray, pending: np.ndarray, q_head: np.ndarray,
    q_tail: np.ndarray, q_len: np.ndarray, q_out: np.ndarray, dq: np.ndarray, n_dq: int, c_free: int, c_top: int,
    c_req: np.ndarray, c_att: np.ndarray, c_items: np.ndarray, c_next: np.ndarray, c_work: np.ndarray,
    c_enq: np.ndarray,
) -> tuple[bool, int, int, np.ndarray, int, int, int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """Request i's visit to step s: its calls, each to a replica's queue (the queue to dispatch),
    or False when a queue is full. (sent, u_i, looked, dq, n_dq, c_free, c_top, the call pool)."""
    ncalls, per, k_items = _calls(st_handler[s], items[s, i], st_ipc[s])
    pending[i] = ncalls
    looked = 0
    for cc in range(ncalls):
        size = per if cc < ncalls - 1 else k_items - per * (ncalls - 1)
        rep, u_i, scan = _replica(s, st_reps, st_routing, st_off, rr, q_out, uniform, u_i)
        looked += scan
        sq = st_off[s] + rep
        if st_maxq[s] > 0 and q_len[sq] >= st_maxq[s]:
            return False, u_i, looked, dq, n_dq, c_free, c_top, c_req, c_att, c_items, c_next, c_work, c_enq
        c, c_free, c_top, c_req, c_att, c_items, c_next, c_work, c_enq = _new_call(
            c_free, c_top, c_req, c_att, c_items, c_next, c_work, c_enq
        )
        c_req[c] = i
        c_att[c] = attempt[i]
        c_items[c] = size
        c_work[c] = work[s, i]
        c_enq[c] = now
        c_next[c] = -1
        if q_tail[sq] >= 0:  # enqueue on the replica
            c_next[q_tail[sq]] = c
        else:
            q_head[sq] = c
        q_tail[sq] = c
        q_len[sq] += 1
        q_out[sq] += 1
        if n_dq >= dq.shape[0]:
            dq = state.grow_i(dq)
        dq[n_dq] = sq
        n_dq += 1
    return True, u_i, looked, dq, n_dq, c_free, c_top, c_req, c_att, c_items, c_next, c_work, c_enq


def _new_job(
    j_free: int, j_top: int, j_kind: np.ndarray, j_step: np.ndarray, j_q: np.ndarray, j_first: np.ndarray,
    j_items: np.ndarray, j_res: np.ndarray, j_next: np.ndarray, j_vf: np.ndarray,
) -> tuple[int, int, int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """A job slot from the free list, else a new one (the pool doubles when full).
    (jid, j_free, j_top, and the pool's arrays)."""
    if j_free >= 0:
        return j_free, j_next[j_free], j_top, j_kind, j_step, j_q, j_first, j_items, j_res, j_next, j_vf
    if j_top >= j_kind.shape[0]:
        j_kind = state.grow_i(j_kind)
        j_step = state.grow_i(j_step)
        j_q = state.grow_i(j_q)
        j_first = state.grow_i(j_first)
        j_items = state.grow_i(j_items)
        j_res = state.grow_i(j_res)
        j_next = state.grow_i(j_next)
        j_vf = state.grow_f(j_vf)
    return j_top, j_free, j_top + 1, j_kind, j_step, j_q, j_first, j_items, j_res, j_next, j_vf


def _occupy(
    jid: int, r: int, w: float, now: float, heap: Heap, seq: int, units: np.ndarray, r_v: np.ndarray,
    r_t: np.ndarray, r_n: np.ndarray, r_ver: np.ndarray, busy: np.ndarray, act: np.ndarray, n_act: int,
    j_res: np.ndarray, j_vf: np.ndarray,
) -> tuple[int, np.ndarray, int, int]:  # fmt: skip
    """Job jid runs `w` s of work on resource r (-1: none, a plain delay). (seq, act, n_act, looked)."""
    if r < 0:
        seq += 1
        heapq.heappush(heap, (now + w, seq, EV_DONE, jid, 0))
        return seq, act, n_act, 0
    _ps_advance(r, now, units, r_v, r_t, r_n, busy)
    r_n[r] += 1
    j_vf[jid] = r_v[r] + w
    if n_act >= act.shape[0]:
        act = state.grow_i(act)
    act[n_act] = jid
    n_act += 1
    r_ver[r] += 1
    seq = _ps_next(heap, seq, now, r, _earliest(r, act, n_act, j_res, j_vf), units, r_v, r_n, r_ver)
    return seq, act, n_act, n_act


def _take_calls(
    sq: int, s: int, now: float, heap: Heap, seq: int, st_handler: np.ndarray, st_batch: np.ndarray,
    st_delay: np.ndarray, q_head: np.ndarray, q_tail: np.ndarray, q_len: np.ndarray, q_free: np.ndarray,
    q_timer: np.ndarray, c_next: np.ndarray, c_items: np.ndarray, c_enq: np.ndarray,
) -> tuple[int, int, int]:  # fmt: skip
    """A free server of replica queue sq (of step s) takes work as its handler says: (seq, first
    call, items), first -1 while the handler holds the work back (a batch still filling: a timer)."""
    last, cnt, total, wait_until = _take(
        st_handler[s], q_head[sq], c_next, c_items, c_enq, st_batch[s], st_delay[s], now
    )
    if wait_until > now:
        if q_timer[sq] == 0:
            q_timer[sq] = 1
            seq += 1
            heapq.heappush(heap, (wait_until, seq, EV_TIMER, sq, 0))
        return seq, -1, 0
    first = q_head[sq]
    q_head[sq] = c_next[last]
    if q_head[sq] < 0:
        q_tail[sq] = -1
    c_next[last] = -1
    q_len[sq] -= cnt
    q_free[sq] -= 1
    return seq, first, total


def _start_job(
    sq: int, s: int, first: int, total: int, now: float, heap: Heap, seq: int, st_handler: np.ndarray,
    st_res: np.ndarray, batch_s: np.ndarray, c_work: np.ndarray, j_free: int, j_top: int, j_kind: np.ndarray,
    j_step: np.ndarray, j_q: np.ndarray, j_first: np.ndarray, j_items: np.ndarray, j_res: np.ndarray,
    j_next: np.ndarray, j_vf: np.ndarray, units: np.ndarray, r_v: np.ndarray, r_t: np.ndarray, r_n: np.ndarray,
    r_ver: np.ndarray, busy: np.ndarray, act: np.ndarray, n_act: int,
) -> tuple[int, int, int, int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:  # fmt: skip
    """A job for the calls from `first` on (`total` items) taken at queue sq of step s, run as its
    handler says. (seq, looked, j_free, j_top, the job pool, act, n_act)."""
    jid, j_free, j_top, j_kind, j_step, j_q, j_first, j_items, j_res, j_next, j_vf = _new_job(
        j_free, j_top, j_kind, j_step, j_q, j_first, j_items, j_res, j_next, j_vf
    )
    j_kind[jid] = 1
    j_step[jid] = s
    j_q[jid] = sq
    j_first[jid] = first
    j_items[jid] = total
    r = st_res[s]
    j_res[jid] = r
    w = _work(st_handler[s], s, total, first, batch_s, c_work)
    seq, act, n_act, looked = _occupy(
        jid, r, w, now, heap, seq, units, r_v, r_t, r_n, r_ver, busy, act, n_act, j_res, j_vf
    )
    return seq, looked, j_free, j_top, j_kind, j_step, j_q, j_first, j_items, j_res, j_next, j_vf, act, n_act


def _run(
    arr: np.ndarray,  # arrival times (s), sorted
    route_of: np.ndarray,  # route index per request
    route_len: np.ndarray,
    route_stage: np.ndarray,  # [route, position] -> step index
    st_handler: np.ndarray,  # the service model's handler slot
    st_res: np.ndarray,  # resource index, -1: unconstrained
    st_reps: np.ndarray,
    st_servers: np.ndarray,  # per replica; 0: unbounded
    st_routing: np.ndarray,  # 0 random, 1 round-robin, 2 least-request
    st_batch: np.ndarray,  # target batch (items)
    st_delay: np.ndarray,  # max queue delay (s)
    st_maxq: np.ndarray,  # queue capacity in calls; 0: unbounded
    st_ipc: np.ndarray,  # items per call
    st_timeout: np.ndarray,  # call deadline (s); 0: none
    st_retries: np.ndarray,
    st_backoff: np.ndarray,
    st_bmult: np.ndarray,
    st_fallback: np.ndarray,  # 1: a failed visit still answers (degraded)
    st_off: np.ndarray,  # first replica-queue index of each step
    st_group: np.ndarray,  # admission group of each step's service; -1: none
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
    n_steps = st_handler.shape[0]
    pos, attempt, pending, vstart, done_at, status, lat = state.requests(n, n_steps)
    held, w_next, g_in, g_head, g_tail, g_wlen = state.admission(n, g_limit.shape[0])
    r_v, r_t, r_n, r_ver, busy = state.resources(units.shape[0])
    q_head, q_tail, q_len, q_free, q_out, q_timer, q_step = state.queues(st_reps, st_servers, st_off)
    c_req, c_att, c_items, c_next, c_work, c_enq = state.call_pool(1024)
    j_kind, j_step, j_q, j_first, j_items, j_res, j_next, j_vf = state.job_pool(1024)
    c_free = j_free = -1
    c_top = j_top = 0
    rr = np.zeros(max(n_steps, 1), dtype=np.int64)
    # requests whose visit starts now (a list, not recursion), finished jobs, queues to dispatch:
    # arrays reused across events (allocation per event costs more than the work)
    todo = np.zeros(64, dtype=np.int64)
    fin = np.zeros(64, dtype=np.int64)
    dq = np.zeros(64, dtype=np.int64)
    act = np.full(64, -1, dtype=np.int64)  # active jobs on all resources: few run at once
    n_act = 0
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
        if ai < n and arr[ai] <= heap[0][0]:
            now = arr[ai]
            kind, a, b = EV_RETRY, ai, -1  # a fresh request: enter its first stage
            ai += 1
        else:
            ev = heapq.heappop(heap)
            now, kind, a, b = ev[0], ev[2], ev[3], ev[4]
        n_todo = n_fin = n_dq = 0
        if kind == EV_RES:
            if b != r_ver[a]:
                continue
            scanned += n_act  # the scans are work too: the budget counts them (issue 28)
            fin, n_fin, n_act, seq = _on_resource(
                a, now, heap, seq, units, r_v, r_t, r_n, r_ver, busy, act, n_act, j_res, j_vf, fin, n_fin
            )
        elif kind == EV_DONE:
            fin[n_fin] = a
            n_fin += 1
        elif kind == EV_TIMER:
            q_timer[a] = 0
            dq[n_dq] = a
            n_dq += 1
        elif kind == EV_TIMEOUT:
            if status[a] == 0 and attempt[a] == b:
                seq, todo, n_todo = _on_timeout(
                    a, b, route_stage[route_of[a], pos[a]], now, heap, seq, st_retries, st_backoff, st_bmult,
                    st_fallback, attempt, status, done_at, held, g_in, g_head, g_tail, g_wlen, w_next, todo, n_todo,
                )  # fmt: skip
        elif kind == EV_RETRY and (b < 0 or (status[a] == 0 and attempt[a] == b)):
            todo[n_todo] = a
            n_todo += 1
        seq, j_free, dq, n_dq, c_free, todo, n_todo = _finish_jobs(
            fin, n_fin, now, heap, seq, over_s, st_servers, j_kind, j_step, j_q, j_first, j_items,
            j_next, j_free, q_free, q_out, dq, n_dq, c_req, c_att, c_next, c_free, status, attempt, pending, pos,
            vstart, lat, todo, n_todo,
        )  # fmt: skip
        # start visits (they enqueue calls), then dispatch the queues they and the jobs left
        t_i = 0
        while t_i < n_todo or n_dq > 0:
            if t_i < n_todo:
                i = todo[t_i]
                t_i += 1
                code = 1  # answered: past the route's last step
                if pos[i] < route_len[route_of[i]]:
                    s = route_stage[route_of[i], pos[i]]
                    adm = _admit(i, st_group[s], held, g_in, g_head, g_tail, g_wlen, w_next, g_limit, g_queue)
                    if adm == 1:
                        continue  # waits for a place
                    code = 4  # refused
                    if adm == 0:
                        vstart[i] = now
                        if st_timeout[s] > 0:
                            seq += 1
                            heapq.heappush(heap, (now + st_timeout[s], seq, EV_TIMEOUT, i, attempt[i]))
                        sent, u_i, looked, dq, n_dq, c_free, c_top, c_req, c_att, c_items, c_next, c_work, c_enq = (
                            _send_calls(
                                i, s, now, items, work, st_handler, st_ipc, st_maxq, st_reps, st_routing, st_off,
                                rr, uniform, u_i, attempt, pending, q_head, q_tail, q_len, q_out, dq, n_dq, c_free,
                                c_top, c_req, c_att, c_items, c_next, c_work, c_enq,
                            )
                        )  # fmt: skip
                        scanned += looked
                        if sent:
                            continue
                        code = 3 if st_fallback[s] else 2  # a full queue: failed (degraded)
                todo, n_todo = _end(
                    i, code, now, status, done_at, held, g_in, g_head, g_tail, g_wlen, w_next, todo, n_todo
                )
                continue
            n_dq -= 1
            sq = dq[n_dq]
            s = q_step[sq]
            while q_free[sq] > 0 and q_head[sq] >= 0:  # its free servers take work
                seq, first, total = _take_calls(
                    sq, s, now, heap, seq, st_handler, st_batch, st_delay, q_head, q_tail, q_len, q_free, q_timer,
                    c_next, c_items, c_enq,
                )  # fmt: skip
                if first < 0:
                    break
                seq, looked, j_free, j_top, j_kind, j_step, j_q, j_first, j_items, j_res, j_next, j_vf, act, n_act = (
                    _start_job(
                        sq, s, first, total, now, heap, seq, st_handler, st_res, batch_s, c_work, j_free, j_top,
                        j_kind, j_step, j_q, j_first, j_items, j_res, j_next, j_vf, units, r_v, r_t, r_n, r_ver,
                        busy, act, n_act,
                    )
                )  # fmt: skip
                scanned += looked
    for r in range(units.shape[0]):  # busy time to the end
        _ps_advance(r, now, units, r_v, r_t, r_n, busy)
    return done_at, status, lat, busy, events + scanned // SCAN_PER_EVENT, now  # the work done
