"""AK214: a conditional data-flow edge has no weight, so the stages after it are assumed to see every request."""

from __future__ import annotations

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity


@register
class UnweightedBranch(Rule):
    """A branch of the data flow (an edge with a condition) does not say what share of the traffic takes it."""

    code = "AK214"
    name = "unweighted-branch"
    severity = Severity.INFO
    source = (
        "seed 000 §3.1 (per-stage volumes); seed 004 §3.3 (after a content-hash cache only the misses "
        "reach the model); the reference service's cache (80 % of the load test misses it)"
    )
    rationale = """
A stage's arrival rate is the traffic that reaches it: after a cache, only the misses; after
a fallback decision, only its share. An edge with a `condition` but no `weight` is counted
as if every request took it, which is conservative (utilisation, queueing and the pipeline
ceiling all come out worse than they are) but can hide the real bottleneck. Declare the
share of the source stage's traffic as the edge's `weight` (a cache miss ratio, a fallback
share) from a measurement or the load test's traffic mix.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for e in ctx.spec.dataflow.edges:
            if e.condition and e.weight is None:
                yield ctx.at(
                    e,
                    "condition",
                    f"edge {e.from_} -> {e.to} is taken only when '{e.condition}' but has no weight: "
                    f"'{e.to}' is assumed to see all of '{e.from_}''s traffic",
                )
