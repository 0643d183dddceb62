"""The continuous-batching simulation of an LLM engine: per-request arrivals in, per-request TTFT/TPOT/e2e out.

A standalone API (`simulate`) over one `Replica` (archkit.perf.llm.model): arrival times, prompt and
output lengths in; each request's TTFT and end-to-end time, preemptions, an inter-token-latency
histogram and the run's counters out. `workload` draws the arrays from a spec's `llm.workload`
(deterministic per seed); `summarise` turns a run into percentiles, throughput and goodput.
Several replicas behind a random load balancer are independent thinned streams (`simulate_replicas`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from archkit import llm_lengths
from archkit.perf.llm import sim_kernel
from archkit.perf.llm.model import Replica
from archkit.spec.llm import Arrivals, LlmWorkload, TokenLengths

# ITL histogram: log-spaced bins from 10 us, each 0.5 % wider than the last, up to ~10^3 s.
_HIST_LO = 1e-5
_HIST_RATIO = 1.005
_HIST_BINS = 4_700

# Work one engine run may do (`sim_kernel`: an iteration counts `ITERATION_WORK` + its running
# sequences, a scan for a prefix to evict counts the groups scanned): issue 28 wants `check` within
# 2 s, and one run (the `check` rules' prediction) is its largest part. ~19-28 ns a unit whatever the
# batch (2026-12-03 15:07 UTC, load ~3.3, 4,000 requests on rag-chat's engine and the fuzz
# reproducers' shapes), so ~0.6-0.9 CPU s; the largest run of examples/rag-chat.yaml's or
# specs/llm-reference.yaml's analysis is ~12.3M units (2.6x headroom).
# A run that spends it stops; its unfinished requests stay unanswered (NaN).
RUN_WORK = 32_000_000
# What one engine run costs beside its iterations (the requests' arrays, the kernel's call and its
# result), in the same unit: ~45-64 us a run of 1-4 requests on rag-chat's engine, ~2,200-3,200
# units at ~20 ns a unit (2026-12-03 17:04 UTC, load ~11, `heavy`, 2,000 runs each). A pipeline's
# co-simulation runs one engine per replica each pass: `replicas: 4999` made 49,070 runs of a few
# requests each, whose fixed cost no budget counted (issue 28). `simulate_replicas` charges it.
RUN_OVERHEAD_WORK = 2_500
_UNLIMITED = 2**62


@dataclass(frozen=True)
class Requests:
    """Per-request inputs of a simulation run."""

    arrival_s: np.ndarray  # float64, sorted
    prompt: np.ndarray  # int64
    output: np.ndarray  # int64, >= 1
    group: np.ndarray  # int64 shared-prefix group, -1 none
    group_tokens: np.ndarray  # int64 per group: cacheable prefix (block-aligned by `simulate`)
    private_hit: np.ndarray  # int64: tokens cached for this request alone (earlier turns)

    @staticmethod
    def plain(arrival_s: np.ndarray, prompt: np.ndarray, output: np.ndarray) -> Requests:
        n = len(arrival_s)
        return Requests(
            np.asarray(arrival_s, dtype=np.float64),
            np.asarray(prompt, dtype=np.int64),
            np.maximum(np.asarray(output, dtype=np.int64), 1),
            np.full(n, -1, dtype=np.int64),
            np.zeros(0, dtype=np.int64),
            np.zeros(n, dtype=np.int64),
        )

    def take(self, mask: np.ndarray) -> Requests:  # a boolean mask or indices
        return Requests(
            self.arrival_s[mask], self.prompt[mask], self.output[mask], self.group[mask],
            self.group_tokens, self.private_hit[mask],
        )  # fmt: skip


@dataclass
class SimRun:
    """One simulated run: per-request results (seconds; NaN where a request never finished) and counters."""

    requests: Requests
    ttft_s: np.ndarray
    e2e_s: np.ndarray
    preemptions: np.ndarray
    itl_hist: np.ndarray
    iterations: int
    total_preemptions: int
    max_running: int
    busy_s: float
    output_tokens: int
    end_s: float
    work: int = 0  # `sim_kernel` work units spent
    truncated: bool = False  # the run stopped at its work limit with requests unanswered

    @property
    def tpot_s(self) -> np.ndarray:
        """Per request: (e2e - TTFT) / (output tokens - 1); NaN for one-token answers."""
        out = self.requests.output.astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(out > 1, (self.e2e_s - self.ttft_s) / (out - 1), np.nan)

    def itl_percentile(self, q: float) -> float:
        """The q-th percentile (0-100) of inter-token latency over all tokens, from the histogram (0.5 %)."""
        total = int(self.itl_hist.sum())
        if total == 0:
            return math.nan
        rank = q / 100 * total
        b = int(np.searchsorted(np.cumsum(self.itl_hist), max(rank, 1)))
        # the bin's geometric middle
        lo = _HIST_LO * _HIST_RATIO ** (b - 1) if b > 0 else _HIST_LO
        return lo * math.sqrt(_HIST_RATIO) if b > 0 else _HIST_LO


def dense_groups(group: np.ndarray, group_tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The groups `group` uses, renumbered 0..k-1 in their order, and their prefix lengths.

    The kernel scans every group when it looks for a cached prefix to evict, so a spec's
    `shared_prefix.groups` (up to 1,000,000) would cost that many steps per eviction attempt, most
    of them on groups no simulated request drew (issue 28: 5.8 CPU s for rag-chat at 1,000,000
    groups). A group no request uses is never cached, and the renumbering keeps the order the
    kernel evicts in (lowest index first), so the run is the same with at most one group per
    request."""
    used = group >= 0
    ids, inverse = np.unique(group[used], return_inverse=True)
    dense = np.full(len(group), -1, dtype=np.int64)
    dense[used] = inverse
    return dense, np.asarray(group_tokens[ids], dtype=np.int64)


