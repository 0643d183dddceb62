"""AK413: a workflow's state is not persisted where an operator can query it."""

from __future__ import annotations

from collections.abc import Iterator

from archkit.checks.ak412_workflow_retries_unwatched import retrying_steps
from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity

# storage that does not outlive its pod or node: a workflow's state there is lost with it
VOLATILE = {"tmpfs", "emptydir"}


@register
class WorkflowStateNotPersisted(Rule):
    """A workflow with retrying steps has no `state` store, or keeps it on volatile storage."""

    code = "AK413"
    name = "workflow-state-not-persisted"
    severity = Severity.WARNING
    source = 'seed 004 §2.2 (workflow state persisted to PostgreSQL: "second retry, 12 s left" is a query)'
    rationale = """
Seed 004 §2.2 persists every workflow's state to PostgreSQL, so that a restart resumes a
retrying workflow where it was and an operator can see "second retry, 12 s of the timeout
left" with a query. A workflow whose steps retry must say where its state lives
(`state.store`, a topology storage or service; AK103 refuses one that does not exist), and
that store must outlive a pod: `tmpfs` and `emptyDir` storage does not.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        storage = {s.id: s for s in ctx.spec.topology.storage}
        for wf in ctx.spec.workflows:
            if wf.state is None:
                if retrying_steps(ctx, wf.steps):
                    yield ctx.at(
                        wf,
                        "id",
                        f"workflow '{wf.id}' retries steps but declares no state store: a restart loses "
                        "where each retry was, and nobody can query it",
                        hint="state: {store: <a database storage or service>}",
                    )
                continue
            st = storage.get(wf.state.store)
            if st is not None and st.type in VOLATILE:
                yield ctx.at(
                    wf.state,
                    "store",
                    f"workflow '{wf.id}' keeps its state on '{st.id}' ({st.type}), which does not outlive "
                    "its pod",
                )
