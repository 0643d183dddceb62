"""AK111: a fault tree cannot be analysed within its limits."""

from archkit.checks.registry import Rule, register
from archkit.faulttree import FaultTreeError, FaultTreeLimitError, analyse


@register
class FaultTreeOverLimits(Rule):
    """A fault tree's decision diagrams outgrow `limits.max_bdd_nodes` or `max_zbdd_nodes`."""

    code = "AK111"
    name = "faulttree-over-limits"
    source = "seed 000 §3.4: the fault tree is the on-call map; a tree that cannot be analysed has no order"
    rationale = """
archkit computes the top-event probability, the minimal cut sets and the importance of each
event from binary decision diagrams. Their size depends on the tree and on the variable
order; a tree whose BDD needs more nodes than `limits.max_bdd_nodes` (each million takes about
half a second; memory holds only the live ones), or whose minimal cut sets need more ZBDD
nodes and steps than `limits.max_zbdd_nodes` (up to two seconds a million), is stopped
instead of running without bound. Over the first there is no probability, over the second no
cut sets (the probability and importance stand); without this finding the diagram would lack
them and the runbook would fall back to a weaker order, silently.
Raise the limit in the tree's `limits`, split the tree at independent sub-systems, or bound
the cut sets with `limits.max_order`.
"""

    def check(self, ctx):
        for tree in ctx.spec.faulttrees:
            try:
                a = analyse(tree)
            except FaultTreeLimitError as exc:
                yield self._finding(ctx, tree, str(exc), exc.limit, exc.value)
            except FaultTreeError:
                continue  # structure: AK108 reports it
            else:
                if a.cut_sets_refused is not None:  # the probability stands; the cut sets do not
                    limit = tree.limits.max_zbdd_nodes
                    yield self._finding(ctx, tree, a.cut_sets_refused, "max_zbdd_nodes", limit)

    @staticmethod
    def _finding(ctx, tree, message: str, limit: str, value: int):
        return ctx.at(
            tree,
            "limits" if "limits" in tree.model_fields_set else "id",
            message,
            hint=f"set faulttrees[].limits.{limit} above {value:,}, or limits.max_order",
        )
