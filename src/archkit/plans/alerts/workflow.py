"""The retries-exhausted alert (seed 004 §2.2): a workflow step failed after its last retry.

Seed 004 §2.2's control plane retries a failing OCR three times and raises an alert when the
third retry fails too. The workflow names the counter of steps whose retries ran out
(`retries_exhausted`); any increase over the rate window fires at once, with no `for`: each
increase is a request that ended on its fallback after every retry, not a level that may pass.
The promtool cases feed one exhausted step a minute (fires) and a flat counter (quiet).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from archkit.plans.alerts.model import RATE_WINDOW, Alert, Case, Series, camel

if TYPE_CHECKING:
    from archkit.plans.alerts.planner import Planner


def workflow_alerts(p: Planner) -> None:
    """`WorkflowRetriesExhausted<Workflow>` for each workflow that names its exhausted-retries counter."""
    calls = {c.id: c for c in p.spec.controlflow.calls}
    for wf in p.spec.workflows:
        r = wf.retries_exhausted
        if r is None:
            continue
        s = Series.of(r.metric, r.labels)
        query = f"sum(increase({s}[{RATE_WINDOW}]))"
        minutes = p.steady(0)
        samples = minutes + 5
        retries = {c.id: c.retry.attempts for c in calls.values() if c.retry is not None}
        policy = ", ".join(f"{sid} ×{retries[sid]}" for sid in wf.steps if sid in retries)
        where = f"; its state is in {wf.state.store}" if wf.state is not None else ""
        query_hint = f" ({wf.state.query})" if wf.state is not None and wf.state.query else ""
        p.add(
            Alert(
                name=p.name(f"WorkflowRetriesExhausted{camel(wf.id)}"),
                group="golden",
                expr=f"{query} > 0",
                query=query,
                op=">",
                threshold=0,
                windows=(RATE_WINDOW,),
                severity="ticket",
                summary=(
                    f"{p.spec.metadata.name}: a step of workflow {wf.id} failed after its last retry"
                    + (f" (retries: {policy})" if policy else "")
                ),
                description=(
                    "Retries ran out (seed 004 §2.2: retry three times, then alert): the request took its "
                    f"fallback. Read the failed workflow's state{query_hint}{where}; the called stage's "
                    "latency and failure alerts say whether it is down."
                ),
                for_=None,
                labels={},
                service=wf.service,
                fire=Case([(str(s), p.counter(1, samples))], minutes),
                quiet=Case([(str(s), p.counter(0, samples))], minutes),
                series=[r.metric],
            )
        )
