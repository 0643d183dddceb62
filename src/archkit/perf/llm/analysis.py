"""The LLM section of a spec's capacity analysis: one `LlmAnalysis` per `kind: llm` stage.

Memory breakdown, KV capacity and concurrency, a step-time table, the steady-state capacity, the
simulated TTFT/ITL/TPOT/e2e percentiles at the design rate against the budgets, goodput, the
highest rate at which 90 % of requests meet the SLOs, the knee, the binding constraint and (when a
budget is missed) the cheapest configuration that meets them. Deterministic: fixed seeds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from archkit.errors import ArchkitError
from archkit.perf.llm import sim
from archkit.perf.llm.model import GB, Replica, replica
from archkit.spec.llm import LlmStage
from archkit.spec.llm_catalogue import ACCELERATORS, AcceleratorSpec
from archkit.spec.model import Spec, Stage

SIM_REQUESTS = 8_000  # requests per predicted run: P99 from 8,000 samples rests on 80 of them
SEARCH_REQUESTS = 2_500  # per probe of a rate or configuration search
REFINE_STEPS = 3  # bisections of the knee sweep's last step (to 1/8 of it: 0.6 % of the capacity)
ATTAINMENT_TARGET = 0.9  # "the highest rate at which at least 90 % meet the SLOs" (issue 30)
_CANDIDATE_GPUS = ("L4", "A10G", "L40S", "A100-40GB", "A100-80GB", "H100-SXM", "H200")
_CANDIDATE_TP = (1, 2, 4, 8)
_CANDIDATE_SEQS = (64, 128, 256, 512)
_CANDIDATE_CHUNK = (512, 2048, 8192)
# issue 28: the analysis's simulations share one budget of work (`sim.RUN_WORK`'s unit), drawn from
# `archkit capacity --sim-budget` (pipeline events) at this rate: an event of the pipeline's loop
# costs ~0.6 us, a unit of the engine's ~0.02 us (an iteration counted as `sim_kernel.ITERATION_WORK`
# + its running sequences; docs/benchmarks.md), so the default 4,000,000 events give the LLM
# analysis 80,000,000 units, ~1.5 CPU s beside the pipeline's ~2.5 s: examples/rag-chat.yaml's
# analysis spends 43.5M units, specs/llm-reference.yaml's 53.5M (1.5x headroom).
WORK_PER_EVENT = 20
DEFAULT_EVENTS = 4_000_000  # perf.pipeline.SIM_BUDGET (not imported: that loads the pipeline)
MAX_EVENTS = 400_000_000  # perf.pipeline.MAX_SIM_BUDGET


class _Spent(ArchkitError):
    """The work budget ran out: a search stops with what it has (caught here, never escapes)."""


@dataclass
class WorkBudget:
    """Work the LLM analysis may spend on simulations, all stages together (`sim.RUN_WORK`'s unit).

    `events` is the `--sim-budget` it was drawn from (the raise-it hint names that flag); `before`,
    the units other simulations of the same run spent of it first (`archkit capacity`'s pipeline
    prediction: one budget for the whole run, issue 28), counted in `spent` from the start."""

    events: int = DEFAULT_EVENTS
    spent: int = 0
    before: int = 0
    cut: str | None = None  # what the budget cut short last
    cuts: int = 0  # how many simulations it cut short or refused

    @property
    def total(self) -> int:
        return self.events * WORK_PER_EVENT

    @property
    def left(self) -> int:
        return max(self.total - self.spent, 0)

    def simulate(self, what: str, rep: Replica, req: sim.Requests, seed: int, partial: bool) -> sim.SimRun:
        """One run within what is left (and `sim.RUN_WORK`); raises _Spent when nothing is left or the
        run was cut short, unless `partial` (the caller reports a cut-short run itself)."""
        if self.left <= 0:
            self.cut, self.cuts = what, self.cuts + 1
            raise _Spent
        run = sim.simulate(rep, req, seed=seed, max_work=min(self.left, sim.RUN_WORK))
        self.spent += run.work
        if run.truncated:
            self.cut, self.cuts = what, self.cuts + 1
            if not partial:
                raise _Spent
        return run

    def __post_init__(self) -> None:
        self.spent = max(self.spent, self.before)

    def note(self) -> str:
        raise_it = min(MAX_EVENTS, 4 * self.events)
        shared = f"; the pipeline's simulation spent {self.before:,} of them first" if self.before else ""
        return (
            f"the LLM simulations stopped at their work budget ({self.total:,} units, from "
            f"--sim-budget {self.events:,}{shared}) in {self.cut}; raise it with "
            f"`archkit capacity --sim-budget {raise_it}`"
        )


@dataclass(frozen=True)
class BudgetVerdict:
    """One token-level budget against its prediction."""

    name: str  # e.g. "ttft_p99_ms"
    budget: float
    predicted: float
    higher_is_better: bool = False

    @property
    def met(self) -> bool:
        if math.isnan(self.predicted):
            return False
        return self.predicted >= self.budget if self.higher_is_better else self.predicted <= self.budget


@dataclass(frozen=True)
class Recommendation:
    """The cheapest configuration found that meets every budget (fewest GPUs, then the smaller device)."""

    gpu: str
    tensor: int
    replicas: int
    max_num_seqs: int
    max_num_batched_tokens: int
    gpus: int
    summary: sim.Summary

    def text(self) -> str:
        return (
            f"{self.replicas} x {self.gpu} TP{self.tensor} (max_num_seqs {self.max_num_seqs}, "
            f"max_num_batched_tokens {self.max_num_batched_tokens}): {self.gpus} GPU(s)"
        )


@dataclass
class LlmAnalysis:
    """Everything archkit predicts for one LLM stage."""

    stage: Stage
    llm: LlmStage
    device: AcceleratorSpec | None
    rep: Replica | None
    replicas: int
    rate_rps: float | None
    prompt_mean: float
    output_mean: float
    prompt_max: int
    fits: bool = False
    concurrency: int = 0
    concurrency_binds: str = ""
    capacity_rps: float = 0.0  # steady-state throughput of one replica
    step_table: list[tuple[int, int, float]] = field(default_factory=list)  # (batch, context, ms)
    prefill_ms: float = 0.0  # the mean prompt, alone
    summary: sim.Summary | None = None
    verdicts: list[BudgetVerdict] = field(default_factory=list)
    max_rate_90_rps: float | None = None  # per replica
    knee_rps: float | None = None  # per replica
    binding: str = ""
    recommendation: Recommendation | None = None
    notes: list[str] = field(default_factory=list)
    budget_note: str | None = None  # the work budget stopped a simulation or search (issue 28)

    @property
    def missed(self) -> list[BudgetVerdict]:
        return [v for v in self.verdicts if not v.met]

    @property
    def gpus(self) -> int:
        return self.replicas * (self.rep.gpus if self.rep else 1)

    def memory(self) -> dict[str, float]:
        """Per GPU, GB: device, usable (x utilisation), weights, activation reserve, KV cache."""
        if self.rep is None or self.device is None:
            return {}
        r = self.rep
        return {
            "device_gb": self.device.memory_gb,
            "usable_gb": r.usable_bytes_per_gpu / GB,
            "weights_gb": r.weight_bytes_per_gpu / GB,
            "reserve_gb": r.reserve_bytes_per_gpu / GB,
            "kv_gb": max(r.kv_capacity_bytes_per_gpu, 0) / GB,
        }


def device_of(spec: Spec, stage: Stage) -> AcceleratorSpec | None:
    """The stage's accelerator: its own `llm.accelerator`, else its service's node-pool GPU model."""
    assert stage.llm is not None
    default = None
    svc = spec.service(stage.service) if stage.service else None
    pool = spec.pool(svc.pool) if svc else None
    if pool is not None and pool.gpu is not None:
        default = pool.gpu.model
        if stage.llm.accelerator.mig_profile is None and pool.gpu.mig_profile:
            acc = stage.llm.accelerator.model_copy(update={"mig_profile": pool.gpu.mig_profile})
            return acc.resolve(default)
    return stage.llm.accelerator.resolve(default)


def design_rate(spec: Spec, stage: Stage) -> float | None:
    assert stage.llm is not None
    if stage.llm.workload.arrivals.rate_rps is not None:
        return stage.llm.workload.arrivals.rate_rps
    if spec.budgets.throughput_rps is not None:
        return spec.budgets.throughput_rps * stage.items_per_request
    return None


def _slo(llm: LlmStage) -> tuple[float | None, float | None]:
    b = llm.budgets
    return (b.slo_ttft_ms or b.ttft_p99_ms, b.slo_tpot_ms or b.tpot_ms)


def _verdicts(llm: LlmStage, s: sim.Summary, replicas: int) -> list[BudgetVerdict]:
    b = llm.budgets
    pairs = [
        ("ttft_p50_ms", b.ttft_p50_ms, s.ttft_ms["p50"]),
        ("ttft_p99_ms", b.ttft_p99_ms, s.ttft_ms["p99"]),
        ("itl_p50_ms", b.itl_p50_ms, s.itl_ms["p50"]),
        ("itl_p99_ms", b.itl_p99_ms, s.itl_ms["p99"]),
        ("tpot_ms", b.tpot_ms, s.tpot_ms["p99"]),
        ("e2e_p50_ms", b.e2e_p50_ms, s.e2e_ms["p50"]),
        ("e2e_p99_ms", b.e2e_p99_ms, s.e2e_ms["p99"]),
    ]
    out = [BudgetVerdict(n, bud, pred) for n, bud, pred in pairs if bud is not None]
    if b.output_tokens_per_s is not None:
        out.append(
            BudgetVerdict(
                "output_tokens_per_s", b.output_tokens_per_s, s.output_tokens_per_s * replicas, True
            )
        )
    if b.slo_attainment is not None and s.slo_attainment is not None:
        out.append(BudgetVerdict("slo_attainment", b.slo_attainment, s.slo_attainment, True))
    return out


def capacity_rps(rep: Replica, prompt: float, output: float) -> float:
    """Steady-state requests/s of one replica with every slot busy: a fixed point of the iteration time.

    B sequences decode (B = KV- or max_num_seqs-bound concurrency) while prefill tokens arrive at
    rate x prompt, each arriving request adding the engine's per-request set-up to the iteration
    that admits it; each request needs output / tokens-per-step decode iterations.
    """
    b, _ = rep.max_concurrency(int(prompt + output))
    if b <= 0:
        return 0.0
    ctx = prompt + output / 2
    lam = 0.0
    for _ in range(60):
        tau = rep.decode_step_s(b, int(ctx))
        pre = min(lam * tau * prompt, max(rep.max_num_batched_tokens - b, 0))
        tau += rep.iteration_s(int(pre), rep.attn_flops(int(prompt), 0) * pre / max(prompt, 1), 0) - (
            rep.step_overhead_s + rep.allreduce_s(0)
        )
        tau += lam * tau * rep.request_overhead_s
        lam = b * rep.tokens_per_step / (output * tau)
    return lam


def _run(
    rep: Replica,
    llm: LlmStage,
    rate: float,
    n: int,
    base: Path | None,
    work: WorkBudget,
    what: str,
    *,
    partial: bool = False,
    seed: int = 0,
) -> sim.Summary:
    req = sim.workload(llm.workload, rate, n, seed=seed, base=base)
    ttft, tpot = _slo(llm)
    run = work.simulate(what, rep, req, seed, partial)
    return sim.summarise([run], slo_ttft_ms=ttft, slo_tpot_ms=tpot)


def _meets(llm: LlmStage, s: sim.Summary, replicas: int) -> bool:
    return all(v.met for v in _verdicts(llm, s, replicas)) and s.finished == s.requests


def max_rate_meeting(
    rep: Replica, llm: LlmStage, cap: float, base: Path | None, work: WorkBudget | None = None
) -> float | None:
    """Per replica: the highest rate at which >= 90 % of requests meet the SLO objectives (bisection).

    When `work` runs out the bisection stops at the highest rate it has seen meet them (a lower
    bound; None when it saw none)."""
    ttft, tpot = _slo(llm)
    if ttft is None and tpot is None or cap <= 0:
        return None
    budget = work or WorkBudget()

    def ok(rate: float) -> bool:
        s = _run(rep, llm, rate, SEARCH_REQUESTS, base, budget, "the search for the 90 % SLO rate")
        return (s.slo_attainment or 0) >= ATTAINMENT_TARGET

    lo, hi = 0.0, cap * 1.2
    try:
        if not ok(cap * 0.02):
            return 0.0
        lo = cap * 0.02
        for _ in range(10):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    except _Spent:
        return lo or None
    return lo


def knee_rps(
    rep: Replica, llm: LlmStage, cap: float, base: Path | None, work: WorkBudget | None = None
) -> float | None:
    """Per replica: the last rate before TTFT P99 doubles over its light-load value (a sweep of the capacity).

    When `work` runs out the sweep stops at the last rate it saw below the doubling (a lower bound;
    None before the light-load run)."""
    if cap <= 0:
        return None
    budget = work or WorkBudget()
    what = "the knee sweep"
    try:
        light = _run(rep, llm, cap * 0.05, SEARCH_REQUESTS, base, budget, what).ttft_ms["p99"]
    except _Spent:
        return None
    prev = cap * 0.05
    for frac in np.arange(0.1, 1.25, 0.05):
        try:
            p99 = _run(rep, llm, cap * float(frac), SEARCH_REQUESTS, base, budget, what).ttft_ms["p99"]
        except _Spent:
            return prev
        if p99 > 2 * light:
            return _refine(rep, llm, prev, cap * float(frac), 2 * light, base, budget)
        prev = cap * float(frac)
    return prev


def _refine(
    rep: Replica, llm: LlmStage, lo: float, hi: float, limit: float, base: Path | None, budget: WorkBudget
) -> float:
    """The knee between the sweep's last rate below the doubling (`lo`) and its first above (`hi`).

    The sweep's step is 5 % of the capacity, which is coarse where the knee lies far below it: with
    two slots and short answers (specs/llm-reference.yaml: capacity 4.5 req/s, knee ~0.9 req/s)
    one step is a quarter of the knee, and reporting `lo` put the knee 28 % under the rate at which
    8,000 simulated requests' TTFT P99 doubles (docs/benchmarks.md, LLM Fidelity). Bisection to an
    eighth of a step; `lo` again when the work budget runs out."""
    for _ in range(REFINE_STEPS):
        mid = (lo + hi) / 2
        try:
            p99 = _run(rep, llm, mid, SEARCH_REQUESTS, base, budget, "the knee sweep").ttft_ms["p99"]
        except _Spent:
            return lo
        lo, hi = (lo, mid) if p99 > limit else (mid, hi)
    return lo


def predicted_knee(
    spec: Spec, stage: Stage, base: Path | None = None, work: WorkBudget | None = None
) -> float | None:
    """The stage's knee over all its replicas (`knee_rps` × replicas), without the rest of the
    analysis: where a load test's knee search starts (None when the weights do not fit or no
    accelerator is known)."""
    llm = stage.llm
    assert llm is not None
    dev = device_of(spec, stage)
    if dev is None:
        return None
    rep = replica(llm, dev)
    draw = sim.workload(llm.workload, 1.0, 4_000, seed=7, base=base)  # analyse's draw: the same means
    prompt, output = float(np.mean(draw.prompt)), float(np.mean(draw.output))
    if rep.kv_blocks < rep.blocks_for(int(prompt + output)):
        return None
    knee = knee_rps(rep, llm, capacity_rps(rep, prompt, output), base, work)
    return knee * _replicas(spec, stage) if knee else None


def _replicas(spec: Spec, stage: Stage) -> int:
    assert stage.llm is not None
    svc = spec.service(stage.service) if stage.service else None
    return stage.llm.parallelism.replicas or (svc.replicas if svc and svc.replicas else 1)


def _binding(a: LlmAnalysis) -> str:
    rep, llm = a.rep, a.llm
    if rep is None:
        return "unknown accelerator"
    if not a.fits:
        return "memory: the weights do not fit"
    b = llm.budgets
    step1 = rep.decode_step_s(1, int(a.prompt_mean)) * 1000
    if (b.itl_p50_ms is not None and step1 > b.itl_p50_ms) or (b.tpot_ms is not None and step1 > b.tpot_ms):
        return f"memory bandwidth: a decode step takes {step1:.1f} ms even at batch 1"
    ttft = b.ttft_p50_ms if b.ttft_p50_ms is not None else b.ttft_p99_ms
    if ttft is not None and a.prefill_ms > ttft:
        return f"prefill compute: the mean prompt alone takes {a.prefill_ms:.0f} ms"
    fixed = (rep.request_overhead_s + rep.client_overhead_s) * 1000
    if ttft is not None and a.prefill_ms + fixed > ttft:
        return (
            f"per-request overhead: {fixed:.1f} ms per request (engine set-up and client) on top of the "
            f"mean prompt's {a.prefill_ms:.1f} ms prefill"
        )
    itl = [v for v in a.missed if v.name in ("itl_p99_ms", "itl_p50_ms")]
    chunk = min(rep.max_num_batched_tokens, int(a.prompt_mean))
    mixed = rep.iteration_s(chunk, rep.attn_flops(chunk, 0), 0) * 1000
    if itl and mixed > itl[0].budget:
        return (
            f"token budget: an iteration carrying a {chunk}-token prefill chunk takes {mixed:.0f} ms, and the "
            "decodes batched with it wait for it (lower max_num_batched_tokens)"
        )
    if a.rate_rps is not None and a.capacity_rps and a.rate_rps / a.replicas > a.capacity_rps:
        return f"concurrency ({a.concurrency} sequences, bound by {a.concurrency_binds})"
    return f"concurrency ({a.concurrency} sequences, bound by {a.concurrency_binds}); queueing at the design rate"


def recommend(
    spec: Spec,
    stage: Stage,
    rate: float,
    base: Path | None,
    *,
    budget: int = 40,
    work: WorkBudget | None = None,
) -> Recommendation | None:
    """The cheapest configuration (GPU x TP x replicas x max_num_seqs x chunk) that meets every budget.

    Cost is GPUs, then device memory (the catalogue has no prices). Candidates are ordered by a lower
    bound on their GPUs (replicas from the steady-state capacity) and simulated in that order; the
    first that meets every budget wins. At most `budget` simulations, within `work`.
    """
    spend = work or WorkBudget()
    llm = stage.llm
    assert llm is not None
    prompt, output = _means(llm, base)
    cands = []
    for gpu in _CANDIDATE_GPUS:
        dev = ACCELERATORS[gpu]
        for tp in _CANDIDATE_TP:
            for seqs in _CANDIDATE_SEQS:
                for chunk in _CANDIDATE_CHUNK:
                    cand = llm.model_copy(
                        update={
                            "engine": llm.engine.model_copy(
                                update={"max_num_seqs": seqs, "max_num_batched_tokens": chunk}
                            ),
                            "parallelism": llm.parallelism.model_copy(update={"tensor": tp}),
                        }
                    )
                    rep = replica(cand, dev)
                    if rep.kv_blocks < rep.blocks_for(int(prompt + output)):
                        continue  # the model does not fit with room for one sequence
                    if not _could_meet(rep, cand, prompt):
                        continue  # even unloaded, a decode step or the prefill is over its budget
                    cap = capacity_rps(rep, prompt, output)
                    if cap <= 0:
                        continue
                    reps = max(1, math.ceil(rate / cap))
                    cands.append((reps * tp, dev.memory_gb, seqs, chunk, gpu, tp, reps, cand, rep))
    cands.sort(key=lambda c: c[:4])
    tried = 0
    for _gpus, _, seqs, chunk, gpu, tp, reps, cand, rep in cands:
        for extra in (0, 1):  # the capacity estimate is a bound: allow one replica more
            r = reps + extra
            if tried >= budget:
                return None
            tried += 1
            try:
                s = _run(rep, cand, rate / r, SEARCH_REQUESTS, base, spend, "the configuration search")
            except _Spent:
                return None
            if _meets(cand, s, r):
                return Recommendation(gpu, tp, r, seqs, chunk, r * tp, s)
    return None


def _could_meet(rep: Replica, llm: LlmStage, prompt: float) -> bool:
    b = llm.budgets
    step = rep.decode_step_s(1, int(prompt)) * 1000
    per_token = [x for x in (b.itl_p50_ms, b.tpot_ms) if x is not None]
    if per_token and step > min(per_token):
        return False
    ttft = b.ttft_p50_ms if b.ttft_p50_ms is not None else b.ttft_p99_ms
    return ttft is None or rep.first_token_s(int(prompt)) * 1000 <= ttft


def _means(llm: LlmStage, base: Path | None) -> tuple[float, float]:
    req = sim.workload(llm.workload, 1.0, 2_000, seed=7, base=base)
    return float(np.mean(req.prompt)), float(np.mean(req.output))


def analyse(
    spec: Spec,
    stage: Stage,
    *,
    base: Path | None = None,
    search: bool = True,
    work: WorkBudget | None = None,
    predict: bool = True,
) -> LlmAnalysis:
    """The full analysis of one LLM stage (search: the 90 % rate, the knee, a recommendation if missed),
    its simulations within `work` (`budget_note` says what the budget cut short). `predict=False`
    leaves out the simulation at the design rate (a caller that simulates its own rate needs only
    the replica and its closed-form figures)."""
    work = work or WorkBudget()
    cuts_before = work.cuts
    llm = stage.llm
    assert llm is not None
    replicas = _replicas(spec, stage)
    rate = design_rate(spec, stage)
    dev = device_of(spec, stage)
    draw = sim.workload(llm.workload, 1.0, 4_000, seed=7, base=base)
    a = LlmAnalysis(
        stage, llm, dev, None, replicas, rate, float(np.mean(draw.prompt)), float(np.mean(draw.output)),
        int(draw.prompt.max()),
    )  # fmt: skip
    if dev is None:
        a.binding = _binding(a)
        return a
    rep = a.rep = replica(llm, dev)
    a.fits = rep.kv_blocks >= rep.blocks_for(int(a.prompt_mean + a.output_mean))
    a.concurrency, a.concurrency_binds = rep.max_concurrency(int(a.prompt_mean + a.output_mean))
    ctxs = [c for c in (512, 2048, 8192, 32768) if c <= rep.arch.max_context_tokens]
    a.step_table = [(b, c, rep.decode_step_s(b, c) * 1000) for b in (1, 8, 32, 64, 128, 256) for c in ctxs]
    a.prefill_ms = rep.prefill_s(int(a.prompt_mean)) * 1000
    if not a.fits:
        a.binding = _binding(a)
        return a
    a.capacity_rps = capacity_rps(rep, a.prompt_mean, a.output_mean)
    if predict and rate is not None and rate > 0:
        per = rate / replicas
        if per > a.capacity_rps * 1.5:
            a.notes.append(
                f"the design rate per replica ({per:.2f} req/s) is over 1.5 x the replica's capacity "
                f"({a.capacity_rps:.2f} req/s): the queue grows without bound; predicted at 1.5 x capacity"
            )
            per = a.capacity_rps * 1.5
        try:
            s = _run(
                rep, llm, per, SIM_REQUESTS, base, work, "the prediction at the design rate", partial=True
            )
        except _Spent:  # an earlier stage spent it all
            s = None
        if s is not None:
            notes = [f"{SIM_REQUESTS:,} simulated requests per replica, seed 0"]
            if work.cuts > cuts_before:
                notes.append(f"cut short by the work budget: {s.finished:,} of them answered")
            a.summary = replace(s, notes=notes)
            a.verdicts = _verdicts(llm, a.summary, replicas)
    if search:
        a.max_rate_90_rps = max_rate_meeting(rep, llm, a.capacity_rps, base, work)
        a.knee_rps = knee_rps(rep, llm, a.capacity_rps, base, work)
    a.binding = _binding(a)
    if a.missed and rate:
        a.recommendation = recommend(spec, stage, rate, base, work=work)
    if work.cuts > cuts_before:
        a.budget_note = work.note()
    return a


def analyse_spec(
    spec: Spec,
    *,
    base: Path | None = None,
    search: bool = True,
    sim_budget: int | None = None,
    work: WorkBudget | None = None,
) -> list[LlmAnalysis]:
    """Every LLM stage of the spec, in document order, their simulations sharing one work budget
    (`work`, else `sim_budget` pipeline events' worth: `WorkBudget`)."""
    work = work or WorkBudget(sim_budget or DEFAULT_EVENTS)
    stages = [st for st in spec.dataflow.stages if st.llm is not None]
    return [analyse(spec, st, base=base, search=search, work=work) for st in stages]


def pre_llm_ms(spec: Spec, stage: Stage) -> tuple[float, list[str]]:
    """The P99 budgets of the stages on the longest data-flow path into `stage` (they add to TTFT)."""
    preds: dict[str, list[str]] = {}
    for e in spec.dataflow.edges:
        preds.setdefault(e.to, []).append(e.from_)
    memo: dict[str, tuple[float, list[str]]] = {}

    def longest(sid: str, seen: frozenset[str]) -> tuple[float, list[str]]:
        if sid in memo:
            return memo[sid]
        best: tuple[float, list[str]] = (0.0, [])
        for p in preds.get(sid, []):
            if p in seen:
                continue
            st = spec.stage(p)
            own = (st.p99_ms or 0.0) if st is not None else 0.0
            t, path = longest(p, seen | {p})
            if t + own > best[0]:
                best = (t + own, path + [p])
        memo[sid] = best
        return best

    return longest(stage.id, frozenset({stage.id}))
