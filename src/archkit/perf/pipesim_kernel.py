"""The event loop of the whole-pipeline simulation, on plain arrays (see `pipesim` for the model).

Written in the subset of Python that numba compiles, so one source serves both ways: `run`
compiles it with numba on first use (cached on disk); `run_python` is the same function as
ordinary Python, about 35× slower with identical results (every random draw is made by
numpy before the loop, in `pipesim`).
Events: (time, sequence, kind, a, b) on one binary heap; the sequence number breaks ties in
the order events were scheduled, so a seed fixes the whole run.
What a stage's server does with its queue is its service model's handler
(`archkit.perf.service_models`): how a visit splits into calls, what a free server takes,
how long that runs. The loop reaches them through `_calls`, `_take` and `_work`, which
dispatch on the step's handler slot to the functions bound to `_hN_*` (`bind`).
Each event's work is done by the loop's parts (`pipesim_parts`: processor sharing, admission,
replica choice, the pools of calls and jobs), which numba inlines into the loop.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

import numpy as np

from archkit.perf import pipesim_parts as parts
from archkit.perf.pipesim_parts import (
    EV_DONE,
    EV_NONE,
    EV_RES,
    EV_RETRY,
    EV_TIMEOUT,
    EV_TIMER,
    INF,
    SCAN_PER_EVENT,
    Heap,
    Jobs,
    Resources,
)
from archkit.perf.service_models.worker_pool import (
    calls as _stub_calls,
)
from archkit.perf.service_models.worker_pool import (
    take as _stub_take,
)
from archkit.perf.service_models.worker_pool import (
    work as _stub_work,
)

# numba's on-disk cache keys on this file alone: the built-in handlers live in other modules,
# so a change to their bodies must change this stamp (tests/perf/test_service_models.py
# checks it against their source) or a stale compiled loop would be loaded
HANDLERS_STAMP = "a855aea0c3446db7"
# and the loop's parts (`pipesim_parts`) live in a module of their own: the same for them
PARTS_STAMP = "1c829514d3c8681c"


# the handler slots (archkit.perf.service_models.MAX_HANDLERS); `bind` fills them, and a slot
# no model uses keeps the worker pool's handler (numba types every branch of the dispatch)
_h0_calls = _h1_calls = _h2_calls = _h3_calls = _stub_calls
_h0_take = _h1_take = _h2_take = _h3_take = _stub_take
_h0_work = _h1_work = _h2_work = _h3_work = _stub_work


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


def _dispatch(
    sq: int,
    now: float,
    heap: Heap,
    seq: int,
    st_handler: np.ndarray,
    st_batch: np.ndarray,
    st_delay: np.ndarray,
    st_res: np.ndarray,
    st_off: np.ndarray,
    q_step: np.ndarray,
    q_head: np.ndarray,
    q_tail: np.ndarray,
    q_len: np.ndarray,
    q_free: np.ndarray,
    q_timer: np.ndarray,
    c_next: np.ndarray,
    c_items: np.ndarray,
    c_enq: np.ndarray,
    c_work: np.ndarray,
    batch_s: np.ndarray,
    res: Resources,
    act: np.ndarray,
    n_act: int,
    jobs: Jobs,
    j_free: int,
    j_top: int,
) -> tuple[int, int, np.ndarray, int, int, int, Jobs]:
    """Replica queue sq's free servers take work as its service model's handler says (a batch
    still filling is held back until a timer). Returns (seq, scanned, act, n_act, j_free, j_top,
    the job pool's arrays)."""
    j_kind, j_step, j_rep, j_first, j_items, j_res, j_vf, j_next = jobs
    units, r_v, r_t, r_n, r_ver, busy = res
    s = q_step[sq]
    rep = sq - st_off[s]
    scanned = 0
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
                j_kind, j_step, j_rep, j_first, j_items, j_res, j_vf, j_next = parts.grow_jobs(
                    j_kind, j_step, j_rep, j_first, j_items, j_res, j_vf, j_next
                )
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
        seq, act, n_act, looked = parts.start_job(
            jid, r, w, now, heap, seq, units, r_v, r_t, r_n, r_ver, busy, act, n_act, j_res, j_vf
        )
        scanned += looked
    return (
        seq,
        scanned,
        act,
        n_act,
        j_free,
        j_top,
        (j_kind, j_step, j_rep, j_first, j_items, j_res, j_vf, j_next),
    )


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
    n_res = units.shape[0]
    req = parts.requests(n, n_steps)
    pos, attempt, pending, vstart, done_at, status, lat = req
    adm = parts.admission(n, g_limit.shape[0])
    # resources (processor sharing on a virtual clock): virtual time, its real time, jobs, version
    r_v, r_t, busy = np.zeros(n_res), np.zeros(n_res), np.zeros(n_res)
    r_n, r_ver = np.zeros(n_res, dtype=np.int64), np.zeros(n_res, dtype=np.int64)
    res = (units, r_v, r_t, r_n, r_ver, busy)
    q_head, q_tail, q_len, q_free, q_out, q_timer, q_step = parts.queues(st_reps, st_servers, st_off)
    rr = np.zeros(max(n_steps, 1), dtype=np.int64)
    todo = np.zeros(64, dtype=np.int64)
    fin = np.zeros(64, dtype=np.int64)
    dq = np.zeros(64, dtype=np.int64)
    # calls and jobs live in growable pools with free lists
    c_req, c_att, c_items, c_next, c_work, c_enq = parts.calls_pool(1024)
    c_free, c_top = -1, 0  # the free list's head; the slots used so far
    jobs = parts.jobs_pool(1024)
    j_free, j_top = -1, 0
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
        # `todo` holds requests whose current visit must start now (avoids recursion); the three
        # work lists are arrays reused across events (allocation per event costs more than the work)
        n_todo, n_fin, n_dq = 0, 0, 0
        if kind == EV_RES:
            if b != r_ver[a]:
                continue  # superseded: the resource's job set changed since
            fin, n_fin, n_act, seq, looked = parts.on_resource(
                a, now, heap, seq, units, r_v, r_t, r_n, r_ver, busy, act, n_act, jobs[5], jobs[6], fin, n_fin
            )
            scanned += looked
        elif kind == EV_DONE:
            fin[n_fin] = a
            n_fin += 1
        elif kind == EV_TIMER:
            q_timer[a] = 0
            dq[n_dq] = a
            n_dq += 1
        elif kind == EV_TIMEOUT:
            if status[a] == 0 and attempt[a] == b:
                s = route_stage[route_of[a], pos[a]]
                seq, todo, n_todo = parts.on_timeout(
                    a, b, now, heap, seq, s, st_retries, st_backoff, st_bmult, st_fallback,
                    attempt, status, done_at, adm, todo, n_todo,
                )  # fmt: skip
        elif kind == EV_RETRY and (b < 0 or (status[a] == 0 and attempt[a] == b)):
            todo[n_todo] = a
            n_todo += 1
        # ---- finished jobs free their servers and answer their calls
        for f_i in range(n_fin):
            seq, j_free, dq, n_dq, c_free, todo, n_todo = parts.finish_job(
                fin[f_i], now, heap, seq, jobs[0], jobs[1], jobs[2], jobs[3], jobs[4], jobs[7], j_free,
                st_off, st_servers, over_s, q_free, q_out, dq, n_dq, c_req, c_att, c_next, c_free,
                req, todo, n_todo,
            )  # fmt: skip
        # ---- start visits (they enqueue calls), then dispatch the queues they and the jobs touched
        t_i = 0
        while t_i < n_todo or n_dq > 0:
            if t_i >= n_todo:
                n_dq -= 1
                seq, looked, act, n_act, j_free, j_top, jobs = _dispatch(
                    dq[n_dq], now, heap, seq, st_handler, st_batch, st_delay, st_res, st_off, q_step,
                    q_head, q_tail, q_len, q_free, q_timer, c_next, c_items, c_enq, c_work, batch_s,
                    res, act, n_act, jobs, j_free, j_top,
                )  # fmt: skip
                scanned += looked
                continue
            i = todo[t_i]
            t_i += 1
            if pos[i] >= route_len[route_of[i]]:
                todo, n_todo = parts.end(i, 1, now, status, done_at, adm, todo, n_todo)
                continue
            s = route_stage[route_of[i], pos[i]]
            admitted = parts.admit(i, st_group[s], adm, g_limit, g_queue)
            if admitted == 1:
                continue  # waits for a place
            if admitted == 2:
                todo, n_todo = parts.end(i, 4, now, status, done_at, adm, todo, n_todo)
                continue
            vstart[i] = now
            if st_timeout[s] > 0:
                seq += 1
                heapq.heappush(heap, (now + st_timeout[s], seq, EV_TIMEOUT, i, attempt[i]))
            ncalls, per, k_items = _calls(st_handler[s], items[s, i], st_ipc[s])
            pending[i] = ncalls
            sent, u_i, looked, c_free, c_top, dq, n_dq, pool = parts.send_calls(
                i, s, now, ncalls, per, k_items, work, attempt, st_reps, st_routing, st_off, st_maxq, rr,
                uniform, u_i, q_head, q_tail, q_len, q_out, c_req, c_att, c_items, c_next, c_work, c_enq,
                c_free, c_top, dq, n_dq,
            )  # fmt: skip
            c_req, c_att, c_items, c_next, c_work, c_enq = pool
            scanned += looked
            if not sent:  # a full queue refused a call: the visit fails, 2 (3, degraded, with a fallback)
                todo, n_todo = parts.end(i, 2 + st_fallback[s], now, status, done_at, adm, todo, n_todo)
    for r in range(n_res):
        k = r_n[r]
        if k > 0:
            busy[r] += (now - r_t[r]) * min(float(k), units[r])
    return done_at, status, lat, busy, events + scanned // SCAN_PER_EVENT, now  # the work done


# inlined into the loop by numba (`_compile`), as the parts in `pipesim_parts`: a call costs nothing
_INLINED: tuple[Callable[..., Any], ...] = (_calls, _take, _work, _dispatch)
_PY = {f.__name__: f for f in _INLINED}
run_python = _run  # the same loop as plain Python (the benchmark's peer; what runs without numba)
_compiled: Any = None


def run(*args: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, float]:
    """The event loop, compiled by numba on first use (and cached on disk), else plain Python.

    Compiling lazily keeps `import archkit.api` free of numba's import cost.
    """
    global _compiled
    if _compiled is None:
        _compiled = _compile()
    out: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, float] = _compiled(*args)
    return out


