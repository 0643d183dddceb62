"""AK198: a decision does not say what it decides on or where that data comes from."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity


@register
class DecisionWithoutCriterion(Rule):
    """A control-flow decision has no `criterion` or no `source`."""

    code = "AK198"
    name = "decision-without-criterion"
    severity = Severity.WARNING
    source = (
        "seed 000 §3.2 (every diamond names its criterion and its data source: 'feature freshness "
        "< 300 s', from the HBase rowkey; the control-flow diagram is a contract for code)"
    )
    rationale = """
A diamond labelled only "features fresh?" cannot be implemented, reviewed or debugged: the
engineer who writes it guesses the threshold, and the one paged at night does not know which
system to look at when it misroutes. Seed 000 §3.2 requires each decision node to name its
criterion (`feature age < 300s`) and the source of the data it reads (`HBase rowkey
user:{id}:features`). Both are drawn on the control-flow diagram and carried into the
generated decision functions (the `stubs` generator).
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for d in ctx.spec.controlflow.decisions:
            missing = [f for f in ("criterion", "source") if not (getattr(d, f) or "").strip()]
            if missing:
                yield ctx.at(
                    d,
                    "id",
                    f"decision '{d.id}' names no {' and no '.join(missing)}",
                    hint="criterion: what is compared (e.g. 'feature age < 300s'); "
                    "source: where its data comes from (e.g. 'HBase rowkey user:{id}')",
                )
