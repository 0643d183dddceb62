"""AK111: a fault tree cannot be analysed within its limits."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity
from archkit.faulttree import FaultTreeError, FaultTreeLimitError, analyse
from archkit.spec.faulttrees import FaultTree


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
the cut sets with `limits.max_order`. A tree with more minimal cut sets than
`limits.max_cut_sets` (10,000 by default) lists the first ones and says so (info): the counts
by order and the probability are exact, only the listing is cut. The limits are budgets of
work, so results do not depend on the machine; the defaults keep `archkit check` within about
2 s and 512 MiB on a 2-core machine, and the schema caps each (64M, 16M, 2M).
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
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
                elif a.cut_set_count > len(a.cut_sets) >= tree.limits.max_cut_sets:
                    # the listing stopped at its budget: counts and probability stand (info)
                    limit = tree.limits.max_cut_sets
                    yield self._finding(
                        ctx,
                        tree,
                        f"tree '{tree.id}': {a.cut_set_count:,} minimal cut sets, the first {limit:,} listed "
                        f"(limit `limits.max_cut_sets`; raise it in the tree's `limits`, up to 2,000,000, "
                        "~11 s and ~1 GB a million); the counts by order and the probability are exact",
                        "max_cut_sets",
                        limit,
                        Severity.INFO,
                    )

    @staticmethod
    def _finding(
        ctx: Context, tree: FaultTree, message: str, limit: str, value: int, severity: Severity | None = None
    ) -> Diagnostic:
        return ctx.at(
            tree,
            "limits" if "limits" in tree.model_fields_set else "id",
            message,
            severity=severity,
            hint=f"set faulttrees[].limits.{limit} above {value:,}, or limits.max_order",
        )
