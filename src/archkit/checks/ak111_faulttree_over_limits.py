"""AK111: a fault tree cannot be analysed within its limits."""

from archkit.analysis.faulttree import FaultTreeError, FaultTreeLimitError, analyse
from archkit.checks.registry import Rule, register


@register
class FaultTreeOverLimits(Rule):
    """A fault tree's decision diagrams outgrow `limits.max_bdd_nodes`: no probability, no cut sets."""

    code = "AK111"
    name = "faulttree-over-limits"
    source = "seed 000 §3.4: the fault tree is the on-call map; a tree that cannot be analysed has no order"
    rationale = """
archkit computes the top-event probability, the minimal cut sets and the importance of each
event from binary decision diagrams. Their size depends on the tree and on the variable
order; a tree whose diagrams need more nodes than `limits.max_bdd_nodes` (each million takes
half a second to a second; memory holds only the live ones) is stopped instead of running
without bound. Without this finding the diagram would be drawn without probability or cut
sets and the runbook would fall back to document order, silently.
Raise the limit in the tree's `limits`, split the tree at independent sub-systems, or bound
the cut sets with `limits.max_order`.
"""

    def check(self, ctx):
        for tree in ctx.spec.faulttrees:
            try:
                analyse(tree)
            except FaultTreeLimitError as exc:
                yield ctx.at(
                    tree,
                    "limits" if "limits" in tree.model_fields_set else "id",
                    str(exc),
                    hint=f"set faulttrees[].limits.{exc.limit} above {exc.value:,}, or limits.max_order",
                )
            except FaultTreeError:
                continue  # structure: AK108 reports it
