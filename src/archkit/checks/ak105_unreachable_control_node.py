"""AK105: a control-flow node cannot be reached from the start."""

from archkit.checks.common import control_successors
from archkit.checks.registry import Rule, register


@register
class UnreachableControlNode(Rule):
    """A control-flow node cannot be reached from `controlflow.start`."""

    code = "AK105"
    name = "unreachable-control-node"
    source = "seed 000 §3.2: every branch of the control flow is a code contract"
    rationale = """
Each node of the control-flow diagram becomes a function and a test (seed 000 §3.2). A node
no path reaches is either dead code or a missing branch; both should be fixed in the spec.
A control flow with nodes must name its `start`.
"""

    def check(self, ctx):
        cf = ctx.spec.controlflow
        nodes = {n.id: n for n in cf.nodes()}
        if not nodes:
            return
        if not cf.start:
            yield ctx.at(cf, None, "control flow has nodes but no 'start'", key=True)
            return
        if cf.start not in nodes:
            return  # AK103 reports it
        seen = {cf.start}
        todo = [cf.start]
        while todo:
            for _, nxt in control_successors(nodes[todo.pop()]):
                if nxt in nodes and nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        for nid, node in nodes.items():
            if nid not in seen and node is next(n for n in cf.nodes() if n.id == nid):
                yield ctx.at(node, "id", f"control-flow node '{nid}' is not reachable from start '{cf.start}'")
