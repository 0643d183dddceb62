"""The iteration-level loop of the continuous-batching simulation, on plain arrays (see `sim`).

Written in the subset of Python that numba compiles; `run` compiles it on first use (cached on
disk). One call simulates one engine replica: a vLLM-style scheduler (running sequences first,
then waiting ones in arrival order; a token budget per iteration; chunked prefill mixed with
decodes; at most `max_seqs` running; KV blocks allocated as tokens are computed; preemption by
recompute of the newest running sequence when blocks run out; shared prefixes cached in
refcounted blocks, evicted when unused before anything is preempted).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def _hist_add(hist: np.ndarray, value: float, count: int, lo: float, inv_log_ratio: float) -> None:
    n = hist.shape[0]
    if value <= lo:
        b = 0
    else:
        b = int(math.log(value / lo) * inv_log_ratio) + 1
        if b >= n:
            b = n - 1
    hist[b] += count


def _run(
    arrival: np.ndarray,  # float64 [n], sorted (s)
    prompt: np.ndarray,  # int64 [n]
    output: np.ndarray,  # int64 [n], >= 1
    group: np.ndarray,  # int64 [n]: shared-prefix group, -1 none
    group_tokens: np.ndarray,  # int64 [groups]: block-aligned cacheable prefix length
    private_hit: np.ndarray,  # int64 [n]: tokens already cached for this request alone (multi-turn)
    max_seqs: int,
    budget: int,  # max_num_batched_tokens
    chunked: int,
    block: int,
    total_blocks: int,
    prefix_caching: int,
    c_lin: float,  # FLOPs per token in the linear layers (2 x params)
    c_attn: float,  # attention FLOPs factor: 2 x layers x hidden
    w_bytes: float,  # weight bytes read per iteration
    kvb: float,  # KV bytes per token
    flops_rate: float,  # FLOP/s achieved (peak x MFU)
    bw_rate: float,  # bytes/s achieved (bandwidth x efficiency)
    overhead: float,  # s per iteration
    ar_tok: float,  # all-reduce s per token
    ar_fix: float,  # all-reduce s per iteration
    spec_k: int,
    spec_a: float,
    spec_cost: float,
    seed: int,
    hist_lo: float,
    inv_log_ratio: float,
    nbins: int,
    max_work: int,  # stop after this much work (iterations, running sequences, group scans): issue 28
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    np.random.seed(seed)
    n = arrival.shape[0]
    ng = group_tokens.shape[0]
    ttft = np.full(n, np.nan)
    finish = np.full(n, np.nan)
    npre = np.zeros(n, dtype=np.int64)
    hist = np.zeros(nbins, dtype=np.int64)
    computed = np.zeros(n, dtype=np.int64)
    generated = np.zeros(n, dtype=np.int64)
    held = np.zeros(n, dtype=np.int64)  # blocks held privately
    shared = np.zeros(n, dtype=np.int64)  # tokens served from the group's blocks
    phase = np.zeros(n, dtype=np.int64)  # 0 prefill, 1 decode
    target = np.zeros(n, dtype=np.int64)  # tokens to prefill (prompt + generated before a recompute)
    last = np.zeros(n, dtype=np.float64)
    g_cached = np.zeros(max(ng, 1), dtype=np.int64)
    g_ref = np.zeros(max(ng, 1), dtype=np.int64)
    g_blocks = np.zeros(max(ng, 1), dtype=np.int64)
    for g in range(ng):
        g_blocks[g] = group_tokens[g] // block
    run = np.zeros(max_seqs + 1, dtype=np.int64)
    nrun = 0
    wq = np.zeros(3 * n + 2, dtype=np.int64)  # waiting deque: front insertions for preempted sequences
    head = n + 1
    tail = n + 1
    sched = np.zeros(max_seqs + 1, dtype=np.int64)
    snew = np.zeros(max_seqs + 1, dtype=np.int64)
    free = total_blocks
    nxt = 0
    done = 0
    now = 0.0
    iters = 0
    preemptions = 0
    max_running = 0
    busy = 0.0
    out_tokens = 0
    work = 0
    for i in range(n):
        target[i] = prompt[i]
    while done < n and work < max_work:
        while nxt < n and arrival[nxt] <= now:
            wq[tail] = nxt
            tail += 1
            nxt += 1
        if nrun == 0 and head == tail:
            now = arrival[nxt]
            continue
        tokens = 0
        attn = 0.0
        kvread = 0.0
        ns = 0
        decodes = 0
        # vLLM V0 without chunked prefill runs prefill-only iterations while any waiting sequence
        # can start, and decodes only when none can (`Scheduler._schedule_default`); with chunked
        # prefill, running sequences go first and new prompts fill the rest of the token budget.
        prefill_first = chunked == 0 and head < tail and nrun < max_seqs
        for stage in range(2):
            if (stage == 0) != prefill_first:
                if prefill_first and ns > 0:
                    break
                # ---- running sequences, in admission order
                i = 0
                while i < nrun:
                    r = run[i]
                    if phase[r] == 0:
                        need = target[r] - computed[r]
                        if need > budget - tokens:
                            need = budget - tokens if chunked == 1 else 0
                    else:
                        need = spec_k + 1
                        if need > budget - tokens:
                            need = 0
                    if need <= 0:
                        break
                    want = -(-(computed[r] + need) // block) - shared[r] // block - held[r]
                    preempted_self = False
                    while want > free:
                        evicted = False
                        for g in range(ng):
                            if g_cached[g] == 1 and g_ref[g] == 0:
                                g_cached[g] = 0
                                free += g_blocks[g]
                                evicted = True
                                break
                        if evicted:
                            continue
                        work += 1 + (ng >> 4)  # a scan of the groups: ~1/16 of a sequence's step
                        # preempt the newest running sequence (recompute)
                        v = run[nrun - 1]
                        nrun -= 1
                        free += held[v]
                        held[v] = 0
                        if shared[v] > 0:
                            g_ref[group[v]] -= 1
                            shared[v] = 0
                        computed[v] = 0
                        phase[v] = 0
                        target[v] = prompt[v] + generated[v]
                        npre[v] += 1
                        preemptions += 1
                        head -= 1
                        wq[head] = v
                        if v == r:
                            preempted_self = True
                            break
                    if preempted_self:
                        break
                    free -= want
                    held[r] += want
                    sched[ns] = r
                    snew[ns] = need
                    ns += 1
                    s = computed[r]
                    tokens += need
                    attn += c_attn * need * (2 * s + need)
                    kvread += s
                    if phase[r] == 1:
                        decodes += 1
                    i += 1
            else:
                # ---- waiting sequences, oldest first (preempted ones sit at the front)
                while head < tail and nrun < max_seqs and tokens < budget:
                    r = wq[head]
                    g = group[r]
                    hit = 0
                    if computed[r] == 0 and prefix_caching == 1:
                        if g >= 0 and g_cached[g] == 1:
                            hit = group_tokens[g]
                        if private_hit[r] > hit and generated[r] == 0:
                            hit = private_hit[r]
                        if hit >= target[r]:  # at least one token is computed to sample from
                            hit = ((target[r] - 1) // block) * block
                    start = computed[r] if computed[r] > 0 else hit
                    need = target[r] - start
                    if need > budget - tokens:
                        if chunked == 1:
                            need = budget - tokens
                        elif tokens > 0:
                            break
                    use_group = g >= 0 and hit > 0 and hit == group_tokens[g] and g_cached[g] == 1
                    sh = hit if use_group else 0
                    want = -(-(start + need) // block) - sh // block
                    while want > free:
                        evicted = False
                        for gg in range(ng):
                            if g_cached[gg] == 1 and g_ref[gg] == 0 and not (use_group and gg == g):
                                g_cached[gg] = 0
                                free += g_blocks[gg]
                                evicted = True
                                break
                        if not evicted:
                            work += 1 + (ng >> 4)  # a scan of the groups: ~1/16 of a sequence's step
                            break
                    if want > free:
                        break
                    head += 1
                    free -= want
                    held[r] = want
                    if use_group:
                        shared[r] = sh
                        g_ref[g] += 1
                    computed[r] = start
                    run[nrun] = r
                    nrun += 1
                    sched[ns] = r
                    snew[ns] = need
                    ns += 1
                    tokens += need
                    attn += c_attn * need * (2 * start + need)
                    kvread += start
        if ns == 0:  # nothing fits: wait for the next arrival (cannot happen with a sane KV size)
            if nxt < n:
                now = max(now, arrival[nxt])
                continue
            # a sequence larger than the whole cache: drop it, recorded as never answered
            head += 1
            done += 1
            continue
        if nrun > max_running:
            max_running = nrun
        compute = (c_lin * tokens + attn) / flops_rate
        memory = (w_bytes + (kvread + tokens) * kvb) / bw_rate
        dt = max(compute, memory) + overhead + ar_tok * tokens + ar_fix
        if decodes > 0 and spec_k > 0:
            dt *= 1.0 + spec_k * spec_cost
        end = now + dt
        busy += dt
        iters += 1
        work += 1 + nrun
        # ---- advance every scheduled sequence
        for j in range(ns):
            r = sched[j]
            need = snew[j]
            if phase[r] == 0:
                computed[r] += need
                gr = group[r]
                if (
                    prefix_caching == 1
                    and gr >= 0
                    and shared[r] == 0
                    and g_cached[gr] == 0
                    and group_tokens[gr] > 0
                    and computed[r] >= group_tokens[gr]
                ):
                    # this sequence computed the group's prefix: its first blocks become the cached prefix
                    g_cached[gr] = 1
                    g_ref[gr] += 1
                    held[r] -= g_blocks[gr]
                    shared[r] = group_tokens[gr]
                if computed[r] >= target[r]:
                    phase[r] = 1
                    if generated[r] == 0:
                        ttft[r] = end - arrival[r]
                    else:
                        _hist_add(hist, end - last[r], 1, hist_lo, inv_log_ratio)
                    generated[r] += 1
                    out_tokens += 1
                    last[r] = end
            else:
                m = 1
                while m <= spec_k and np.random.random() < spec_a:
                    m += 1
                if m > output[r] - generated[r]:
                    m = output[r] - generated[r]
                computed[r] += m
                _hist_add(hist, (end - last[r]) / m, m, hist_lo, inv_log_ratio)
                generated[r] += m
                out_tokens += m
                last[r] = end
                # blocks reserved for rejected draft slots are kept (vLLM frees them lazily)
        # ---- retire finished sequences, keeping admission order
        k = 0
        for j in range(nrun):
            r = run[j]
            if generated[r] >= output[r]:
                finish[r] = end - arrival[r]
                free += held[r]
                held[r] = 0
                if shared[r] > 0:
                    g_ref[group[r]] -= 1
                    shared[r] = 0
                done += 1
            else:
                run[k] = r
                k += 1
        nrun = k
        now = end
    stats = np.array([iters, preemptions, max_running, busy, out_tokens, now, work], dtype=np.float64)
    return ttft, finish, npre, hist, stats


run_python = _run  # the same loop as plain Python (for tests without numba and as the benchmark's peer)
_compiled: Any = None


def run(*args: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The loop compiled by numba on first use (cached on disk), else plain Python."""
    global _compiled
    if _compiled is None:
        try:
            import numba
        except ImportError:  # pragma: no cover - numba is a dependency
            _compiled = _run
        else:
            globals()["_hist_add"] = numba.njit(cache=True)(_hist_add)
            _compiled = numba.njit(cache=True, nogil=True)(_run)
    out: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray] = _compiled(*args)
    return out
