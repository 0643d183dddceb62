"""AK107: a decision lacks its branches or its failure path."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic


@register
class DecisionBranches(Rule):
    """A decision has fewer than two branches, repeats a branch, or has no failure path."""

    code = "AK107"
    name = "decision-branches"
    source = "seed 000 §3.2: every branch must name its degraded path (HBase timeout → Redis → default)"
    rationale = """
A decision reads data from somewhere (a Redis hash, an HBase row, a header). When that
source is slow or down the decision cannot be made, and the spec must say where the request
goes: `on_failure`. A decision with one branch is not a decision, and two branches with the
same `when` make the diagram ambiguous.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for d in ctx.spec.controlflow.decisions:
            if 0 < len(d.branches) < 2:
                yield ctx.at(
                    d, "branches", f"decision '{d.id}' has only one branch; a decision needs at least two"
                )
            seen = set()
            for br in d.branches:
                if br.when in seen:
                    yield ctx.at(br, "when", f"decision '{d.id}' has two branches for '{br.when}'")
                seen.add(br.when)
            if d.branches and not d.on_failure:
                yield ctx.at(
                    d,
                    "id",
                    f"decision '{d.id}' has no failure path ('on_failure'): where does the "
                    f"request go when {d.source or 'its data source'} cannot answer?",
                )
