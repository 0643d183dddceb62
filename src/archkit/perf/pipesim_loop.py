"""The event loop of the whole-pipeline simulation, on plain arrays (see `pipesim` for the model).

Written in the subset of Python that numba compiles; `pipesim_kernel` compiles it (or runs it
as plain Python). The loop is one function: split into parts that numba inlines it gave the
same results at twice the CPU time (docs/benchmarks.md).
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

from archkit.perf.service_models import worker_pool as _stub

EV_RES, EV_DONE, EV_TIMER, EV_TIMEOUT, EV_RETRY, EV_NONE = 0, 1, 2, 3, 4, 5
INF = math.inf
# numba's on-disk cache keys on this file alone: the built-in handlers live in other modules,
# so a change to their bodies must change this stamp (tests/perf/test_service_models.py
# checks it against their source) or a stale compiled loop would be loaded
HANDLERS_STAMP = "a855aea0c3446db7"
# the loop's parts as named in this module, for `pipesim_kernel` to compile or put back
PARTS = ("_calls", "_take", "_work", "_release", "_grow_i", "_grow_f")


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


def _grow_i(a: np.ndarray) -> np.ndarray:
    b = np.full(2 * a.shape[0], -1, dtype=np.int64)
    b[: a.shape[0]] = a
    return b


def _grow_f(a: np.ndarray) -> np.ndarray:
    b = np.zeros(2 * a.shape[0], dtype=np.float64)
    b[: a.shape[0]] = a
    return b


def _release(
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
                    todo = _grow_i(todo)
                todo[n_todo] = j  # starts the visit it waited for
                n_todo += 1
        h >>= 1
        g += 1
    held[i] = 0
    return todo, n_todo


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
    vcalls: np.ndarray,  # [step, request] calls of a visit (a fan-out table's); 0: the handler's split
    units: np.ndarray,  # cores or GPUs per resource
    uniform: np.ndarray,  # a pool of U(0,1) draws for random routing
    max_events: int,  # a budget of work: events plus the jobs and replicas each one scans
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, float]:
    n = arr.shape[0]
    n_steps = st_handler.shape[0]
    n_res = units.shape[0]
    n_q = st_off[n_steps] if n_steps > 0 else 0
    # requests
    pos = np.zeros(n, dtype=np.int64)
    attempt = np.zeros(n, dtype=np.int64)
    pending = np.zeros(n, dtype=np.int64)
    vstart = np.zeros(n, dtype=np.float64)
    done_at = np.full(n, np.nan)
    status = np.zeros(n, dtype=np.int64)  # 0 in flight, 1 answered, 2 failed, 3 degraded, 4 refused
    # admission groups: requests holding a place (a bit per group) and FIFO lists of waiting ones
    n_g = g_limit.shape[0]
    held = np.zeros(n, dtype=np.int64)
    w_next = np.full(n, -1, dtype=np.int64)
    g_in = np.zeros(max(n_g, 1), dtype=np.int64)
    g_head = np.full(max(n_g, 1), -1, dtype=np.int64)
    g_tail = np.full(max(n_g, 1), -1, dtype=np.int64)
    g_wlen = np.zeros(max(n_g, 1), dtype=np.int64)
    lat = np.full((max(n_steps, 1), n), np.nan)
    # resources (processor sharing on a virtual clock)
    r_v = np.zeros(n_res)
    r_t = np.zeros(n_res)
    r_n = np.zeros(n_res, dtype=np.int64)
    r_ver = np.zeros(n_res, dtype=np.int64)
    busy = np.zeros(n_res)
    # replica queues: FIFO linked lists of calls
    q_head = np.full(n_q, -1, dtype=np.int64)
    q_tail = np.full(n_q, -1, dtype=np.int64)
    q_len = np.zeros(n_q, dtype=np.int64)
    q_free = np.zeros(n_q, dtype=np.int64)
    q_out = np.zeros(n_q, dtype=np.int64)
    q_timer = np.zeros(n_q, dtype=np.int64)
    for s in range(n_steps):
        for rep in range(st_reps[s]):
            q_free[st_off[s] + rep] = st_servers[s] if st_servers[s] > 0 else 1 << 40
    rr = np.zeros(max(n_steps, 1), dtype=np.int64)
    q_step = np.zeros(max(n_q, 1), dtype=np.int64)
    for s in range(n_steps):
        for rep in range(st_reps[s]):
            q_step[st_off[s] + rep] = s
    todo = np.zeros(64, dtype=np.int64)
    fin = np.zeros(64, dtype=np.int64)
    dq = np.zeros(64, dtype=np.int64)
    # calls and jobs live in growable pools with free lists
    cap = 1024
    c_req = np.full(cap, -1, dtype=np.int64)
    c_att = np.zeros(cap, dtype=np.int64)
    c_items = np.zeros(cap, dtype=np.int64)
    c_work = np.zeros(cap)
    c_enq = np.zeros(cap)
    c_next = np.full(cap, -1, dtype=np.int64)
    c_free = -1
    c_top = 0
    jcap = 1024
    j_kind = np.zeros(jcap, dtype=np.int64)  # 1 work on the processor, 2 host-side overhead after it
    j_step = np.zeros(jcap, dtype=np.int64)
    j_rep = np.zeros(jcap, dtype=np.int64)
    j_first = np.full(jcap, -1, dtype=np.int64)
    j_items = np.zeros(jcap, dtype=np.int64)
    j_res = np.full(jcap, -1, dtype=np.int64)
    j_vf = np.zeros(jcap)  # virtual finish time on its resource
    j_next = np.full(jcap, -1, dtype=np.int64)  # free list / active list link
    j_free = -1
    j_top = 0
    # active jobs per resource: a doubly linked list would be overkill; few run at once
    act = np.full(64, -1, dtype=np.int64)
    n_act = 0
    heap = [(INF, 0, EV_NONE, 0, 0)]
    seq = 0
    now = 0.0
    events = 0
    scanned = 0  # jobs and replicas looked at; SCAN_PER_EVENT of them cost about one event
    ai = 0
    u_i = 0
    n_u = uniform.shape[0]
    while ai < n or heap[0][0] < INF:
        events += 1
        if events + scanned // SCAN_PER_EVENT > max_events:
            break
        if ai < n and arr[ai] <= heap[0][0]:
            now = arr[ai]
            i = ai
            ai += 1
            kind = EV_RETRY
            a = i
            b = -1  # a fresh request: enter its first stage
        else:
            ev = heapq.heappop(heap)
            now = ev[0]
            kind = ev[2]
            a = ev[3]
            b = ev[4]
        # `todo` holds requests whose current visit must start now (avoids recursion); the three
        # work lists are arrays reused across events (allocation per event costs more than the work)
        n_todo = 0
        n_fin = 0
        n_dq = 0
        if kind == EV_RES:
            r = a
            if b != r_ver[r]:
                continue
            k = r_n[r]
            if k > 0:
                rate = units[r] / k if k > units[r] else 1.0
                r_v[r] += (now - r_t[r]) * rate
                busy[r] += (now - r_t[r]) * min(float(k), units[r])
            r_t[r] = now
            scanned += n_act  # the scans are work too: the budget counts them (issue 28)
            vmin = INF
            for x in range(n_act):
                jid = act[x]
                if j_res[jid] == r and j_vf[jid] < vmin:
                    vmin = j_vf[jid]
            x = 0
            while x < n_act:
                jid = act[x]
                if j_res[jid] == r and j_vf[jid] <= max(vmin, r_v[r]) + 1e-12:
                    if n_fin >= fin.shape[0]:
                        fin = _grow_i(fin)
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
                vmin = INF
                for x in range(n_act):
                    jid = act[x]
                    if j_res[jid] == r and j_vf[jid] < vmin:
                        vmin = j_vf[jid]
                rate = units[r] / r_n[r] if r_n[r] > units[r] else 1.0
                seq += 1
                heapq.heappush(heap, (now + max(0.0, vmin - r_v[r]) / rate, seq, EV_RES, r, r_ver[r]))
        elif kind == EV_DONE:
            fin[n_fin] = a
            n_fin += 1
        elif kind == EV_TIMER:
            q_timer[a] = 0
            dq[n_dq] = a
            n_dq += 1
        elif kind == EV_TIMEOUT:
            i = a
            if status[i] == 0 and attempt[i] == b:
                s = route_stage[route_of[i], pos[i]]
                if st_timeout[s] <= 0 or now != vstart[i] + st_timeout[s]:
                    # an earlier stage's deadline: a finished visit resets `attempt` to 0, so its
                    # event still matches (i, 0) while the request is at a later stage whose visit
                    # started later or has no deadline (tests/perf/test_call_timeout.py)
                    pass
                elif b < st_retries[s]:
                    attempt[i] = b + 1
                    seq += 1
                    heapq.heappush(heap, (now + st_backoff[s] * st_bmult[s] ** b, seq, EV_RETRY, i, b + 1))
                else:
                    status[i] = 3 if st_fallback[s] else 2
                    done_at[i] = now
                    if held[i] != 0:
                        todo, n_todo = _release(i, held, g_in, g_head, g_tail, g_wlen, w_next, todo, n_todo)
        elif kind == EV_RETRY:
            i = a
            if b < 0 or (status[i] == 0 and attempt[i] == b):
                todo[n_todo] = i
                n_todo += 1
        # ---- process finished jobs and queues to dispatch, then requests to advance
        for f_i in range(n_fin):
            jid = fin[f_i]
            s = j_step[jid]
            sq = st_off[s] + j_rep[jid]
            if j_kind[jid] == 1 and over_s[s, min(j_items[jid], over_s.shape[1] - 1)] > 0:
                j_kind[jid] = 2  # host-side overhead: the instance stays busy, the processor does not
                seq += 1
                heapq.heappush(
                    heap, (now + over_s[s, min(j_items[jid], over_s.shape[1] - 1)], seq, EV_DONE, jid, 0)
                )
                continue
            q_free[sq] += 1
            if st_servers[s] > 0:  # an unbounded pool frees nobody waiting
                if n_dq >= dq.shape[0]:
                    dq = _grow_i(dq)
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
                            todo = _grow_i(todo)
                        todo[n_todo] = i
                        n_todo += 1
                c_next[c] = c_free
                c_req[c] = -1
                c_free = c
                c = nxt
            j_next[jid] = j_free
            j_free = jid
        # ---- start visits (may enqueue calls and start jobs)
        t_i = 0
        while t_i < n_todo or n_dq > 0:
            if t_i < n_todo:
                i = todo[t_i]
                t_i += 1
                rt = route_of[i]
                if pos[i] >= route_len[rt]:
                    status[i] = 1
                    done_at[i] = now
                    if held[i] != 0:
                        todo, n_todo = _release(i, held, g_in, g_head, g_tail, g_wlen, w_next, todo, n_todo)
                    continue
                s = route_stage[rt, pos[i]]
                g = st_group[s]
                if g >= 0 and (held[i] >> g) & 1 == 0:  # the first visit to a limited service
                    if g_in[g] < g_limit[g]:
                        g_in[g] += 1
                        held[i] |= 1 << g
                    elif g_wlen[g] < g_queue[g]:
                        if g_tail[g] >= 0:
                            w_next[g_tail[g]] = i
                        else:
                            g_head[g] = i
                        g_tail[g] = i
                        w_next[i] = -1
                        g_wlen[g] += 1
                        continue  # waits for a place (`_release` starts the visit)
                    else:
                        status[i] = 4
                        done_at[i] = now
                        if held[i] != 0:
                            todo, n_todo = _release(
                                i, held, g_in, g_head, g_tail, g_wlen, w_next, todo, n_todo
                            )
                        continue
                vstart[i] = now
                if st_timeout[s] > 0:
                    seq += 1
                    heapq.heappush(heap, (now + st_timeout[s], seq, EV_TIMEOUT, i, attempt[i]))
                even = vcalls[s, i] > 0  # the table's calls: the items split as evenly as they go
                if even:
                    k_items = items[s, i]
                    ncalls = min(vcalls[s, i], k_items)
                    per = k_items // ncalls
                else:
                    ncalls, per, k_items = _calls(st_handler[s], items[s, i], st_ipc[s])
                pending[i] = ncalls
                for cc in range(ncalls):
                    if even:  # the first (items mod calls) calls carry one item more
                        size = per + (1 if cc < k_items - per * ncalls else 0)
                    else:
                        size = per if cc < ncalls - 1 else k_items - per * (ncalls - 1)
                    # pick a replica
                    reps = st_reps[s]
                    rep = 0
                    if reps > 1:
                        if st_routing[s] == 1:
                            rr[s] = (rr[s] + 1) % reps
                            rep = rr[s]
                        elif st_routing[s] == 2:
                            best = q_out[st_off[s]]
                            scanned += reps >> 4  # a contiguous scan: ~16x cheaper per replica
                            for y in range(1, reps):
                                if q_out[st_off[s] + y] < best:
                                    best = q_out[st_off[s] + y]
                                    rep = y
                        else:
                            rep = int(uniform[u_i % n_u] * reps)
                            u_i += 1
                    sq = st_off[s] + rep
                    if st_maxq[s] > 0 and q_len[sq] >= st_maxq[s]:
                        status[i] = 3 if st_fallback[s] else 2
                        done_at[i] = now
                        if held[i] != 0:
                            todo, n_todo = _release(
                                i, held, g_in, g_head, g_tail, g_wlen, w_next, todo, n_todo
                            )
                        break
                    # a call slot
                    if c_free < 0:
                        if c_top >= c_req.shape[0]:
                            c_req = _grow_i(c_req)
                            c_att = _grow_i(c_att)
                            c_items = _grow_i(c_items)
                            c_next = _grow_i(c_next)
                            c_work = _grow_f(c_work)
                            c_enq = _grow_f(c_enq)
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
                        dq = _grow_i(dq)
                    dq[n_dq] = sq
                    n_dq += 1
                continue
            # ---- dispatch one replica queue: free instances take batches
            n_dq -= 1
            sq = dq[n_dq]
            s = q_step[sq]
            rep = sq - st_off[s]
            while q_free[sq] > 0 and q_head[sq] >= 0:
                last, cnt, total, wait_until = _take(
                    st_handler[s], q_head[sq], c_next, c_items, c_enq, st_batch[s], st_delay[s], now
                )
                if wait_until > now:  # the handler holds the work back (a batch still filling)
                    if q_timer[sq] == 0:
                        q_timer[sq] = 1
                        seq += 1
                        heapq.heappush(heap, (wait_until, seq, EV_TIMER, sq, 0))
                    break
                first = q_head[sq]
                q_head[sq] = c_next[last]
                if q_head[sq] < 0:
                    q_tail[sq] = -1
                c_next[last] = -1
                q_len[sq] -= cnt
                q_free[sq] -= 1
                if j_free < 0:
                    if j_top >= j_kind.shape[0]:
                        j_kind = _grow_i(j_kind)
                        j_step = _grow_i(j_step)
                        j_rep = _grow_i(j_rep)
                        j_first = _grow_i(j_first)
                        j_items = _grow_i(j_items)
                        j_res = _grow_i(j_res)
                        j_next = _grow_i(j_next)
                        j_vf = _grow_f(j_vf)
                    jid = j_top
                    j_top += 1
                else:
                    jid = j_free
                    j_free = j_next[jid]
                j_kind[jid] = 1
                j_step[jid] = s
                j_rep[jid] = rep
                j_first[jid] = first
                j_items[jid] = total
                r = st_res[s]
                j_res[jid] = r
                w = _work(st_handler[s], s, total, first, batch_s, c_work)
                if r < 0:
                    seq += 1
                    heapq.heappush(heap, (now + w, seq, EV_DONE, jid, 0))
                else:
                    k = r_n[r]
                    if k > 0:
                        rate = units[r] / k if k > units[r] else 1.0
                        r_v[r] += (now - r_t[r]) * rate
                        busy[r] += (now - r_t[r]) * min(float(k), units[r])
                    r_t[r] = now
                    r_n[r] += 1
                    j_vf[jid] = r_v[r] + w
                    if n_act >= act.shape[0]:
                        act = _grow_i(act)
                    act[n_act] = jid
                    n_act += 1
                    r_ver[r] += 1
                    vmin = INF
                    scanned += n_act
                    for x in range(n_act):
                        jj = act[x]
                        if j_res[jj] == r and j_vf[jj] < vmin:
                            vmin = j_vf[jj]
                    rate = units[r] / r_n[r] if r_n[r] > units[r] else 1.0
                    seq += 1
                    heapq.heappush(heap, (now + max(0.0, vmin - r_v[r]) / rate, seq, EV_RES, r, r_ver[r]))
    for r in range(n_res):
        k = r_n[r]
        if k > 0:
            busy[r] += (now - r_t[r]) * min(float(k), units[r])
    return done_at, status, lat, busy, events + scanned // SCAN_PER_EVENT, now  # the work done
