"""The whole pipeline's prediction: what a load test of the spec should measure, before it runs.

`predict(spec, env=None, rate_rps=None)` is the one entry point that `archkit capacity`,
load-test reports and the review page read. It combines
- the closed-form demand model (`archkit.perf.resources`): per-resource demand and
  utilisation, the pipeline's throughput ceiling (the knee) and its bottleneck;
- the whole-pipeline discrete-event simulation (`archkit.perf.pipesim`): per-stage and
  end-to-end P50/P95/P99 at the rate, with shared processors, batching, routing, retries.
Pure and deterministic: the same spec, environment, rate, request count and seed give the
same numbers. Its work is bounded by `requests` whatever the rates or counts in the spec, and
by a budget of simulated work (`SIM_BUDGET` events for the prediction and the knee search
together, and in `archkit capacity` the LLM analysis's simulations between the two, `with_knee`;
`archkit capacity --sim-budget` raises it): a search that spends it stops with the bracket it has
and says so (`budget_note`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

from archkit.perf.limits import admitted_rps
from archkit.perf.pipesim import FirstToken, PipelineSim, simulate_pipeline
from archkit.perf.resources import LoadModel, load_model
from archkit.spec.model import Spec

DEFAULT_REQUESTS = 20_000
DEFAULT_SEED = 7
# Simulated events (scans weighed in, `pipesim_kernel.SCAN_PER_EVENT`) for one prediction with
# its knee search: ~0.5-0.7 µs each here, so ~2.5 CPU s at most, within issue 28's 5 s for
# `capacity`. The reference spec needs 2.6 M (ten runs of 20,000 requests); a spec whose
# runs pile up thousands of concurrent jobs (rag-chat past its knee: 4.9 M in one run) stops
# its knee search early instead of running on.
SIM_BUDGET = 4_000_000
MAX_SIM_BUDGET = 400_000_000  # --sim-budget's ceiling: ~4 CPU minutes


@dataclass(frozen=True)
class StagePrediction:
    """One stage at the predicted rate (latencies in ms per visit; a fan-out's calls included)."""

    stage: str
    reach: float  # share of the requests that visit it
    arrival_rps: float  # items per second reaching it
    resource: str | None  # the shared processor it runs on
    utilisation: float | None  # of its own instances/workers (None: unbounded)
    ceiling_rps: float | None  # request rate at which its own instances saturate (None: unbounded)
    p50_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    mean_ms: float | None


@dataclass(frozen=True)
class ResourcePrediction:
    """One shared processor: a service's cores or GPUs, or the environment's whole machine."""

    id: str
    kind: str  # "cpu" or "gpu"
    units: float  # cores or GPUs
    stages: tuple[str, ...]
    demand_ms_per_request: float  # processor-milliseconds one request needs from it
    utilisation: float  # at the rate (demand model)
    ceiling_rps: float  # request rate that fills it


@dataclass(frozen=True)
class UserTtft:
    """An LLM stage's time to first token as the user sees it, simulated (`pipesim.FirstToken`: the
    stages before it plus the engine's TTFT, ms P50/P95/P99), against `llm.budgets.user_ttft_p99_ms`."""

    stage: str
    visits: int
    upstream_ms: dict[str, float]  # request sent -> arrival at the engine (gateway, retrieval, queues)
    engine_ms: dict[str, float]  # the engine's own TTFT (its queue, the prefill, the first token)
    user_ms: dict[str, float]  # the two together, per request
    budget_p99_ms: float | None  # the stage's user_ttft_p99_ms
    met: bool | None  # None: no budget


@dataclass(frozen=True)
class PipelinePrediction:
    """End-to-end and per-stage predictions for one spec at one request rate."""

    name: str
    environment: str | None
    rate_rps: float
    knee_rps: float  # throughput ceiling: the first resource, stage or connection pool to reach 100 %
    bottleneck: str | None  # "resource <id>", "stage <id>" or "pool <id>"
    throughput_rps: float  # simulated completed requests per second (≤ rate, ≤ knee)
    p50_ms: float
    p95_ms: float
    p99_ms: float
    mean_ms: float
    stable: bool  # False past the knee: the simulated backlog kept growing
    failed_share: float  # requests rejected by full queues or out of retries (simulated)
    degraded_share: float  # requests answered by a call's fallback after a timeout (simulated)
    stages: list[StagePrediction]
    resources: tuple[ResourcePrediction, ...]
    requests: int
    seed: int
    method: str  # how the numbers were obtained, in words
    simulated_knee_rps: float | None = None  # `simulated_knee`, when predict(knee=True)
    shed_share: float = 0.0  # refused by an admission or rate limit (`spec.traffic`), simulated
    admitted_rps: float | None = None  # what the rate limits admit of the rate (fluid bound, `perf.limits`)
    sim_work: int = 0  # simulated events spent (prediction and knee search), of `sim_budget`
    sim_budget: int = SIM_BUDGET
    budget_note: str | None = None  # set when the budget stopped the simulation or the knee search
    user_ttft: tuple[UserTtft, ...] = ()  # per LLM stage: first token as the user sees it (simulated)
    # the spec path of the co-simulated stage whose own simulation the budget cut (its `llm`), for
    # the warning's file:line:col; left out of `as_dict` when None, as it is for nearly every spec
    budget_path: str | None = None

    def stage(self, stage_id: str) -> StagePrediction | None:
        return next((s for s in self.stages if s.stage == stage_id), None)

    @property
    def end_to_end(self) -> dict[str, float | None]:
        """The end-to-end figures as one mapping (ms; None where nothing was answered)."""
        out = {"p50_ms": self.p50_ms, "p95_ms": self.p95_ms, "p99_ms": self.p99_ms, "mean_ms": self.mean_ms}
        return {k: (v if math.isfinite(v) else None) for k, v in out.items()}

    def as_dict(self) -> dict[str, object]:
        """Plain data for JSON: infinities and NaNs become None, floats are rounded."""
        out = json_ready(asdict(self))
        assert isinstance(out, dict)
        if out["budget_path"] is None:
            del out["budget_path"]
        return out


def json_ready(v: object) -> object:
    """Plain data for JSON: infinities and NaNs become None, floats are rounded to 4 places."""
    if isinstance(v, float):
        return None if not math.isfinite(v) else round(v, 4)
    if isinstance(v, dict):
        return {k: json_ready(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [json_ready(x) for x in v]
    return v


def design_rate(spec: Spec) -> float | None:
    """The spec's design rate (`budgets.throughput_rps`), after any environment override."""
    return spec.budgets.throughput_rps


def prepare(spec: Spec, env: str | None = None) -> tuple[Spec, LoadModel]:
    """The spec with environment `env` applied, and its demand model."""
    applied = spec.with_environment(env) if env else spec
    return applied, load_model(applied)


def predict(
    spec: Spec,
    env: str | None = None,
    rate_rps: float | None = None,
    requests: int = DEFAULT_REQUESTS,
    seed: int = DEFAULT_SEED,
    arrivals: list[float] | None = None,
    knee: bool = False,
    budget: int = SIM_BUDGET,
) -> PipelinePrediction:
    """Predict the pipeline at `rate_rps` requests/s (default: the design rate, else half the knee).

    `env` applies that environment's overrides (service times, batching, device, and its
    one-machine `cpu_cores`). Per-resource utilisation, the knee and the bottleneck come from
    the closed-form demand model; percentiles come from simulating `requests` Poisson
    arrivals with `seed` (`archkit.perf.pipesim`), or the recorded send times `arrivals`
    (seconds; a load test's schedule) when given. With `knee`, also the simulation's own knee
    (`simulated_knee`: eight more runs). All runs together stop at `budget` simulated events
    (`budget_note` says where). Raises KeyError for an unknown `env`.
    """
    applied, lm = prepare(spec, env)
    rate = rate_rps if rate_rps is not None else design_rate(applied)
    if rate is None:
        rate = lm.ceiling_rps / 2 if math.isfinite(lm.ceiling_rps) else 1.0
    sim = simulate_pipeline(
        applied, lm, rate, requests=requests, seed=seed, arrivals=arrivals, max_work=budget
    )
    out = _assemble(applied, env, lm, sim, sim.rate_rps if arrivals is not None else rate, requests, seed)
    note = None
    if sim.cut_short:
        within = f" ({sim.cut_in})" if sim.cut_in else ""
        note = (
            f"the simulation at {rate:g} req/s spent the budget of {budget:,} simulated events before "
            f"every request was answered{within}: its percentiles cover the requests answered so far"
        )
    elif sim.rounds_cut:
        note = (
            f"the simulation at {rate:g} req/s spent the budget of {budget:,} simulated events in round "
            f"{sim.rounds_cut} of the refusals' cost on the cores: its figures are round "
            f"{sim.rounds_cut - 1}'s, which charged the refusals of the round before it"
        )
    out = replace(out, sim_work=sim.work, sim_budget=budget)
    if sim.cut_stage is not None:
        out = replace(out, budget_path=_llm_path(applied, sim.cut_stage))
    if note is not None:
        out = replace(out, budget_note=_hinted(note, budget))
    return with_knee(out, applied, requests=requests, seed=seed, lm=lm) if knee else out


def with_knee(
    pred: PipelinePrediction,
    spec: Spec,
    requests: int = DEFAULT_REQUESTS,
    seed: int = DEFAULT_SEED,
    elsewhere: int = 0,
    lm: LoadModel | None = None,
) -> PipelinePrediction:
    """`pred` (a `predict` of the prepared `spec`, without `knee`) with the simulated knee, its search
    within what the budget (`pred.sim_budget`) has left after the prediction and after `elsewhere`
    simulated events that other simulations of the same run spent of it first (`archkit capacity`
    runs the LLM analysis between the two: one budget for the whole run, issue 28)."""
    budget = pred.sim_budget
    if pred.budget_note is not None:  # the prediction spent it all: no knee search
        note = pred.budget_note.removesuffix(_hint(budget))
        return replace(pred, budget_note=_hinted(f"{note}; no knee search", budget))
    lm = lm or load_model(spec)
    left = budget - pred.sim_work - elsewhere
    search = knee_search(spec, None, requests, seed, budget=left, lm=lm)
    out = replace(pred, simulated_knee_rps=search.knee_rps, sim_work=pred.sim_work + search.work)
    if search.note is not None:  # the knee search had what the prediction (and the rest) left
        shared = f" (the LLM analysis's simulations spent {elsewhere:,} of them)" if elsewhere else ""
        note = f"the budget of {budget:,} simulated events{shared} {search.note}"
        out = replace(out, budget_note=_hinted(note, budget))
        llm = next((st.id for st in spec.dataflow.stages if st.llm is not None), None)
        if out.budget_path is None and elsewhere and llm is not None:  # located at what asked the work
            out = replace(out, budget_path=_llm_path(spec, llm))
    return out


def _hint(budget: int) -> str:
    return f" (raise it with `archkit capacity --sim-budget {min(MAX_SIM_BUDGET, 4 * budget)}`)"


def _hinted(note: str, budget: int) -> str:
    return note + _hint(budget)


def _llm_path(spec: Spec, stage_id: str) -> str | None:
    from archkit.spec.sourcemap import format_path

    st = spec.stage(stage_id)
    return format_path((*st.spec_path, "llm")) if st is not None and st.llm is not None else None


def simulated_knee(
    spec: Spec,
    env: str | None = None,
    requests: int = DEFAULT_REQUESTS,
    seed: int = DEFAULT_SEED,
    steps: int = 8,
    budget: int = SIM_BUDGET,
) -> float:
    """The highest rate the simulation serves without a growing backlog (req/s), by bisection.

    Searches between a fifth of the analytic knee and 1.25 times it (`steps` simulations of
    `requests` requests each, so the work is bounded); a rate counts as served when the run
    is stable, at least 99 % of the requests are answered without a fallback, and at 97 % of
    the offered rate (requests an admission or rate limit refuses count against the 97 %). NaN when even a fifth of the ceiling is not served.
    The runs together stop at `budget` simulated events (`knee_search` says where).
    """
    return knee_search(spec, env, requests, seed, steps, budget).knee_rps


@dataclass(frozen=True)
class KneeSearch:
    """The simulated knee's bisection: its result, the bracket it reached, the work it spent."""

    knee_rps: float
    bracket: tuple[float, float]
    runs: int
    work: int
    note: str | None = None  # "ran out in run k ...": set when the budget stopped the search early


def knee_search(
    spec: Spec,
    env: str | None = None,
    requests: int = DEFAULT_REQUESTS,
    seed: int = DEFAULT_SEED,
    steps: int = 8,
    budget: int = SIM_BUDGET,
    lm: LoadModel | None = None,
) -> KneeSearch:
    """`simulated_knee` with its bracket and work: a run the budget cuts short ends the search."""
    applied, lm = prepare(spec, env) if lm is None else (spec, lm)
    if not math.isfinite(lm.ceiling_rps):
        return KneeSearch(math.inf, (math.inf, math.inf), 0, 0)
    spent = 0
    runs = 0

    def served(rate: float) -> bool | None:  # None: the budget ran out during the run
        nonlocal spent, runs
        sim = simulate_pipeline(
            applied, lm, rate, requests=requests, seed=seed, max_work=max(1, budget - spent)
        )
        spent += sim.work
        runs += 1
        if sim.cut_short or sim.rounds_cut:
            return None
        lost = sim.failed + sim.degraded  # a shed request shows in the throughput test below
        return sim.stable and lost <= 0.01 * sim.requests and sim.throughput_rps >= 0.97 * rate

    def stopped(lo: float, hi: float) -> KneeSearch:
        where = (
            f"the simulated knee lies between {lo:.4g} and {hi:.4g} req/s"
            if math.isfinite(lo)
            else f"no simulated knee (the first run, at {hi:.4g} req/s, did not finish)"
        )
        note = f"ran out in run {runs} of the knee search: {where}"
        return KneeSearch(lo, (lo, hi), runs, spent, note)

    lo, hi = 0.2 * lm.ceiling_rps, 1.25 * lm.ceiling_rps
    first = served(lo)
    if first is None:
        return stopped(math.nan, lo)
    if not first:
        return KneeSearch(math.nan, (0.0, lo), runs, spent)  # not served at a fifth of the ceiling
    for _ in range(steps):
        mid = (lo + hi) / 2
        ok = served(mid)
        if ok is None:
            return stopped(lo, hi)
        lo, hi = (mid, hi) if ok else (lo, mid)
    return KneeSearch(lo, (lo, hi), runs, spent)


def _user_ttft(spec: Spec, ft: FirstToken) -> UserTtft:
    st = spec.stage(ft.stage)
    budget = st.llm.budgets.user_ttft_p99_ms if st is not None and st.llm is not None else None
    p99 = ft.user_ms["p99"]
    met = None if budget is None else bool(math.isfinite(p99) and p99 <= budget)
    return UserTtft(ft.stage, ft.visits, ft.upstream_ms, ft.stage_ms, ft.user_ms, budget, met)


def _assemble(
    spec: Spec, env: str | None, lm: LoadModel, sim: PipelineSim, rate: float, requests: int, seed: int
) -> PipelinePrediction:
    by_stage = {s.stage: s for s in sim.stages}
    stages = []
    for sl in lm.stages:
        ss = by_stage.get(sl.stage)
        util = None if sl.servers is None else rate * sl.demand_s / sl.servers
        stages.append(
            StagePrediction(
                sl.stage,
                sl.reach,
                rate * sl.reach * sl.items_per_request,
                sl.resource,
                util,
                sl.ceiling_rps if math.isfinite(sl.ceiling_rps) else None,
                ss.p50_ms if ss else None,
                ss.p95_ms if ss else None,
                ss.p99_ms if ss else None,
                ss.mean_ms if ss else None,
            )
        )
    resources = tuple(
        ResourcePrediction(
            r.id, r.kind, r.units, r.stages, 1000 * r.demand_s, r.utilisation(rate), r.ceiling_rps
        )
        for r in lm.resources
    )
    return PipelinePrediction(
        name=spec.metadata.name,
        environment=env,
        rate_rps=rate,
        knee_rps=lm.ceiling_rps,
        bottleneck=lm.bottleneck,
        throughput_rps=sim.throughput_rps,
        p50_ms=sim.p50_ms,
        p95_ms=sim.p95_ms,
        p99_ms=sim.p99_ms,
        mean_ms=sim.mean_ms,
        stable=sim.stable,
        failed_share=sim.failed / sim.requests if sim.requests else 0.0,
        degraded_share=sim.degraded / sim.requests if sim.requests else 0.0,
        shed_share=sim.shed / sim.requests if sim.requests else 0.0,
        admitted_rps=admitted_rps(spec, rate, {sl.stage: sl.reach for sl in lm.stages}),
        stages=stages,
        resources=resources,
        requests=sim.requests,
        seed=seed,
        user_ttft=tuple(_user_ttft(spec, ft) for ft in sim.first_token),
        method=(
            f"demand model (processor sharing on {len(resources)} shared resource(s)); "
            f"percentiles from a whole-pipeline simulation of {sim.requests:,} Poisson requests, seed {seed}"
        ),
    )
