"""AK499: a stage that holds business logic sits in the data plane."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic
from archkit.spec.model import Plane, StageKind

# Kinds whose work is a business decision: a rules engine, a human review step.
BUSINESS = {StageKind.rules: "a rules engine", StageKind.human: "a human decision"}


@register
class BusinessLogicInDataPlane(Rule):
    """A rules or human-review stage is in the data plane, which only moves and converts data."""

    code = "AK499"
    name = "business-logic-in-data-plane"
    source = (
        "seed 004 §2.2 (the data plane only moves and converts data, 'not even string concatenation': "
        "a regex replacement in a Redis pipeline brought on a cache avalanche)"
    )
    rationale = """
Seed 004 §2.2 draws three planes with hard edges: the data plane (queues, object storage,
caches, and the models that turn one format into another) only moves and converts data; the
control plane orchestrates the flow and keeps its state (retries, alerts); the policy plane
holds the rules that change at run time (degradation thresholds, traffic shares). A rules
engine or a human decision in the data plane puts business logic where nothing audits or
versions it, and a bug in it fails every request that passes (the seed's team put a regex
replacement in a Redis pipeline and a bug in it emptied the cache at once). `plane` defaults
to `data`: a `rules` or `human` stage names its plane, `control` for a step of the workflow,
`policy` for rules that change at run time.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for stage in ctx.spec.dataflow.stages:
            what = BUSINESS.get(stage.kind)
            if what is None or stage.plane is not Plane.data:
                continue
            declared = "plane" in stage.model_fields_set
            yield ctx.at(
                stage,
                "plane" if declared else "kind",
                f"stage '{stage.id}' ({what}) is in the data plane"
                + ("" if declared else " (the default)")
                + ", which may hold no business logic",
                hint="plane: control (a step of the workflow) or policy (rules that change at run time)",
            )
