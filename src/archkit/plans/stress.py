"""The stress schedule of a load-test level: one definition for the locust generator and the runner."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from archkit.errors import InputError
from archkit.orderstats import min_samples
from archkit.spec.model import Level, Spec, Stage
from archkit.spec.stress_steps import MAX_STRESS_STEPS, steps_asked

# a token stop_percentile -> (the streaming measure, its statistic, the quantile it estimates);
# TPOT is judged by its P99 over requests, like the llm budget of that name (loadtest.judge_llm)
TOKEN_STOPS: dict[str, tuple[str, str, float]] = {
    "ttft_p50_ms": ("ttft_ms", "p50_ms", 0.50),
    "ttft_p99_ms": ("ttft_ms", "p99_ms", 0.99),
    "itl_p50_ms": ("itl_ms", "p50_ms", 0.50),
    "itl_p99_ms": ("itl_ms", "p99_ms", 0.99),
    "tpot_ms": ("tpot_ms", "p99_ms", 0.99),
}
KNEE_STEPS_EACH_SIDE = 2  # a search from the predicted knee starts factor² below it, ends factor² above


class SearchError(InputError, ValueError):
    """A knee search that cannot be planned (no start rate and no predicted knee to start from)."""


@dataclass(frozen=True)
class Basis:
    """What a stress search rests on besides its level: the predicted knee and samples per request."""

    knee_rps: float | None = None  # the streamed llm stage's predicted knee, all replicas
    per_request: float = 1.0  # samples of the stop percentile's measure per request (ITL: tokens − 1)


def streamed_stage(spec: Spec) -> Stage | None:
    """The llm stage the load test's scenarios stream to (the first a scenario names), if any."""
    for sc in spec.loadtest.scenarios if spec.loadtest else []:
        st = spec.stage(sc.llm_stage) if sc.llm_stage else None
        if st is not None and st.llm is not None:
            return st
    return None


def search_basis(spec: Spec, level: Level, base: Path | None = None) -> Basis:
    """The predicted knee (archkit.perf.llm, as `archkit capacity` predicts it) when the scenarios
    stream to an llm stage, and the stop measure's samples per request."""
    stage = streamed_stage(spec)
    if stage is None or level.kind != "stress":
        return Basis()
    from archkit.perf.llm.analysis import predicted_knee

    knee = predicted_knee(spec, stage, base)
    per = 1.0
    stop = level.search.stop_percentile if level.search else ""
    if TOKEN_STOPS.get(stop, ("",))[0] == "itl_ms":
        assert stage.llm is not None
        w = stage.llm.workload.output_tokens
        # one ITL sample per output token after the first (the mean; a longer answer gives more)
        per = max(1.0, float(w.mean_tokens or 1) - 1.0)
    return Basis(knee, per)


def stress_schedule(
    level: Level, fallback_rps: float | None, basis: Basis | None = None
) -> list[tuple[float, float, float]]:
    """(start second, duration, offered rate) of each stress step, bounded by the level's duration.

    A linear level steps by `step_rps` up to `max_rps`, `step_duration_s` each. A level with a
    `search` steps geometrically (start × factor^i up to its max_rps) and gives each step the
    samples its stop percentile needs (orderstats.min_samples at the step's rate), at least
    `step_duration_s`: a P99 judged from 20 samples would end the search on the noise. A search
    without `start_rps` brackets `basis.knee_rps`, from factor² below it to factor² above it (its
    max_rps, if given, still caps it); an ITL stop counts `basis.per_request` samples per request.
    Either stops at MAX_STRESS_STEPS steps.
    """
    basis = basis or Basis()
    step_s = level.step_duration_s or 10.0
    search = level.search
    if search is None:
        asked = steps_asked(level, fallback_rps)
        assert asked is not None  # a linear level always has its closed form
        count = max(1, min(asked.steps, MAX_STRESS_STEPS))
        return [
            (round(i * step_s, 6), step_s, round(asked.start_rps + i * asked.step_rps, 6))
            for i in range(count)
        ]
    if search.start_rps is not None:
        first, top = search.start_rps, search.max_rps or search.start_rps * search.factor**9
    elif basis.knee_rps:
        first = basis.knee_rps / search.factor**KNEE_STEPS_EACH_SIDE
        top = min(search.max_rps or math.inf, basis.knee_rps * search.factor**KNEE_STEPS_EACH_SIDE)
    else:
        raise SearchError(
            f"level {level.id!r}: a search without start_rps starts from the predicted knee of the llm "
            "stage the scenarios stream to (llm_stage), and there is none to predict; give start_rps"
        )
    stop = search.stop_percentile
    q = TOKEN_STOPS[stop][2] if stop in TOKEN_STOPS else int(stop[1:3]) / 100.0
    need = math.ceil(min_samples(q) / basis.per_request)  # requests
    out: list[tuple[float, float, float]] = []
    t, rate = 0.0, first
    while not out or (rate <= top * (1 + 1e-9) and t < level.duration_s and len(out) < MAX_STRESS_STEPS):
        seconds = max(step_s, math.ceil(need / rate))
        out.append((round(t, 6), float(seconds), round(rate, 6)))
        t += seconds
        rate *= search.factor
    return out


def stress_steps(
    level: Level, fallback_rps: float | None, basis: Basis | None = None
) -> list[tuple[float, float]]:
    """(start second, offered rate) of each stress step (see `stress_schedule`)."""
    return [(s, r) for s, _d, r in stress_schedule(level, fallback_rps, basis)]
