"""AK105: a control-flow node cannot be reached from the start."""

from collections.abc import Iterator

from archkit.checks.common import reachable_control_nodes
from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic


@register
class UnreachableControlNode(Rule):
    """A control-flow node cannot be reached from `controlflow.start`."""

    code = "AK105"
    name = "unreachable-control-node"
    source = "seed 000 §3.2: every branch of the control flow is a code contract"
    rationale = """
Each node of the control-flow diagram becomes a function and a test (seed 000 §3.2). A node
no path reaches is either dead code or a missing branch; both should be fixed in the spec.
A control flow with nodes must name its `start`. A nested call (`caller:`) is reached when
its caller is: it runs while the caller's target handles the request.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        cf = ctx.spec.controlflow
        nodes = ctx.spec.by_id("control-flow node")
        if not nodes:
            return
        if not cf.start:
            yield ctx.at(cf, None, "control flow has nodes but no 'start'", key=True)
            return
        if cf.start not in nodes:
            return  # AK103 reports it
        seen = reachable_control_nodes(ctx.spec)
        for nid, node in nodes.items():
            if nid not in seen:
                yield ctx.at(
                    node, "id", f"control-flow node '{nid}' is not reachable from start '{cf.start}'"
                )