def simulate(
    rep: Replica, req: Requests, *, seed: int = 0, kv_blocks: int | None = None, max_work: int | None = None
) -> SimRun:
    """Run the iteration-level scheduler of one replica over `req`, stopping after `max_work` units
    of work (`SimRun.truncated`; None: no limit, for a caller that sized the run itself, such as a
    benchmark; the capacity analysis and the pipeline pass theirs)."""
    max_work = _UNLIMITED if max_work is None else max_work
    block = rep.block_size
    group, group_tokens = dense_groups(req.group, req.group_tokens)
    gt = (group_tokens // block) * block
    blocks = rep.kv_blocks if kv_blocks is None else kv_blocks
    ar_tok = ar_fix = 0.0
    if rep.tensor > 1:
        ar_fix = rep.allreduce_s(0)
        ar_tok = rep.allreduce_s(1) - ar_fix
    ttft, e2e, npre, hist, stats = sim_kernel.run(
        req.arrival_s, req.prompt, req.output, group, gt.astype(np.int64), req.private_hit,
        rep.max_num_seqs, rep.max_num_batched_tokens, int(rep.chunked_prefill), block, blocks,
        int(rep.prefix_caching),
        2 * rep.arch.parameters, 2.0 * rep.arch.layers * rep.arch.hidden_size, rep.weight_bytes,
        rep.kv_bytes_per_token, rep.peak_flops * rep.prefill_mfu, rep.bandwidth * rep.decode_bandwidth,
        rep.step_overhead_s, ar_tok, ar_fix, rep.request_overhead_s, rep.client_overhead_s,
        rep.sequence_overhead_s, rep.spec_k, rep.spec_acceptance, rep.spec_draft_cost, seed,
        _HIST_LO, 1 / math.log(_HIST_RATIO), _HIST_BINS, max(int(max_work), 0),
    )  # fmt: skip
    work = int(stats[6])
    return SimRun(
        req, ttft, e2e, npre, hist, int(stats[0]), int(stats[1]), int(stats[2]), float(stats[3]),
        int(stats[4]), float(stats[5]), work, work >= max_work and bool(np.isnan(e2e).any()),
    )  # fmt: skip


# --------------------------------------------------------------------------- workload


def _lengths(dist: TokenLengths, n: int, rng: np.random.Generator, base: Path | None) -> np.ndarray:
    cdf: list[tuple[float, float]] = []
    if dist.distribution == "empirical" and not dist.cdf:
        path = Path(dist.cdf_file or "")
        cdf = llm_lengths.read_cdf(path if path.is_absolute() or base is None else base / path)
    return llm_lengths.draw(dist, n, rng, cdf)


def arrivals(arr: Arrivals, rate_rps: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """n arrival times: Poisson, or gamma inter-arrivals with shape `burstiness` (vLLM bench's definition)."""
    if arr.process == "gamma":
        k = arr.burstiness
        gaps = rng.gamma(k, 1.0 / (k * rate_rps), size=n)
    else:
        gaps = rng.exponential(1.0 / rate_rps, size=n)
    return np.cumsum(gaps)


def workload(
    wl: LlmWorkload, rate_rps: float, n: int, *, seed: int = 0, base: Path | None = None
) -> Requests:
    """Requests drawn from a spec's workload at `rate_rps` (trace: its recorded times and lengths)."""
    rng = np.random.default_rng(seed)
    if wl.arrivals.process == "trace":
        t = _read_trace(Path(wl.arrivals.trace_file or ""), base)
        n = len(t)
        arr = np.array([r[0] for r in t], dtype=np.float64)
        prompt = np.array([r[1] if r[1] else 0 for r in t], dtype=np.int64)
        out = np.array([r[2] if r[2] else 0 for r in t], dtype=np.int64)
        draw_p, draw_o = _lengths(wl.prompt_tokens, n, rng, base), _lengths(wl.output_tokens, n, rng, base)
        prompt = np.where(prompt > 0, prompt, draw_p)
        out = np.where(out > 0, out, draw_o)
        order = np.argsort(arr, kind="stable")
        req = Requests.plain(arr[order], prompt[order], out[order])
    else:
        turns = wl.multi_turn.turns if wl.multi_turn else 1
        convs = -(-n // turns)
        starts = arrivals(wl.arrivals, rate_rps / turns, convs, rng)
        prompt = _lengths(wl.prompt_tokens, convs * turns, rng, base)
        out = _lengths(wl.output_tokens, convs * turns, rng, base)
        arr = np.repeat(starts, turns)
        hit = np.zeros(convs * turns, dtype=np.int64)
        if turns > 1 and wl.multi_turn is not None:
            # turn t carries the earlier turns' prompts and answers; they are cached for it alone
            think = wl.multi_turn.think_time_s
            p2, o2 = prompt.reshape(convs, turns), out.reshape(convs, turns)
            ctx = np.cumsum(p2 + o2, axis=1) - (p2 + o2)
            hit = ctx.reshape(-1)
            prompt = (ctx + p2).reshape(-1)
            arr = arr + (np.arange(convs * turns) % turns) * think
        order = np.argsort(arr, kind="stable")[:n]
        req = Requests.plain(arr[order], prompt[order], out[order])
        req = Requests(req.arrival_s, req.prompt, req.output, req.group, req.group_tokens, hit[order])
    return _with_prefix(wl, req, rng)


def _with_prefix(wl: LlmWorkload, req: Requests, rng: np.random.Generator) -> Requests:
    """Each request joins a shared-prefix group with the workload's share (its prompt then holds the prefix)."""
    sp = wl.shared_prefix
    if sp is None:
        return req
    uses = rng.random(len(req.arrival_s)) < sp.share
    group = np.where(uses, rng.integers(0, sp.groups, size=len(req.arrival_s)), -1).astype(np.int64)
    prompt = np.where(uses, np.maximum(req.prompt, sp.tokens + 1), req.prompt).astype(np.int64)
    return Requests(
        req.arrival_s,
        prompt,
        req.output,
        group,
        np.full(sp.groups, sp.tokens, dtype=np.int64),
        req.private_hit,
    )


def for_arrivals(
    wl: LlmWorkload, arrival_s: np.ndarray, *, seed: int = 0, base: Path | None = None
) -> Requests:
    """Requests at given (sorted) arrival times, lengths and prefix groups drawn from `wl`: the visits a
    pipeline sends to an LLM stage. Multi-turn context is not drawn (each visit is one turn)."""
    rng = np.random.default_rng(seed)
    n = len(arrival_s)
    prompt = _lengths(wl.prompt_tokens, n, rng, base)
    out = _lengths(wl.output_tokens, n, rng, base)
    return _with_prefix(wl, Requests.plain(arrival_s, prompt, out), rng)


def _read_trace(path: Path, base: Path | None) -> list[tuple[float, int, int]]:
    p = path if path.is_absolute() or base is None else base / path
    rows = []
    for line in p.read_text().splitlines():
        parts = [x.strip() for x in line.split(",")]
        try:
            t = float(parts[0])
        except ValueError:
            continue  # a header
        pr = int(parts[1]) if len(parts) > 1 and parts[1] else 0
        ou = int(parts[2]) if len(parts) > 2 and parts[2] else 0
        rows.append((t, pr, ou))
    return rows


def _pick(req: Requests, replicas: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed + 1).integers(0, replicas, size=len(req.arrival_s))


def _by_replica(pick: np.ndarray, replicas: int) -> list[np.ndarray]:
    """Each replica's request indices in arrival order: one stable sort, not a scan per replica
    (issue 28: `replicas: 4999` scanned 20,000 requests 4,999 times per co-simulated visit)."""
    order = np.argsort(pick, kind="stable")
    bounds = np.searchsorted(pick[order], np.arange(replicas + 1))
    return [order[bounds[i] : bounds[i + 1]] for i in range(replicas)]


def simulate_replicas(
    rep: Replica, req: Requests, replicas: int, *, seed: int = 0, max_work: int = RUN_WORK
) -> list[SimRun]:
    """Requests spread at random over `replicas` independent engines (a Kubernetes Service), the
    engines' runs sharing `max_work`, each run charged its work plus RUN_OVERHEAD_WORK. A replica
    after it is spent is not simulated: its run is empty but for its requests, all unanswered
    (`SimRun.truncated`, `work` 0). An engine that draws no request is not simulated (an empty
    run, not truncated)."""
    return _replica_runs(rep, req, _groups(req, replicas, seed), seed, max_work)[0]


def _groups(req: Requests, replicas: int, seed: int) -> list[np.ndarray]:
    """Each replica's request indices in arrival order (one replica: all of them)."""
    if replicas == 1:
        return [np.arange(len(req.arrival_s))]
    return _by_replica(_pick(req, replicas, seed), replicas)


def _replica_runs(
    rep: Replica, req: Requests, groups: list[np.ndarray], seed: int, max_work: int
) -> tuple[list[SimRun], int]:
    """`simulate_replicas`' runs and the work they were charged."""
    runs, spent = [], 0
    for i, idx in enumerate(groups):
        sub = req if len(groups) == 1 else req.take(idx)  # indices in arrival order (a stable sort)
        if not len(idx) or spent >= max_work:
            runs.append(_empty(sub, unanswered=len(idx) > 0))
            continue
        runs.append(simulate(rep, sub, seed=seed + i, max_work=max_work - spent))
        spent += runs[-1].work + RUN_OVERHEAD_WORK
    return runs, spent


def _empty(req: Requests, unanswered: bool = False) -> SimRun:
    """The run of an engine not simulated: none of `req` answered (NaN), truncated when it had any."""
    n = len(req.arrival_s)
    return SimRun(
        req,
        np.full(n, np.nan),
        np.full(n, np.nan),
        np.zeros(n, dtype=np.int64),
        np.zeros(_HIST_BINS, dtype=np.int64),
        0,
        0,
        0,
        0.0,
        0,
        0.0,
        truncated=unanswered,
    )


@dataclass(frozen=True)
class Served:
    """Each request's TTFT and end-to-end time over several engines (`per_request`), in its order."""

    ttft_s: np.ndarray
    e2e_s: np.ndarray
    answered: np.ndarray  # bool: False where the work limit came first (its engine stopped, or never ran)
    work: int  # units spent, RUN_OVERHEAD_WORK a run included
    replicas: int  # engines that drew a request
    cut: int  # of them: stopped by the work limit, or never simulated


def per_request(
    rep: Replica, req: Requests, replicas: int, *, seed: int = 0, max_work: int = RUN_WORK
) -> Served:
    """Each request's TTFT and end-to-end time (s), in `req`'s order, over `replicas` engines that
    share `max_work` (`simulate_replicas`).

    A request its engine never answered (larger than the whole KV cache) is given the time to the
    end of its engine's run: the pipeline sees it answered last rather than never. One the work
    limit left unanswered (its engine stopped, or never ran) is not answered (`Served.answered`):
    its times are NaN, never 0."""
    groups = _groups(req, replicas, seed)
    runs, work = _replica_runs(rep, req, groups, seed, max_work)
    n = len(req.arrival_s)
    ttft, e2e, answered = np.full(n, np.nan), np.full(n, np.nan), np.ones(n, dtype=bool)
    drew = cut = 0
    for idx, r in zip(groups, runs, strict=True):
        if not len(idx):
            continue
        drew += 1
        cut += r.truncated
        late = np.maximum(r.end_s - r.requests.arrival_s, 0.0)
        left = ~np.isfinite(r.e2e_s) if r.truncated else np.zeros(len(idx), dtype=bool)
        answered[idx] = ~left
        ttft[idx] = np.where(np.isfinite(r.ttft_s), r.ttft_s, np.where(left, np.nan, late))
        e2e[idx] = np.where(np.isfinite(r.e2e_s), r.e2e_s, np.where(left, np.nan, late))
    return Served(ttft, e2e, answered, int(work), drew, cut)


# --------------------------------------------------------------------------- summaries


@dataclass(frozen=True)
class Summary:
    """Percentiles (ms), throughput and goodput of a run (or of several replicas' runs together)."""

    requests: int
    finished: int
    ttft_ms: dict[str, float]
    itl_ms: dict[str, float]
    tpot_ms: dict[str, float]
    e2e_ms: dict[str, float]
    output_tokens_per_s: float
    requests_per_s: float
    slo_attainment: float | None
    goodput_rps: float | None
    preemptions: int
    max_running: int
    duration_s: float
    notes: list[str] = field(default_factory=list)


_QS = {"p50": 50.0, "p95": 95.0, "p99": 99.0}


def _pcts(x: np.ndarray) -> dict[str, float]:
    x = x[np.isfinite(x)]
    if len(x) == 0:
        return {k: math.nan for k in _QS}
    return {k: float(np.percentile(x, q)) * 1000 for k, q in _QS.items()}


def summarise(
    runs: list[SimRun], *, slo_ttft_ms: float | None = None, slo_tpot_ms: float | None = None
) -> Summary:
    """One summary of several replicas' runs; SLO attainment when an objective is given."""
    ttft = np.concatenate([r.ttft_s for r in runs])
    e2e = np.concatenate([r.e2e_s for r in runs])
    tpot = np.concatenate([r.tpot_s for r in runs])
    arr = np.concatenate([r.requests.arrival_s for r in runs])
    hist = np.sum([r.itl_hist for r in runs], axis=0)
    merged = SimRun(runs[0].requests, ttft, e2e, np.zeros(0), hist, 0, 0, 0, 0.0, 0, 0.0)
    end = max(r.end_s for r in runs)
    start = float(arr.min()) if len(arr) else 0.0
    duration = max(end - start, 1e-9)
    finished = int(np.isfinite(e2e).sum())
    attain = goodput = None
    if slo_ttft_ms is not None or slo_tpot_ms is not None:
        ok = np.isfinite(e2e)
        if slo_ttft_ms is not None:
            ok &= ttft * 1000 <= slo_ttft_ms
        if slo_tpot_ms is not None:
            ok &= ~(tpot * 1000 > slo_tpot_ms)  # NaN TPOT (one-token answers) meets it
        attain = float(ok.mean()) if len(ok) else None
        goodput = float(ok.sum()) / duration
    return Summary(
        requests=len(e2e),
        finished=finished,
        ttft_ms=_pcts(ttft),
        itl_ms={k: merged.itl_percentile(q) * 1000 for k, q in _QS.items()},
        tpot_ms=_pcts(tpot),
        e2e_ms=_pcts(e2e),
        output_tokens_per_s=sum(r.output_tokens for r in runs) / duration,
        requests_per_s=finished / duration,
        slo_attainment=attain,
        goodput_rps=goodput,
        preemptions=sum(r.total_preemptions for r in runs),
        max_running=max(r.max_running for r in runs),
        duration_s=duration,
    )
