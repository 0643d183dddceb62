"""AK412: a workflow's steps retry but no alert fires when their retries run out."""

from __future__ import annotations

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity


def retrying_steps(ctx: Context, steps: list[str]) -> list[str]:
    """The steps (control-flow calls) of a workflow that retry, in its order."""
    attempts = {c.id: c.retry.attempts for c in ctx.spec.controlflow.calls if c.retry is not None}
    return [s for s in steps if attempts.get(s, 0) > 0]


@register
class WorkflowRetriesUnwatched(Rule):
    """A workflow with retrying steps declares no `retries_exhausted` counter, so no alert follows the last retry."""

    code = "AK412"
    name = "workflow-retries-unwatched"
    severity = Severity.WARNING
    source = "seed 004 §2.2 (the control plane: retry OCR three times, then raise an alert)"
    rationale = """
Seed 004 §2.2's control plane retries a failing OCR three times and raises an alert when the
third retry fails too. A retry policy without that alert hides a dependency that is down: the
retries absorb it, requests end on their fallback, and nobody is told. A workflow whose steps
(control-flow calls) retry must name the counter of steps whose retries ran out
(`retries_exhausted`, a counter the workflow increments when a step's last retry fails); the
`prometheus` generator turns it into a `WorkflowRetriesExhausted<Id>` alert, promtool-tested.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for wf in ctx.spec.workflows:
            if wf.retries_exhausted is not None:
                continue
            retrying = retrying_steps(ctx, wf.steps)
            if retrying:
                yield ctx.at(
                    wf,
                    "id",
                    f"workflow '{wf.id}' retries {', '.join(retrying)} but declares no retries_exhausted "
                    "counter: no alert fires when the last retry fails",
                    hint="retries_exhausted: {metric: <workflow>_retries_exhausted_total}",
                )
