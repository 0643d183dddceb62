"""The iteration-level loop of the continuous-batching simulation, on plain arrays (see `sim`).

Written in the subset of Python that numba compiles; `run` compiles it on first use (cached on
disk). One call simulates one engine replica: a vLLM-style scheduler (running sequences first,
then waiting ones in arrival order; a token budget per iteration; chunked prefill mixed with
decodes; at most `max_seqs` running; KV blocks allocated as tokens are computed; preemption by
recompute of the newest running sequence when blocks run out; shared prefixes cached in
refcounted blocks, evicted when unused before anything is preempted). Each request's admission
costs the engine `admit` seconds in the iteration that admits it, and `client` seconds outside
the engine are added to its TTFT and end to end.

The loop is split by concern into helpers that share state through two small arrays:
- `q[row, request]` (int64), one row per per-request field: `COMPUTED` tokens whose KV exists,
  `GENERATED` output tokens, `HELD` blocks held privately, `SHARED` tokens served from the
  group's cached blocks, `PHASE` (0 prefill, 1 decode), `TARGET` tokens to prefill (prompt +
  generated before a recompute), `NPRE` preemptions;
- `k[field]` (int64), the scheduler's counters: `NRUN` running, `HEAD`/`TAIL` of the waiting
  deque, `FREE` blocks, `PREEMPTIONS`, and this iteration's `TOKENS`, `NS` scheduled sequences,
  `DECODES`, `ADMITTED`, `SCANS` (full scans of the prefix groups that found none to evict);
  `f[ATTN]` and `f[KVREAD]` (float64) are the iteration's attention FLOPs and KV tokens read.

The loop counts its work (issue 28) in units of one running sequence's step: an iteration is
`ITERATION_WORK` + its running sequences, a full scan of the groups 1 + groups/16 (a group's read is
~1/16 of a sequence's step); it stops at `max_work`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

COMPUTED, GENERATED, HELD, SHARED, PHASE, TARGET, NPRE = 0, 1, 2, 3, 4, 5, 6
NRUN, HEAD, TAIL, FREE, PREEMPTIONS, TOKENS, NS, DECODES, ADMITTED, SCANS = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9
ATTN, KVREAD = 0, 1

# An iteration's own cost (arrivals, scheduling, the step's time, `_advance` and `_retire`'s loops)
# in sequence steps: measured on rag-chat's engine, 4,000 requests (2026-12-03 14:09-14:53 UTC, load
# ~5.7-6, tests/fuzz/reproducers/README.md), counting 1 an iteration gave 46-53 ns a unit with ~13
# sequences running but 233 ns (`max_num_batched_tokens: 2`), 340 ns (`replicas: 4999`) and 728 ns
# (`tensor: 63`) with 1-2 running: an iteration is ~0.5-0.7 us whatever the batch, ~25 steps. Counted
# as 1, runs whose sequences execute one at a time did 17-25 times the work their budget allowed.
ITERATION_WORK = 24


def _hist_add(hist: np.ndarray, value: float, count: int, lo: float, inv_log_ratio: float) -> None:
    n = hist.shape[0]
    if value <= lo:
        b = 0
    else:
        b = int(math.log(value / lo) * inv_log_ratio) + 1
        if b >= n:
            b = n - 1
    hist[b] += count


def _evict(g_cached: np.ndarray, g_ref: np.ndarray, g_blocks: np.ndarray, keep: int) -> int:
    """Drop one cached prefix group no running sequence uses (not `keep`): the blocks it frees, -1 if none."""
    for g in range(g_cached.shape[0]):
        if g_cached[g] == 1 and g_ref[g] == 0 and g != keep:
            g_cached[g] = 0
            return int(g_blocks[g])
    return -1


def _preempt_newest(
    q: np.ndarray, k: np.ndarray, run: np.ndarray, wq: np.ndarray, group: np.ndarray,
    prompt: np.ndarray, g_ref: np.ndarray,
) -> int:  # fmt: skip
    """Preempt the newest running sequence by recompute: its blocks freed, back to the queue's front."""
    v = run[k[NRUN] - 1]
    k[NRUN] -= 1
    k[FREE] += q[HELD, v]
    q[HELD, v] = 0
    if q[SHARED, v] > 0:
        g_ref[group[v]] -= 1
        q[SHARED, v] = 0
    q[COMPUTED, v] = 0
    q[PHASE, v] = 0
    q[TARGET, v] = prompt[v] + q[GENERATED, v]
    q[NPRE, v] += 1
    k[PREEMPTIONS] += 1
    k[HEAD] -= 1
    wq[k[HEAD]] = v
    return int(v)


