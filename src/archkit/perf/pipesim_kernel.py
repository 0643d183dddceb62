"""The event loop of the whole-pipeline simulation, on plain arrays (see `pipesim` for the model).

Written in the subset of Python that numba compiles, so one source serves both ways: `run`
compiles it with numba on first use (cached on disk); `run_python` is the same function as
ordinary Python, about 35× slower with identical results (every random draw is made by
numpy before the loop, in `pipesim`).
Events: (time, sequence, kind, a, b) on one binary heap; the sequence number breaks ties in
the order events were scheduled, so a seed fixes the whole run.
"""

from __future__ import annotations

import heapq
import math
from typing import Any

import numpy as np

EV_RES, EV_DONE, EV_TIMER, EV_TIMEOUT, EV_RETRY, EV_NONE = 0, 1, 2, 3, 4, 5
INF = math.inf


def _grow_i(a: np.ndarray) -> np.ndarray:
    b = np.full(2 * a.shape[0], -1, dtype=np.int64)
    b[: a.shape[0]] = a
    return b


def _grow_f(a: np.ndarray) -> np.ndarray:
    b = np.zeros(2 * a.shape[0], dtype=np.float64)
    b[: a.shape[0]] = a
    return b


def _run(
    arr: np.ndarray,  # arrival times (s), sorted
    route_of: np.ndarray,  # route index per request
    route_len: np.ndarray,
    route_stage: np.ndarray,  # [route, position] -> step index
    st_model: np.ndarray,  # 1: batcher + instances; 0: worker visit
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
    batch_s: np.ndarray,  # [step, n] processor time of a batch of n items
    over_s: np.ndarray,  # [step, n] host-side overhead after it
    work: np.ndarray,  # [step, request] work of a worker visit (s)
    items: np.ndarray,  # [step, request] items of a visit
    units: np.ndarray,  # cores or GPUs per resource
    uniform: np.ndarray,  # a pool of U(0,1) draws for random routing
    max_events: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
    n = arr.shape[0]
    n_steps = st_model.shape[0]
    n_res = units.shape[0]
    n_q = st_off[n_steps] if n_steps > 0 else 0
    # requests
    pos = np.zeros(n, dtype=np.int64)
    attempt = np.zeros(n, dtype=np.int64)
    pending = np.zeros(n, dtype=np.int64)
    vstart = np.zeros(n, dtype=np.float64)
    done_at = np.full(n, np.nan)
    status = np.zeros(n, dtype=np.int64)  # 0 in flight, 1 answered, 2 failed, 3 degraded
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
    j_kind = np.zeros(jcap, dtype=np.int64)  # 0 worker visit, 1 batch on the processor, 2 batch overhead
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
    ai = 0
    u_i = 0
    n_u = uniform.shape[0]
    while ai < n or heap[0][0] < INF:
        events += 1
        if events > max_events:
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
                if b < st_retries[s]:
                    attempt[i] = b + 1
                    seq += 1
                    heapq.heappush(heap, (now + st_backoff[s] * st_bmult[s] ** b, seq, EV_RETRY, i, b + 1))
                else:
                    status[i] = 3 if st_fallback[s] else 2
                    done_at[i] = now
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
            if st_servers[s] > 0 or st_model[s] == 1:  # an unbounded worker pool frees nobody waiting
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
                    continue
                s = route_stage[rt, pos[i]]
                vstart[i] = now
                if st_timeout[s] > 0:
                    seq += 1
                    heapq.heappush(heap, (now + st_timeout[s], seq, EV_TIMEOUT, i, attempt[i]))
                if st_model[s] == 1:
                    k_items = items[s, i]
                    per = st_ipc[s]
                    ncalls = (k_items + per - 1) // per
                else:
                    k_items = 1
                    per = 1
                    ncalls = 1
                pending[i] = ncalls
                for cc in range(ncalls):
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
                    c_work[c] = work[s, i] if st_model[s] == 0 else 0.0
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
                c = q_head[sq]
                total = 0
                cnt = 0
                last = -1
                while c >= 0 and total + c_items[c] <= st_batch[s]:
                    total += c_items[c]
                    cnt += 1
                    last = c
                    c = c_next[c]
                if cnt == 0:  # a call larger than the batch goes alone
                    last = q_head[sq]
                    total = c_items[last]
                    cnt = 1
                if st_model[s] == 1 and total < st_batch[s] and st_delay[s] > 0:
                    deadline = c_enq[q_head[sq]] + st_delay[s]
                    if now < deadline:
                        if q_timer[sq] == 0:
                            q_timer[sq] = 1
                            seq += 1
                            heapq.heappush(heap, (deadline, seq, EV_TIMER, sq, 0))
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
                j_kind[jid] = 1 if st_model[s] == 1 else 0
                j_step[jid] = s
                j_rep[jid] = rep
                j_first[jid] = first
                j_items[jid] = total
                r = st_res[s]
                j_res[jid] = r
                if st_model[s] == 1:
                    nb = batch_s.shape[1] - 1
                    w = batch_s[s, total] if total <= nb else batch_s[s, nb] * total / nb
                else:
                    w = c_work[first]
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
    return done_at, status, lat, busy, units, now


run_python = _run  # the same loop as plain Python (the benchmark's peer; what runs without numba)
_compiled: Any = None


def run(*args: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
    """The event loop, compiled by numba on first use (and cached on disk), else plain Python.

    Compiling lazily keeps `import archkit.api` free of numba's import cost.
    """
    global _compiled
    if _compiled is None:
        _compiled = _compile()
    out: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, float] = _compiled(*args)
    return out


def _compile() -> Any:
    try:
        import numba
    except ImportError:  # pragma: no cover - numba is a dependency; a stripped install still works
        return _run
    g = globals()
    # the helpers the loop calls must be compiled first: the loop resolves them as globals
    g["_grow_i"] = numba.njit(cache=True)(_grow_i)
    g["_grow_f"] = numba.njit(cache=True)(_grow_f)
    return numba.njit(cache=True, nogil=True)(_run)
