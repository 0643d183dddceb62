"""The parts of the pipeline simulation's event loop (`pipesim_kernel._run`), one concern each:
processor sharing on a resource, admission places, replica choice, the pools of calls and jobs,
a finished job, a visit's calls, a timeout.

Written in the subset of Python that numba compiles, like the loop: `use_numba` compiles them
(the loop inlines them at numba's IR level, so a part costs no call) and `use_python` puts the
plain functions back. numba's on-disk cache of the loop keys on the loop's own file: a change
here must change `pipesim_kernel.PARTS_STAMP` (tests/perf/test_pipesim_parts.py checks it).
"""

from __future__ import annotations

import heapq
import math
from typing import Any

import numpy as np

EV_RES, EV_DONE, EV_TIMER, EV_TIMEOUT, EV_RETRY, EV_NONE = 0, 1, 2, 3, 4, 5
INF = math.inf

# One event (a heap pop, a visit or a dispatch) costs about as much as looking at 64 active
# jobs in processor sharing's scans (scattered reads, ~10 ns each) or 1,024 replicas in
# least-request routing's (one contiguous array): measured here on rag-chat (~120 jobs active
# at once) and the reference spec with 5,000 least-request replicas. The budget counts work in
# events, so a scan of n jobs weighs n/64 of one.
SCAN_PER_EVENT = 64
# The loop's state passed to its parts (numba compiles tuples of arrays as values, no copy):
Heap = list[tuple[float, int, int, int, int]]  # events: (time, sequence, kind, a, b)
Calls = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
Jobs = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
# requests holding places (a bit per group), in flight per group, waiting lists' heads and tails,
# their lengths, the next waiting request
Admission = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
# per request: route position, attempt, calls pending, visit start, done at, status, latency per step
Requests = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
# per resource: units (cores or GPUs), virtual time, its real time, jobs, version, busy time
Resources = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def grow_i(a: np.ndarray) -> np.ndarray:
    b = np.full(2 * a.shape[0], -1, dtype=np.int64)
    b[: a.shape[0]] = a
    return b


def grow_f(a: np.ndarray) -> np.ndarray:
    b = np.zeros(2 * a.shape[0], dtype=np.float64)
    b[: a.shape[0]] = a
    return b


def release(
    i: int,
    held: np.ndarray,
    g_in: np.ndarray,
    g_head: np.ndarray,
    g_tail: np.ndarray,
    g_wlen: np.ndarray,
    w_next: np.ndarray,
    todo: np.ndarray,
    n_todo: int,
) -> tuple[np.ndarray, int]:
    """Request i is done: free its admission places; the oldest waiting request of each takes it."""
    h = held[i]
    g = 0
    while h != 0:
        if h & 1:
            g_in[g] -= 1
            if g_wlen[g] > 0:
                j = g_head[g]
                g_head[g] = w_next[j]
                if g_head[g] < 0:
                    g_tail[g] = -1
                g_wlen[g] -= 1
                g_in[g] += 1
                held[j] |= 1 << g
                if n_todo >= todo.shape[0]:
                    todo = grow_i(todo)
                todo[n_todo] = j  # starts the visit it waited for
                n_todo += 1
        h >>= 1
        g += 1
    held[i] = 0
    return todo, n_todo


def ps_advance(
    r: int, now: float, units: np.ndarray, r_v: np.ndarray, r_t: np.ndarray, r_n: np.ndarray, busy: np.ndarray
) -> None:
    """Bring resource r's virtual clock (processor sharing among its jobs) and busy time to `now`."""
    k = r_n[r]
    if k > 0:
        rate = units[r] / k if k > units[r] else 1.0
        r_v[r] += (now - r_t[r]) * rate
        busy[r] += (now - r_t[r]) * min(float(k), units[r])
    r_t[r] = now


def earliest_finish(r: int, act: np.ndarray, n_act: int, j_res: np.ndarray, j_vf: np.ndarray) -> float:
    """The earliest virtual finish time among resource r's active jobs."""
    vmin = INF
    for x in range(n_act):
        jid = act[x]
        if j_res[jid] == r and j_vf[jid] < vmin:
            vmin = j_vf[jid]
    return vmin


