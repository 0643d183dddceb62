"""How many steps a stress level asks for (`loadtest.levels[].kind: stress`), in closed form.

The schedule itself is `archkit.plans.stress.stress_schedule`; this is the count it stops at
(MAX_STRESS_STEPS), here in the spec layer so that rule AK117 can say a level asks for more before
any load test or script is made."""

from __future__ import annotations

import math
from dataclasses import dataclass

from archkit.spec.loadtest import Level

# Steps of one stress level at most (issue 28): the schema admits a 1 ns step over a 10 M req/s
# range, a million steps that the k6 and locust generators wrote out as 52 MB and 22 MB scripts
# (530 MiB of memory to render; the schema-valid fuzz run of 2026-12-03, batch 5). A thousand
# steps of the shortest step locust's shape can follow (its tick, 1 s) already outlast a
# 15-minute test; a schedule stops at its thousandth step.
MAX_STRESS_STEPS = 1_000


@dataclass(frozen=True)
class StepsAsked:
    """The steps a stress level asks for, before MAX_STRESS_STEPS: the lesser of its rate steps (from
    `start_rps` to `max_rps`) and its time steps (`step_duration_s` each within `duration_s`)."""

    by_rate: int
    by_time: int  # a search's steps last at least step_duration_s: at most this many
    start_rps: float
    step_rps: float  # a linear level's step (a search multiplies by its factor instead)
    top_rps: float
    step_s: float

    @property
    def steps(self) -> int:
        return min(self.by_rate, self.by_time)

    @property
    def cut(self) -> bool:
        return self.steps > MAX_STRESS_STEPS


def steps_asked(level: Level, fallback_rps: float | None) -> StepsAsked | None:
    """What `stress_schedule` would make of `level` without its cap (a closed form: no schedule is
    built); None for a search that brackets the predicted knee (`plans.stress.KNEE_STEPS_EACH_SIDE` each side of it: a few steps)."""
    step_s = level.step_duration_s or 10.0
    by_time = int(math.floor(level.duration_s / step_s + 1e-9)) or 1
    search = level.search
    if search is None:
        start = level.start_rps or level.rate_rps or fallback_rps or 1.0
        step = level.step_rps or start
        top = level.max_rps or start + 9 * step
        by_rate = max(1, int(math.floor((top - start) / step + 1e-9)) + 1)
        return StepsAsked(by_rate, by_time, start, step, top, step_s)
    if search.start_rps is None:
        return None
    first, top = search.start_rps, search.max_rps or search.start_rps * search.factor**9
    # rates first × factor^i up to top (the schedule's own tolerance), the first always run
    by_rate = max(1, int(math.floor(math.log(top * (1 + 1e-9) / first) / math.log(search.factor))) + 1)
    return StepsAsked(
        by_rate, max(by_time, int(math.ceil(level.duration_s / step_s))), first, 0.0, top, step_s
    )
