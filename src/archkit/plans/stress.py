"""The stress schedule of a load-test level: one definition for the locust generator and the runner."""

from __future__ import annotations

import math

from archkit.orderstats import min_samples
from archkit.spec.model import Level


def stress_schedule(level: Level, fallback_rps: float | None) -> list[tuple[float, float, float]]:
    """(start second, duration, offered rate) of each stress step, bounded by the level's duration.

    A linear level steps by `step_rps` up to `max_rps`, `step_duration_s` each. A level with a
    `search` steps geometrically (start × factor^i up to its max_rps) and gives each step the
    samples its stop percentile needs (orderstats.min_samples at the step's rate), at least
    `step_duration_s`: a P99 judged from 20 samples would end the search on the noise.
    """
    step_s = level.step_duration_s or 10.0
    search = level.search
    if search is None:
        start = level.start_rps or level.rate_rps or fallback_rps or 1.0
        step = level.step_rps or start
        top = level.max_rps or start + 9 * step
        count = max(
            1,
            min(
                int(math.floor((top - start) / step + 1e-9)) + 1,
                int(math.floor(level.duration_s / step_s + 1e-9)) or 1,
            ),
        )
        return [(round(i * step_s, 6), step_s, round(start + i * step, 6)) for i in range(count)]
    top = search.max_rps or search.start_rps * search.factor**9
    need = min_samples(int(search.stop_percentile[1:3]) / 100.0)
    out: list[tuple[float, float, float]] = []
    t, rate = 0.0, search.start_rps
    while not out or (rate <= top * (1 + 1e-9) and t < level.duration_s):  # at least the first step
        seconds = max(step_s, math.ceil(need / rate))
        out.append((round(t, 6), float(seconds), round(rate, 6)))
        t += seconds
        rate *= search.factor
    return out


def stress_steps(level: Level, fallback_rps: float | None) -> list[tuple[float, float]]:
    """(start second, offered rate) of each stress step (see `stress_schedule`)."""
    return [(s, r) for s, _d, r in stress_schedule(level, fallback_rps)]