def ps_next(
    heap: Heap,
    seq: int,
    now: float,
    r: int,
    vmin: float,
    units: np.ndarray,
    r_v: np.ndarray,
    r_n: np.ndarray,
    r_ver: np.ndarray,
) -> int:
    """Schedule resource r's next completion (stamped with its version: a later change voids it)."""
    rate = units[r] / r_n[r] if r_n[r] > units[r] else 1.0
    seq += 1
    heapq.heappush(heap, (now + max(0.0, vmin - r_v[r]) / rate, seq, EV_RES, r, r_ver[r]))
    return seq


def on_resource(
    r: int,
    now: float,
    heap: Heap,
    seq: int,
    units: np.ndarray,
    r_v: np.ndarray,
    r_t: np.ndarray,
    r_n: np.ndarray,
    r_ver: np.ndarray,
    busy: np.ndarray,
    act: np.ndarray,
    n_act: int,
    j_res: np.ndarray,
    j_vf: np.ndarray,
    fin: np.ndarray,
    n_fin: int,
) -> tuple[np.ndarray, int, int, int, int]:
    """A job on resource r finishes: every job due by now joins `fin`; (fin, n_fin, n_act, seq, scanned)."""
    ps_advance(r, now, units, r_v, r_t, r_n, busy)
    scanned = n_act  # the scans are work too: the budget counts them (issue 28)
    vmin = earliest_finish(r, act, n_act, j_res, j_vf)
    x = 0
    while x < n_act:
        jid = act[x]
        if j_res[jid] == r and j_vf[jid] <= max(vmin, r_v[r]) + 1e-12:
            if n_fin >= fin.shape[0]:
                fin = grow_i(fin)
            fin[n_fin] = jid
            n_fin += 1
            n_act -= 1
            act[x] = act[n_act]
            r_n[r] -= 1
        else:
            x += 1
    # the resource's next completion
    r_ver[r] += 1
    if r_n[r] > 0:
        seq = ps_next(heap, seq, now, r, earliest_finish(r, act, n_act, j_res, j_vf), units, r_v, r_n, r_ver)
    return fin, n_fin, n_act, seq, scanned


def end(
    i: int,
    outcome: int,
    now: float,
    status: np.ndarray,
    done_at: np.ndarray,
    adm: Admission,
    todo: np.ndarray,
    n_todo: int,
) -> tuple[np.ndarray, int]:
    """Request i ends now with `outcome` (1 answered, 2 failed, 3 degraded, 4 refused), freeing its
    admission places (`adm`: held, g_in, g_head, g_tail, g_wlen, w_next)."""
    status[i] = outcome
    done_at[i] = now
    held, g_in, g_head, g_tail, g_wlen, w_next = adm
    if held[i] != 0:
        todo, n_todo = release(i, held, g_in, g_head, g_tail, g_wlen, w_next, todo, n_todo)
    return todo, n_todo


def admit(i: int, g: int, adm: Admission, g_limit: np.ndarray, g_queue: np.ndarray) -> int:
    """Request i's visit to a step of admission group g (-1: none): 0 goes on, 1 waits, 2 is refused."""
    held, g_in, g_head, g_tail, g_wlen, w_next = adm
    if g < 0 or (held[i] >> g) & 1 != 0:  # not limited, or holds its place from an earlier visit
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
        return 1  # waits for a place (`release` starts the visit)
    return 2


def replica(
    s: int,
    st_reps: np.ndarray,
    st_routing: np.ndarray,
    st_off: np.ndarray,
    rr: np.ndarray,
    q_out: np.ndarray,
    uniform: np.ndarray,
    u_i: int,
) -> tuple[int, int, int]:
    """The replica a call to step s goes to: (replica, uniform draws used, replicas scanned)."""
    reps = st_reps[s]
    rep = 0
    scanned = 0
    if reps > 1:
        if st_routing[s] == 1:  # round-robin
            rr[s] = (rr[s] + 1) % reps
            rep = rr[s]
        elif st_routing[s] == 2:  # least-request
            best = q_out[st_off[s]]
            scanned = reps >> 4  # a contiguous scan: ~16x cheaper per replica
            for y in range(1, reps):
                if q_out[st_off[s] + y] < best:
                    best = q_out[st_off[s] + y]
                    rep = y
        else:  # random
            rep = int(uniform[u_i % uniform.shape[0]] * reps)
            u_i += 1
    return rep, u_i, scanned


