"""The whole pipeline's prediction: what a load test of the spec should measure, before it runs.

`predict(spec, env=None, rate_rps=None)` is the one entry point that `archkit capacity`,
load-test reports and the review page read. It combines
- the closed-form demand model (`archkit.perf.resources`): per-resource demand and
  utilisation, the pipeline's throughput ceiling (the knee) and its bottleneck;
- the whole-pipeline discrete-event simulation (`archkit.perf.pipesim`): per-stage and
  end-to-end P50/P95/P99 at the rate, with shared processors, batching, routing, retries.
Pure and deterministic: the same spec, environment, rate, request count and seed give the
same numbers. Its work is bounded by `requests` whatever the rates or counts in the spec.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

from archkit.perf.limits import admitted_rps
from archkit.perf.pipesim import PipelineSim, simulate_pipeline
from archkit.perf.resources import LoadModel, load_model
from archkit.spec.model import Spec

DEFAULT_REQUESTS = 20_000
DEFAULT_SEED = 7


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
class PipelinePrediction:
    """End-to-end and per-stage predictions for one spec at one request rate."""

    name: str
    environment: str | None
    rate_rps: float
    knee_rps: float  # throughput ceiling: the first resource or stage to reach 100 %
    bottleneck: str | None  # "resource <id>" or "stage <id>"
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
) -> PipelinePrediction:
    """Predict the pipeline at `rate_rps` requests/s (default: the design rate, else half the knee).

    `env` applies that environment's overrides (service times, batching, device, and its
    one-machine `cpu_cores`). Per-resource utilisation, the knee and the bottleneck come from
    the closed-form demand model; percentiles come from simulating `requests` Poisson
    arrivals with `seed` (`archkit.perf.pipesim`), or the recorded send times `arrivals`
    (seconds; a load test's schedule) when given. With `knee`, also the simulation's own knee
    (`simulated_knee`: eight more runs). Raises KeyError for an unknown `env`.
    """
    applied, lm = prepare(spec, env)
    rate = rate_rps if rate_rps is not None else design_rate(applied)
    if rate is None:
        rate = lm.ceiling_rps / 2 if math.isfinite(lm.ceiling_rps) else 1.0
    sim = simulate_pipeline(applied, lm, rate, requests=requests, seed=seed, arrivals=arrivals)
    out = _assemble(applied, env, lm, sim, sim.rate_rps if arrivals is not None else rate, requests, seed)
    if knee:
        out = replace(out, simulated_knee_rps=simulated_knee(applied, None, requests, seed))
    return out


def simulated_knee(
    spec: Spec,
    env: str | None = None,
    requests: int = DEFAULT_REQUESTS,
    seed: int = DEFAULT_SEED,
    steps: int = 8,
) -> float:
    """The highest rate the simulation serves without a growing backlog (req/s), by bisection.

    Searches between a fifth of the analytic knee and 1.25 times it (`steps` simulations of
    `requests` requests each, so the work is bounded); a rate counts as served when the run
    is stable, at least 99 % of the requests are answered without a fallback, and at 97 % of
    the offered rate (requests an admission or rate limit refuses count against the 97 %). NaN when even a fifth of the ceiling is not served.
    """
    applied, lm = prepare(spec, env)
    if not math.isfinite(lm.ceiling_rps):
        return math.inf

    def served(rate: float) -> bool:
        sim = simulate_pipeline(applied, lm, rate, requests=requests, seed=seed)
        lost = sim.failed + sim.degraded  # a shed request shows in the throughput test below
        return sim.stable and lost <= 0.01 * sim.requests and sim.throughput_rps >= 0.97 * rate

    lo, hi = 0.2 * lm.ceiling_rps, 1.25 * lm.ceiling_rps
    if not served(lo):
        return math.nan  # not served even at a fifth of the ceiling (timeouts, full queues)
    for _ in range(steps):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if served(mid) else (lo, mid)
    return lo


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
        method=(
            f"demand model (processor sharing on {len(resources)} shared resource(s)); "
            f"percentiles from a whole-pipeline simulation of {sim.requests:,} Poisson requests, seed {seed}"
        ),
    )
