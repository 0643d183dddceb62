"""The pipeline simulation's loop state (`pipesim_loop`): its layout, allocation and growth.

One 2-D array per kind of thing, its rows named here, so that each of the loop's parts takes a
few arrays (numba counts references on each array a part takes; docs/benchmarks.md, "Pipeline
simulation"). Written in the subset of Python that numba compiles; `pipesim_kernel` compiles the
functions as plain calls (once a run, or when a pool is full). The compiled loop embeds this
module's values: `pipesim_loop.STATE_STAMP` is a digest of this file (tests check it), so that
numba's on-disk cache, which keys on the loop's file alone, never loads a loop built on old ones.
"""

from __future__ import annotations

import numpy as np

# steps (int64): the service model's handler slot, resource (-1: unconstrained), replicas, servers
# per replica (0: unbounded), routing (0 random, 1 round-robin, 2 least-request), target batch
# (items), queue capacity in calls (0: unbounded), items per call, retries, fallback (1: a failed
# visit still answers, degraded), admission group of its service (-1: none)
S_HANDLER, S_RES, S_REPS, S_SERVERS, S_ROUTING, S_BATCH, S_MAXQ, S_IPC, S_RETRIES, S_FALLBACK, S_GROUP = (
    range(11)
)
# steps (float64): max queue delay (s), call deadline (s; 0: none), backoff (s) and its multiplier
S_DELAY, S_TIMEOUT, S_BACKOFF, S_BMULT = range(4)
# requests (int64): route position, attempt, calls pending, admission places held (a bit per
# group), the next request waiting in the same group's FIFO
R_POS, R_ATT, R_PEND, R_HELD, R_WNEXT = range(5)
# admission groups (int64): requests in flight, FIFO head and tail, waiting, limit, waiting places
G_IN, G_HEAD, G_TAIL, G_WLEN, G_LIMIT, G_QUEUE = range(6)
# resources, processor sharing on a virtual clock: (float64) virtual time, last update, busy
# time; (int64) jobs running, version of its scheduled completion
P_V, P_T, P_BUSY = range(3)
P_N, P_VER = range(2)
# replica queues (int64): FIFO of calls (head, tail), length, free servers, calls out, timer set, step
Q_HEAD, Q_TAIL, Q_LEN, Q_FREE, Q_OUT, Q_TIMER, Q_STEP = range(7)
# jobs (int64): kind (1 work on the processor, 2 host-side overhead after it), step, replica,
# first call, items, calls, resource, free-list link
J_KIND, J_STEP, J_REP, J_FIRST, J_ITEMS, J_CALLS, J_RES, J_NEXT = range(8)


