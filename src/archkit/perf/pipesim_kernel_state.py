"""The state of the pipeline simulation's event loop (`pipesim_loop`): its arrays, allocated once
a run, the pools that grow, and the admission places a finished request frees.

Called from the loop, not inlined (they run once a run, or rarely); compiled with it, so numba's
on-disk cache of the loop holds them too: a change here must change `pipesim_loop.STATE_STAMP`
(tests/perf/test_pipesim_kernel.py checks it).
"""

from __future__ import annotations

import numpy as np


def grow_i(a: np.ndarray) -> np.ndarray:
    b = np.full(2 * a.shape[0], -1, dtype=np.int64)
    b[: a.shape[0]] = a
    return b


def grow_f(a: np.ndarray) -> np.ndarray:
    b = np.zeros(2 * a.shape[0], dtype=np.float64)
    b[: a.shape[0]] = a
    return b


def requests(n: int, n_steps: int) -> tuple[np.ndarray, ...]:
    """Per request: route position, attempt, calls pending, visit start, done at, status
    (0 in flight, 1 answered, 2 failed, 3 degraded, 4 refused), latency per step."""
    lat = np.full((max(n_steps, 1), n), np.nan)
    z = np.zeros(n, dtype=np.int64)
    return z, z.copy(), z.copy(), np.zeros(n), np.full(n, np.nan), z.copy(), lat


def admission(n: int, n_g: int) -> tuple[np.ndarray, ...]:
    """Admission groups: requests holding a place (a bit per group), the next waiting request, and
    per group the requests in it, the head and tail of its FIFO list of waiting ones, its length."""
    m = max(n_g, 1)
    held = np.zeros(n, dtype=np.int64)
    w_next = np.full(n, -1, dtype=np.int64)
    return (
        held,
        w_next,
        np.zeros(m, dtype=np.int64),
        np.full(m, -1, dtype=np.int64),
        np.full(m, -1, dtype=np.int64),
        np.zeros(m, dtype=np.int64),
    )


def queues(st_reps: np.ndarray, st_servers: np.ndarray, st_off: np.ndarray) -> tuple[np.ndarray, ...]:
    """Replica queues, FIFO linked lists of calls: head, tail, length, free servers, calls out,
    a timer set, the step of each."""
    n_steps = st_reps.shape[0]
    n_q = st_off[n_steps] if n_steps > 0 else 0
    q_free = np.zeros(n_q, dtype=np.int64)
    q_step = np.zeros(max(n_q, 1), dtype=np.int64)
    for s in range(n_steps):
        for rep in range(st_reps[s]):
            q_free[st_off[s] + rep] = st_servers[s] if st_servers[s] > 0 else 1 << 40
            q_step[st_off[s] + rep] = s
    z = np.zeros(n_q, dtype=np.int64)
    return (
        np.full(n_q, -1, dtype=np.int64),
        np.full(n_q, -1, dtype=np.int64),
        z,
        q_free,
        z.copy(),
        z.copy(),
        q_step,
    )


def call_pool(cap: int) -> tuple[np.ndarray, ...]:
    """Calls (a growable pool with a free list): request, attempt, items, next, work, enqueued at."""
    return (
        np.full(cap, -1, dtype=np.int64), np.zeros(cap, dtype=np.int64), np.zeros(cap, dtype=np.int64),
        np.full(cap, -1, dtype=np.int64), np.zeros(cap), np.zeros(cap),
    )  # fmt: skip


def job_pool(cap: int) -> tuple[np.ndarray, ...]:
    """Jobs: kind (1 work on the processor, 2 host-side overhead after it), step, queue, first
    call, items, resource, next (free list), virtual finish time on its resource."""
    z = np.zeros(cap, dtype=np.int64)
    m = np.full(cap, -1, dtype=np.int64)
    return z, z.copy(), z.copy(), m, z.copy(), m.copy(), m.copy(), np.zeros(cap)


def resources(n_res: int) -> tuple[np.ndarray, ...]:
    """Resources (processor sharing on a virtual clock): virtual time, its real time, jobs on it,
    the version of its next completion, busy time."""
    return (
        np.zeros(n_res),
        np.zeros(n_res),
        np.zeros(n_res, dtype=np.int64),
        np.zeros(n_res, dtype=np.int64),
        np.zeros(n_res),
    )


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
