"""AK117: a stress level asks for more steps than a schedule holds (`plans.stress.MAX_STRESS_STEPS`)."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity
from archkit.spec.loadtest import StressSearch
from archkit.spec.model import Level
from archkit.spec.stress_steps import MAX_STRESS_STEPS, StepsAsked, steps_asked


@register
class StressScheduleCut(Rule):
    """A stress level's steps (its rate range over its step, within its duration) pass the schedule's 1,000."""

    code = "AK117"
    name = "stress-schedule-cut"
    severity = Severity.WARNING
    source = "seed 000 §4.4 (capacity claims are proved by a load test that steps past the design rate)"
    rationale = """
A stress level steps its offered rate from `start_rps` by `step_rps` up to `max_rps`, each step
`step_duration_s` long within `duration_s` (a `search` multiplies by its `factor` instead). The
schedule that `archkit loadtest`, the k6 and the locust scripts run stops at its 1,000th step: a
million steps of a nanosecond made 52 MB of k6 script and 822 MiB of memory to render (issue 28),
and a thousand steps of locust's shortest tick already outlast a 15-minute test. A level that asks
for more never reaches its `max_rps`: the load test ends below the rate the spec meant to prove.
Raise `step_rps` (a search's `factor`), or lower `max_rps`, until the range fits the schedule.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        design = ctx.spec.budgets.throughput_rps
        for level in ctx.spec.loadtest.levels if ctx.spec.loadtest else []:
            asked = steps_asked(level, design) if level.kind == "stress" else None
            if asked is not None and asked.cut:
                yield self._finding(ctx, level, asked)

    def _finding(self, ctx: Context, level: Level, a: StepsAsked) -> Diagnostic:
        n = MAX_STRESS_STEPS
        search = level.search
        node: Level | StressSearch
        field: str | None
        if search is None:
            last = a.start_rps + (n - 1) * a.step_rps
            steps = f"{a.by_rate:,} rate steps of {a.step_rps:,.10g} req/s from {a.start_rps:,.10g} to {a.top_rps:,.10g}"
            # the step that fits the range into the schedule's steps, or the time step that does
            need = f"step_rps to at least {(a.top_rps - a.start_rps) / (n - 1):.6g}"
            field = next((f for f in ("step_rps", "max_rps") if getattr(level, f) is not None), None)
            node = level
        else:
            last = a.start_rps * search.factor ** (n - 1)
            steps = f"{a.by_rate:,} rate steps of x{search.factor:g} from {a.start_rps:,.10g} to {a.top_rps:,.10g}"
            need = f"search.factor to at least {(a.top_rps / a.start_rps) ** (1 / (n - 1)):.6g}"
            node, field = search, "factor"
        return ctx.at(
            node,
            field,
            f"stress level {level.id!r} asks for {a.steps:,} steps ({steps} req/s, "
            f"{a.by_time:,} of {a.step_s:g} s in {level.duration_s:g} s): the schedule stops at its "
            f"{n:,}th, at {last:,.6g} req/s, short of {a.top_rps:,.10g}",
            hint=f"raise {need} (or lower max_rps) so that the range fits {n:,} steps",
        )