def steps(
    st_handler: np.ndarray, st_res: np.ndarray, st_reps: np.ndarray, st_servers: np.ndarray,
    st_routing: np.ndarray, st_batch: np.ndarray, st_delay: np.ndarray, st_maxq: np.ndarray,
    st_ipc: np.ndarray, st_timeout: np.ndarray, st_retries: np.ndarray, st_backoff: np.ndarray,
    st_bmult: np.ndarray, st_fallback: np.ndarray, st_group: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """The steps' parameters as the loop takes them: (integers [S_*, step], floats [S_*, step])."""
    sti = np.vstack(
        (st_handler, st_res, st_reps, st_servers, st_routing, st_batch, st_maxq, st_ipc, st_retries, st_fallback, st_group)
    ).astype(np.int64)  # fmt: skip
    stf = np.vstack((st_delay, st_timeout, st_backoff, st_bmult)).astype(np.float64)
    return sti, stf


def allocate(
    n: int, sti: np.ndarray, st_off: np.ndarray, g_limit: np.ndarray, g_queue: np.ndarray, n_res: int
) -> tuple[np.ndarray, ...]:
    """(requests, status, visit start, done at, latency per step, admission groups, resources
    float, resources int, replica queues, round-robin position)."""
    n_steps = sti.shape[1]
    n_g = g_limit.shape[0]
    n_q = st_off[n_steps] if n_steps > 0 else 0
    rq = np.zeros((5, n), dtype=np.int64)
    rq[R_WNEXT] = -1
    status = np.zeros(n, dtype=np.int64)  # 0 in flight, 1 answered, 2 failed, 3 degraded, 4 refused
    vstart = np.zeros(n, dtype=np.float64)
    done_at = np.full(n, np.nan)
    lat = np.full((max(n_steps, 1), n), np.nan)
    gs = np.full((6, max(n_g, 1)), -1, dtype=np.int64)
    gs[G_IN] = 0
    gs[G_WLEN] = 0
    gs[G_LIMIT, :n_g] = g_limit
    gs[G_QUEUE, :n_g] = g_queue
    pf = np.zeros((3, n_res))
    pi = np.zeros((2, n_res), dtype=np.int64)
    qs = np.zeros((7, max(n_q, 1)), dtype=np.int64)
    qs[Q_HEAD] = -1
    qs[Q_TAIL] = -1
    for s in range(n_steps):
        for rep in range(sti[S_REPS, s]):
            servers = sti[S_SERVERS, s]
            qs[Q_FREE, st_off[s] + rep] = servers if servers > 0 else 1 << 40
            qs[Q_STEP, st_off[s] + rep] = s
    rr = np.zeros(max(n_steps, 1), dtype=np.int64)
    return rq, status, vstart, done_at, lat, gs, pf, pi, qs, rr


def pools() -> tuple[np.ndarray, ...]:
    """The work lists (requests to start, finished jobs, queues to dispatch, jobs on a resource),
    the call pool (request, attempt, items, work, enqueued at, next) and the job pool (the rows
    above, virtual finish time on its resource). They grow (`grow_*`); slots are free-listed."""
    todo = np.zeros(64, dtype=np.int64)
    fin = np.zeros(64, dtype=np.int64)
    dq = np.zeros(64, dtype=np.int64)
    act = np.full(64, -1, dtype=np.int64)
    c_req = np.full(1024, -1, dtype=np.int64)
    c_att = np.zeros(1024, dtype=np.int64)
    c_items = np.zeros(1024, dtype=np.int64)
    c_work = np.zeros(1024)
    c_enq = np.zeros(1024)
    c_next = np.full(1024, -1, dtype=np.int64)
    jobs = np.full((8, 1024), -1, dtype=np.int64)
    j_vf = np.zeros(1024)
    return todo, fin, dq, act, c_req, c_att, c_items, c_work, c_enq, c_next, jobs, j_vf


def grow_i(a: np.ndarray, need: int) -> np.ndarray:
    """`a` doubled until it holds `need`, the new places -1."""
    m = a.shape[0]
    while m < need:
        m *= 2
    b = np.full(m, -1, dtype=np.int64)
    b[: a.shape[0]] = a
    return b


def grow_calls(
    c_req: np.ndarray, c_att: np.ndarray, c_items: np.ndarray, c_work: np.ndarray, c_enq: np.ndarray,
    c_next: np.ndarray, need: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """The call pool doubled until it holds `need` calls."""
    m = c_req.shape[0]
    while m < need:
        m *= 2
    req = np.full(m, -1, dtype=np.int64)
    req[: c_req.shape[0]] = c_req
    att = np.full(m, -1, dtype=np.int64)
    att[: c_att.shape[0]] = c_att
    items = np.full(m, -1, dtype=np.int64)
    items[: c_items.shape[0]] = c_items
    work = np.zeros(m)
    work[: c_work.shape[0]] = c_work
    enq = np.zeros(m)
    enq[: c_enq.shape[0]] = c_enq
    nxt = np.full(m, -1, dtype=np.int64)
    nxt[: c_next.shape[0]] = c_next
    return req, att, items, work, enq, nxt


def grow_jobs(jobs: np.ndarray, j_vf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The job pool doubled."""
    b = np.full((jobs.shape[0], 2 * jobs.shape[1]), -1, dtype=np.int64)
    b[:, : jobs.shape[1]] = jobs
    f = np.zeros(2 * j_vf.shape[0])
    f[: j_vf.shape[0]] = j_vf
    return b, f
