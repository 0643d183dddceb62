"""AK110: a fault tree's top-event probability cannot be computed."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity


@register
class FaultTreeProbabilityUnknown(Rule):
    """A fault-tree event gives `rate_per_hour` without the tree's `mission_time_h`, or only some events have figures."""

    code = "AK110"
    name = "faulttree-probability-unknown"
    severity = Severity.WARNING
    source = "seed 000 §3.4; p = 1 - e^(-λt) needs the mission time t"
    rationale = """
The runbook orders checks by each event's share of the top event's probability
(Fussell–Vesely importance), and the fault-tree diagram prints that probability. A rate
becomes a probability only over a mission time (p = 1 - e^(-λt)); and when some events
have figures and others none, the top event's probability is unknown, so archkit falls
back to ordering by cut-set size.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for tree in ctx.spec.faulttrees:
            known = []
            for e in tree.events:
                if e.probability is None and e.rate_per_hour is not None and tree.mission_time_h is None:
                    yield ctx.at(
                        e,
                        "rate_per_hour",
                        f"event '{e.id}' gives rate_per_hour but tree '{tree.id}' "
                        "has no mission_time_h to turn it into a probability",
                    )
                    known.append(True)
                else:
                    known.append(e.probability is not None or e.rate_per_hour is not None)
            if any(known) and not all(known):
                for e, k in zip(tree.events, known, strict=False):
                    if not k:
                        yield ctx.at(
                            e,
                            "id",
                            f"event '{e.id}' has no probability or rate_per_hour while "
                            f"other events of tree '{tree.id}' do: the top probability is unknown",
                        )