def bind(handlers: dict[int, Any]) -> None:
    """Point the handler slots at `handlers` (slot -> `service_models.Handler`), as plain Python.

    `run_python` sees the change at once; the compiled loop is rebuilt on its next use."""
    global _compiled
    g = globals()
    g.update(_PY)  # the dispatchers and the parts as plain Python again, until the next compile
    parts.use_python()
    for slot in range(4):
        h = handlers.get(slot)
        g[f"_h{slot}_calls"] = h.calls if h is not None else _stub_calls
        g[f"_h{slot}_take"] = h.take if h is not None else _stub_take
        g[f"_h{slot}_work"] = h.work if h is not None else _stub_work
    _bound.clear()
    _bound.update(handlers)
    _compiled = None


_bound: dict[int, Any] = {}


def bound() -> dict[int, Any]:
    """The handlers the slots point at now."""
    return dict(_bound)


def _compile() -> Any:
    try:
        import numba
    except ImportError:  # pragma: no cover - numba is a dependency; a stripped install still works
        return _run
    from archkit.perf import service_models

    # a plug-in's handler is compiled afresh each process: the on-disk cache knows only this file
    cache = service_models.only_builtin()
    g = globals()
    # the functions the loop calls must be compiled first: the loop resolves them as globals
    parts.use_numba(numba, cache)
    # inlined into the loop at numba's IR level: a handler costs no call (the benchmark's speed)
    for slot in range(4):
        for part in ("calls", "take", "work"):
            name = f"_h{slot}_{part}"
            g[name] = numba.njit(cache=cache, inline="always")(g[name])
    for fn in _INLINED:
        g[fn.__name__] = numba.njit(cache=cache, inline="always")(_PY[fn.__name__])
    return numba.njit(cache=cache, nogil=True)(_run)