def _take(
    q: np.ndarray, k: np.ndarray, f: np.ndarray, sched: np.ndarray, snew: np.ndarray, r: int,
    need: int, start: int, c_attn: float,
) -> None:  # fmt: skip
    """Schedule `need` new tokens of sequence `r` after `start` computed ones in this iteration."""
    sched[k[NS]] = r
    snew[k[NS]] = need
    k[NS] += 1
    k[TOKENS] += need
    f[ATTN] += c_attn * need * (2 * start + need)
    f[KVREAD] += start
    if q[PHASE, r] == 1:
        k[DECODES] += 1


def _schedule_running(
    q: np.ndarray, k: np.ndarray, f: np.ndarray, run: np.ndarray, wq: np.ndarray, sched: np.ndarray,
    snew: np.ndarray, group: np.ndarray, prompt: np.ndarray, g_cached: np.ndarray, g_ref: np.ndarray,
    g_blocks: np.ndarray, budget: int, chunked: int, block: int, spec_k: int, c_attn: float,
) -> None:  # fmt: skip
    """Running sequences, in admission order: a decode step each, or their prefill's next chunk."""
    i = 0
    while i < k[NRUN]:
        r = run[i]
        if q[PHASE, r] == 0:
            need = q[TARGET, r] - q[COMPUTED, r]
            if need > budget - k[TOKENS]:
                need = budget - k[TOKENS] if chunked == 1 else 0
        else:
            need = spec_k + 1
            if need > budget - k[TOKENS]:
                need = 0
        if need <= 0:
            return
        want = -(-(q[COMPUTED, r] + need) // block) - q[SHARED, r] // block - q[HELD, r]
        while want > k[FREE]:
            freed = _evict(g_cached, g_ref, g_blocks, -1)
            if freed >= 0:
                k[FREE] += freed
                continue
            k[SCANS] += 1
            if _preempt_newest(q, k, run, wq, group, prompt, g_ref) == r:
                return
        k[FREE] -= want
        q[HELD, r] += want
        _take(q, k, f, sched, snew, r, need, q[COMPUTED, r], c_attn)
        i += 1


def _admit_waiting(
    q: np.ndarray, k: np.ndarray, f: np.ndarray, run: np.ndarray, wq: np.ndarray, sched: np.ndarray,
    snew: np.ndarray, group: np.ndarray, group_tokens: np.ndarray, private_hit: np.ndarray,
    g_cached: np.ndarray, g_ref: np.ndarray, g_blocks: np.ndarray, max_seqs: int, budget: int,
    chunked: int, block: int, prefix_caching: int, c_attn: float,
) -> None:  # fmt: skip
    """Waiting sequences, oldest first (preempted ones sit at the front), while slots, tokens and blocks last."""
    while k[HEAD] < k[TAIL] and k[NRUN] < max_seqs and k[TOKENS] < budget:
        r = wq[k[HEAD]]
        g = group[r]
        hit = 0
        if q[COMPUTED, r] == 0 and prefix_caching == 1:
            if g >= 0 and g_cached[g] == 1:
                hit = group_tokens[g]
            if private_hit[r] > hit and q[GENERATED, r] == 0:
                hit = private_hit[r]
            if hit >= q[TARGET, r]:  # at least one token is computed to sample from
                hit = ((q[TARGET, r] - 1) // block) * block
        start = q[COMPUTED, r] if q[COMPUTED, r] > 0 else hit
        need = q[TARGET, r] - start
        if need > budget - k[TOKENS]:
            if chunked == 1:
                need = budget - k[TOKENS]
            elif k[TOKENS] > 0:
                return
        use_group = g >= 0 and hit > 0 and hit == group_tokens[g] and g_cached[g] == 1
        sh = hit if use_group else 0
        want = -(-(start + need) // block) - sh // block
        while want > k[FREE]:
            freed = _evict(g_cached, g_ref, g_blocks, g if use_group else -1)
            if freed < 0:
                k[SCANS] += 1
                return
            k[FREE] += freed
        k[HEAD] += 1
        k[ADMITTED] += 1
        k[FREE] -= want
        q[HELD, r] = want
        if use_group:
            q[SHARED, r] = sh
            g_ref[g] += 1
        q[COMPUTED, r] = start
        run[k[NRUN]] = r
        k[NRUN] += 1
        _take(q, k, f, sched, snew, r, need, start, c_attn)


def _advance(
    q: np.ndarray, k: np.ndarray, sched: np.ndarray, snew: np.ndarray, arrival: np.ndarray,
    output: np.ndarray, group: np.ndarray, group_tokens: np.ndarray, g_cached: np.ndarray,
    g_ref: np.ndarray, g_blocks: np.ndarray, ttft: np.ndarray, last: np.ndarray, hist: np.ndarray,
    end: float, prefix_caching: int, spec_k: int, spec_a: float, client: float, hist_lo: float,
    inv_log_ratio: float,
) -> int:  # fmt: skip
    """Every scheduled sequence computes its tokens at `end`; the output tokens this iteration emitted."""
    emitted = 0
    for j in range(k[NS]):
        r = sched[j]
        need = snew[j]
        if q[PHASE, r] == 0:
            q[COMPUTED, r] += need
            gr = group[r]
            if (
                prefix_caching == 1
                and gr >= 0
                and q[SHARED, r] == 0
                and g_cached[gr] == 0
                and group_tokens[gr] > 0
                and q[COMPUTED, r] >= group_tokens[gr]
            ):
                # this sequence computed the group's prefix: its first blocks become the cached prefix
                g_cached[gr] = 1
                g_ref[gr] += 1
                q[HELD, r] -= g_blocks[gr]
                q[SHARED, r] = group_tokens[gr]
            if q[COMPUTED, r] >= q[TARGET, r]:
                q[PHASE, r] = 1
                if q[GENERATED, r] == 0:
                    ttft[r] = end - arrival[r] + client
                else:
                    _hist_add(hist, end - last[r], 1, hist_lo, inv_log_ratio)
                q[GENERATED, r] += 1
                emitted += 1
                last[r] = end
        else:
            m = 1
            while m <= spec_k and np.random.random() < spec_a:
                m += 1
            if m > output[r] - q[GENERATED, r]:
                m = output[r] - q[GENERATED, r]
            q[COMPUTED, r] += m
            _hist_add(hist, (end - last[r]) / m, m, hist_lo, inv_log_ratio)
            q[GENERATED, r] += m
            emitted += m
            last[r] = end
            # blocks reserved for rejected draft slots are kept (vLLM frees them lazily)
    return emitted


def _retire(
    q: np.ndarray, k: np.ndarray, run: np.ndarray, output: np.ndarray, arrival: np.ndarray,
    group: np.ndarray, g_ref: np.ndarray, finish: np.ndarray, end: float, client: float,
) -> int:  # fmt: skip
    """Finished sequences leave, their blocks freed, the others keeping admission order; how many left."""
    kept = 0
    for j in range(k[NRUN]):
        r = run[j]
        if q[GENERATED, r] >= output[r]:
            finish[r] = end - arrival[r] + client
            k[FREE] += q[HELD, r]
            q[HELD, r] = 0
            if q[SHARED, r] > 0:
                g_ref[group[r]] -= 1
                q[SHARED, r] = 0
        else:
            run[kept] = r
            kept += 1
    left = k[NRUN] - kept
    k[NRUN] = kept
    return int(left)


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
    admit: float,  # engine s per request admitted from the waiting queue (slot and sampler set-up)
    client: float,  # s per request outside the engine (HTTP, template, tokenisation): TTFT and e2e
    per_seq: float,  # engine s per scheduled sequence beyond the first in an iteration
    spec_k: int,
    spec_a: float,
    spec_cost: float,
    seed: int,
    hist_lo: float,
    inv_log_ratio: float,
    nbins: int,
    max_work: int,  # stop after this much work (see the module's docstring): issue 28
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    np.random.seed(seed)
    n = arrival.shape[0]
    ng = group_tokens.shape[0]
    ttft = np.full(n, np.nan)
    finish = np.full(n, np.nan)
    hist = np.zeros(nbins, dtype=np.int64)
    q = np.zeros((7, n), dtype=np.int64)
    q[TARGET, :] = prompt
    last = np.zeros(n, dtype=np.float64)
    g_cached = np.zeros(max(ng, 1), dtype=np.int64)
    g_ref = np.zeros(max(ng, 1), dtype=np.int64)
    g_blocks = np.zeros(max(ng, 1), dtype=np.int64)
    for g in range(ng):
        g_blocks[g] = group_tokens[g] // block
    run = np.zeros(max_seqs + 1, dtype=np.int64)
    wq = np.zeros(3 * n + 2, dtype=np.int64)  # waiting deque: front insertions for preempted sequences
    sched = np.zeros(max_seqs + 1, dtype=np.int64)
    snew = np.zeros(max_seqs + 1, dtype=np.int64)
    k = np.zeros(10, dtype=np.int64)
    f = np.zeros(2, dtype=np.float64)
    k[HEAD] = k[TAIL] = n + 1
    k[FREE] = total_blocks
    nxt = done = iters = max_running = out_tokens = work = 0
    now = busy = 0.0
    while done < n and work < max_work:
        while nxt < n and arrival[nxt] <= now:
            wq[k[TAIL]] = nxt
            k[TAIL] += 1
            nxt += 1
        if k[NRUN] == 0 and k[HEAD] == k[TAIL]:
            now = arrival[nxt]
            continue
        k[TOKENS] = k[NS] = k[DECODES] = k[ADMITTED] = k[SCANS] = 0
        f[ATTN] = f[KVREAD] = 0.0
        # vLLM V0 without chunked prefill runs prefill-only iterations while any waiting sequence
        # can start, and decodes only when none can (`Scheduler._schedule_default`); with chunked
        # prefill, running sequences go first and new prompts fill the rest of the token budget.
        prefill_first = chunked == 0 and k[HEAD] < k[TAIL] and k[NRUN] < max_seqs
        if prefill_first:
            _admit_waiting(q, k, f, run, wq, sched, snew, group, group_tokens, private_hit, g_cached,
                           g_ref, g_blocks, max_seqs, budget, chunked, block, prefix_caching, c_attn)  # fmt: skip
        if k[NS] == 0:
            _schedule_running(q, k, f, run, wq, sched, snew, group, prompt, g_cached, g_ref, g_blocks,
                              budget, chunked, block, spec_k, c_attn)  # fmt: skip
            if not prefill_first:
                _admit_waiting(q, k, f, run, wq, sched, snew, group, group_tokens, private_hit,
                               g_cached, g_ref, g_blocks, max_seqs, budget, chunked, block,
                               prefix_caching, c_attn)  # fmt: skip
        if k[NS] == 0:  # nothing fits: wait for the next arrival (cannot happen with a sane KV size)
            if nxt < n:
                now = max(now, arrival[nxt])
                continue
            # a sequence larger than the whole cache: drop it, recorded as never answered
            k[HEAD] += 1
            done += 1
            continue
        max_running = max(max_running, k[NRUN])
        tokens = k[TOKENS]
        compute = (c_lin * tokens + f[ATTN]) / flops_rate
        memory = (w_bytes + (f[KVREAD] + tokens) * kvb) / bw_rate
        dt = max(compute, memory) + overhead + ar_tok * tokens + ar_fix + admit * k[ADMITTED]
        dt += per_seq * max(k[NS] - 1, 0)
        if k[DECODES] > 0 and spec_k > 0:
            dt *= 1.0 + spec_k * spec_cost
        end = now + dt
        busy += dt
        iters += 1
        work += ITERATION_WORK + k[NRUN] + k[SCANS] * (1 + (ng >> 4))
        out_tokens += _advance(q, k, sched, snew, arrival, output, group, group_tokens, g_cached, g_ref,
                               g_blocks, ttft, last, hist, end, prefix_caching, spec_k, spec_a, client,
                               hist_lo, inv_log_ratio)  # fmt: skip
        done += _retire(q, k, run, output, arrival, group, g_ref, finish, end, client)
        now = end
    stats = np.array([iters, k[PREEMPTIONS], max_running, busy, out_tokens, now, work], dtype=np.float64)
    return ttft, finish, q[NPRE].copy(), hist, stats


_HELPERS = ("_hist_add", "_evict", "_preempt_newest", "_take", "_schedule_running", "_admit_waiting",
            "_advance", "_retire")  # fmt: skip
_PYTHON = {name: globals()[name] for name in _HELPERS}
_compiled: Any = None


def run_python(*args: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The same loop as plain Python (for tests without numba and as the benchmark's peer): its
    helpers too, even after `run` compiled them (numba's random stream is not NumPy's)."""
    compiled = {name: globals()[name] for name in _HELPERS}
    globals().update(_PYTHON)
    try:
        return _run(*args)
    finally:
        globals().update(compiled)


def run(*args: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The loop compiled by numba on first use (cached on disk), else plain Python."""
    global _compiled
    if _compiled is None:
        try:
            import numba
        except ImportError:  # pragma: no cover - numba is a dependency
            _compiled = _run
        else:
            for name in _HELPERS:  # compiled first: the loop calls them as compiled functions
                globals()[name] = numba.njit(cache=True)(globals()[name])
            _compiled = numba.njit(cache=True, nogil=True)(_run)
    out: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray] = _compiled(*args)
    return out