def requests(n: int, n_steps: int) -> Requests:
    """Per request: (route position, attempt, calls pending, visit start, done at, status, latency
    per step); status 0 in flight, 1 answered, 2 failed, 3 degraded, 4 refused."""
    return (
        np.zeros(n, dtype=np.int64),
        np.zeros(n, dtype=np.int64),
        np.zeros(n, dtype=np.int64),
        np.zeros(n, dtype=np.float64),
        np.full(n, np.nan),
        np.zeros(n, dtype=np.int64),
        np.full((max(n_steps, 1), n), np.nan),
    )


def admission(n: int, n_groups: int) -> Admission:
    """Admission groups: requests holding a place (a bit per group) and FIFO lists of waiting ones."""
    n_g = max(n_groups, 1)
    return (
        np.zeros(n, dtype=np.int64),
        np.zeros(n_g, dtype=np.int64),
        np.full(n_g, -1, dtype=np.int64),
        np.full(n_g, -1, dtype=np.int64),
        np.zeros(n_g, dtype=np.int64),
        np.full(n, -1, dtype=np.int64),
    )


def calls_pool(cap: int) -> Calls:
    """The call pool: (request, attempt, items, next in queue / free list, work, enqueued at)."""
    return (
        np.full(cap, -1, dtype=np.int64),
        np.zeros(cap, dtype=np.int64),
        np.zeros(cap, dtype=np.int64),
        np.full(cap, -1, dtype=np.int64),
        np.zeros(cap),
        np.zeros(cap),
    )


def grow_calls(
    c_req: np.ndarray,
    c_att: np.ndarray,
    c_items: np.ndarray,
    c_next: np.ndarray,
    c_work: np.ndarray,
    c_enq: np.ndarray,
) -> Calls:
    return grow_i(c_req), grow_i(c_att), grow_i(c_items), grow_i(c_next), grow_f(c_work), grow_f(c_enq)


def jobs_pool(
    cap: int,
) -> Jobs:
    """The job pool: (kind, step, replica, first call, items, resource, virtual finish, next)."""
    return (
        np.zeros(cap, dtype=np.int64),  # 1 work on the processor, 2 host-side overhead after it
        np.zeros(cap, dtype=np.int64),
        np.zeros(cap, dtype=np.int64),
        np.full(cap, -1, dtype=np.int64),
        np.zeros(cap, dtype=np.int64),
        np.full(cap, -1, dtype=np.int64),
        np.zeros(cap),  # virtual finish time on its resource
        np.full(cap, -1, dtype=np.int64),  # free list / active list link
    )


def grow_jobs(
    j_kind: np.ndarray,
    j_step: np.ndarray,
    j_rep: np.ndarray,
    j_first: np.ndarray,
    j_items: np.ndarray,
    j_res: np.ndarray,
    j_vf: np.ndarray,
    j_next: np.ndarray,
) -> Jobs:
    return (
        grow_i(j_kind),
        grow_i(j_step),
        grow_i(j_rep),
        grow_i(j_first),
        grow_i(j_items),
        grow_i(j_res),
        grow_f(j_vf),
        grow_i(j_next),
    )


