"""The stress schedule of a load-test level: one definition for the locust generator and the runner."""

from __future__ import annotations

import math

from archkit.spec.model import Level


def stress_steps(level: Level, fallback_rps: float | None) -> list[tuple[float, float]]:
    """(start second, offered rate) of each stress step, bounded by max_rps and the level's duration."""
    start = level.start_rps or level.rate_rps or fallback_rps or 1.0
    step = level.step_rps or start
    step_s = level.step_duration_s or 10.0
    top = level.max_rps or start + 9 * step
    count = max(
        1,
        min(
            int(math.floor((top - start) / step + 1e-9)) + 1,
            int(math.floor(level.duration_s / step_s + 1e-9)) or 1,
        ),
    )
    return [(round(i * step_s, 6), round(start + i * step, 6)) for i in range(count)]