def queues(
    st_reps: np.ndarray, st_servers: np.ndarray, st_off: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Replica queues, FIFO linked lists of calls: (head, tail, length, free servers, calls out,
    timer set, step)."""
    n_steps = st_reps.shape[0]
    n_q = st_off[n_steps] if n_steps > 0 else 0
    q_free = np.zeros(n_q, dtype=np.int64)
    q_step = np.zeros(max(n_q, 1), dtype=np.int64)
    for s in range(n_steps):
        for rep in range(st_reps[s]):
            q_free[st_off[s] + rep] = st_servers[s] if st_servers[s] > 0 else 1 << 40
            q_step[st_off[s] + rep] = s
    q_head = np.full(n_q, -1, dtype=np.int64)
    q_tail = np.full(n_q, -1, dtype=np.int64)
    q_len = np.zeros(n_q, dtype=np.int64)
    q_out = np.zeros(n_q, dtype=np.int64)
    q_timer = np.zeros(n_q, dtype=np.int64)
    return q_head, q_tail, q_len, q_free, q_out, q_timer, q_step


def finish_job(
    jid: int,
    now: float,
    heap: Heap,
    seq: int,
    j_kind: np.ndarray,
    j_step: np.ndarray,
    j_rep: np.ndarray,
    j_first: np.ndarray,
    j_items: np.ndarray,
    j_next: np.ndarray,
    j_free: int,
    st_off: np.ndarray,
    st_servers: np.ndarray,
    over_s: np.ndarray,
    q_free: np.ndarray,
    q_out: np.ndarray,
    dq: np.ndarray,
    n_dq: int,
    c_req: np.ndarray,
    c_att: np.ndarray,
    c_next: np.ndarray,
    c_free: int,
    req: Requests,
    todo: np.ndarray,
    n_todo: int,
) -> tuple[int, int, np.ndarray, int, int, np.ndarray, int]:
    """Job jid's work is done: its host-side overhead follows, or its server frees and each of its
    calls answers (a request whose calls have all answered moves on to its next stage).
    Returns (seq, j_free, dq, n_dq, c_free, todo, n_todo)."""
    pos, attempt, pending, vstart, _, status, lat = req
    s = j_step[jid]
    sq = st_off[s] + j_rep[jid]
    over = over_s[s, min(j_items[jid], over_s.shape[1] - 1)]
    if j_kind[jid] == 1 and over > 0:
        j_kind[jid] = 2  # host-side overhead: the instance stays busy, the processor does not
        seq += 1
        heapq.heappush(heap, (now + over, seq, EV_DONE, jid, 0))
        return seq, j_free, dq, n_dq, c_free, todo, n_todo
    q_free[sq] += 1
    if st_servers[s] > 0:  # an unbounded pool frees nobody waiting
        if n_dq >= dq.shape[0]:
            dq = grow_i(dq)
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
                    todo = grow_i(todo)
                todo[n_todo] = i
                n_todo += 1
        c_next[c] = c_free
        c_req[c] = -1
        c_free = c
        c = nxt
    j_next[jid] = j_free
    return seq, jid, dq, n_dq, c_free, todo, n_todo


def send_calls(
    i: int,
    s: int,
    now: float,
    ncalls: int,
    per: int,
    k_items: int,
    work: np.ndarray,
    attempt: np.ndarray,
    st_reps: np.ndarray,
    st_routing: np.ndarray,
    st_off: np.ndarray,
    st_maxq: np.ndarray,
    rr: np.ndarray,
    uniform: np.ndarray,
    u_i: int,
    q_head: np.ndarray,
    q_tail: np.ndarray,
    q_len: np.ndarray,
    q_out: np.ndarray,
    c_req: np.ndarray,
    c_att: np.ndarray,
    c_items: np.ndarray,
    c_next: np.ndarray,
    c_work: np.ndarray,
    c_enq: np.ndarray,
    c_free: int,
    c_top: int,
    dq: np.ndarray,
    n_dq: int,
) -> tuple[bool, int, int, int, int, np.ndarray, int, Calls]:
    """Request i's visit to step s sends its `ncalls` calls to the replicas' queues, each queue to be
    dispatched. Returns (all sent: False when a full queue refused one, draws used, scanned, c_free,
    c_top, dq, n_dq, the call pool's arrays)."""
    scanned = 0
    sent = True
    for cc in range(ncalls):
        size = per if cc < ncalls - 1 else k_items - per * (ncalls - 1)
        rep, u_i, looked = replica(s, st_reps, st_routing, st_off, rr, q_out, uniform, u_i)
        scanned += looked
        sq = st_off[s] + rep
        if st_maxq[s] > 0 and q_len[sq] >= st_maxq[s]:
            sent = False
            break
        if c_free < 0:  # a call slot
            if c_top >= c_req.shape[0]:
                c_req, c_att, c_items, c_next, c_work, c_enq = grow_calls(
                    c_req, c_att, c_items, c_next, c_work, c_enq
                )
            c = c_top
            c_top += 1
        else:
            c = c_free
            c_free = c_next[c]
        c_req[c] = i
        c_att[c] = attempt[i]
        c_items[c] = size
        c_work[c] = work[s, i]
        c_enq[c] = now
        c_next[c] = -1
        # enqueue on the replica
        if q_tail[sq] >= 0:
            c_next[q_tail[sq]] = c
        else:
            q_head[sq] = c
        q_tail[sq] = c
        q_len[sq] += 1
        q_out[sq] += 1
        if n_dq >= dq.shape[0]:
            dq = grow_i(dq)
        dq[n_dq] = sq
        n_dq += 1
    return sent, u_i, scanned, c_free, c_top, dq, n_dq, (c_req, c_att, c_items, c_next, c_work, c_enq)


def start_job(
    jid: int,
    r: int,
    w: float,
    now: float,
    heap: Heap,
    seq: int,
    units: np.ndarray,
    r_v: np.ndarray,
    r_t: np.ndarray,
    r_n: np.ndarray,
    r_ver: np.ndarray,
    busy: np.ndarray,
    act: np.ndarray,
    n_act: int,
    j_res: np.ndarray,
    j_vf: np.ndarray,
) -> tuple[int, np.ndarray, int, int]:
    """Job jid starts `w` seconds of work on resource r (-1: a processor of its own).
    Returns (seq, act, n_act, scanned)."""
    if r < 0:
        seq += 1
        heapq.heappush(heap, (now + w, seq, EV_DONE, jid, 0))
        return seq, act, n_act, 0
    ps_advance(r, now, units, r_v, r_t, r_n, busy)
    r_n[r] += 1
    j_vf[jid] = r_v[r] + w
    if n_act >= act.shape[0]:
        act = grow_i(act)
    act[n_act] = jid
    n_act += 1
    r_ver[r] += 1
    seq = ps_next(heap, seq, now, r, earliest_finish(r, act, n_act, j_res, j_vf), units, r_v, r_n, r_ver)
    return seq, act, n_act, n_act


def on_timeout(
    i: int,
    b: int,
    now: float,
    heap: Heap,
    seq: int,
    s: int,
    st_retries: np.ndarray,
    st_backoff: np.ndarray,
    st_bmult: np.ndarray,
    st_fallback: np.ndarray,
    attempt: np.ndarray,
    status: np.ndarray,
    done_at: np.ndarray,
    adm: Admission,
    todo: np.ndarray,
    n_todo: int,
) -> tuple[int, np.ndarray, int]:
    """Attempt b of request i's visit to step s timed out: retry after the backoff, or fail (its
    fallback answers degraded). Returns (seq, todo, n_todo)."""
    if b < st_retries[s]:
        attempt[i] = b + 1
        seq += 1
        heapq.heappush(heap, (now + st_backoff[s] * st_bmult[s] ** b, seq, EV_RETRY, i, b + 1))
        return seq, todo, n_todo
    todo, n_todo = end(i, 3 if st_fallback[s] else 2, now, status, done_at, adm, todo, n_todo)
    return seq, todo, n_todo


# inlined into the loop; `grow_*` and `release` (rare) stay calls
INLINED = (
    "ps_advance", "earliest_finish", "ps_next", "on_resource", "end", "admit", "replica", "requests", "admission",
    "calls_pool", "grow_calls", "jobs_pool", "grow_jobs", "queues", "finish_job", "send_calls", "start_job",
    "on_timeout",
)  # fmt: skip
_PY = {name: globals()[name] for name in (*INLINED, "grow_i", "grow_f", "release")}


def use_numba(numba: Any, cache: bool) -> None:
    """Compile the parts in place: they call each other, and the loop calls them, as this module's globals."""
    g = globals()
    g["grow_i"] = numba.njit(cache=True)(_PY["grow_i"])
    g["grow_f"] = numba.njit(cache=True)(_PY["grow_f"])
    g["release"] = numba.njit(cache=cache)(_PY["release"])
    for name in INLINED:
        g[name] = numba.njit(cache=cache, inline="always")(_PY[name])


def use_python() -> None:
    """The parts as plain Python again (`pipesim_kernel.bind`), until the next compile."""
    globals().update(_PY)
