"""AK106: a control-flow path does not end in a terminal."""

from collections.abc import Iterator

from archkit.checks.common import control_successors
from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic
from archkit.spec.model import Call, Decision


@register
class PathWithoutEnd(Rule):
    """A control-flow path stops at a node with no way on, or loops without reaching a terminal."""

    code = "AK106"
    name = "path-without-end"
    source = "seed 000 §3.2: every branch must end, including its degraded path"
    rationale = """
A call without `next`, a decision without branches, or a loop with no exit leaves a request
hanging: the client waits until its own timeout. Every path must end in a terminal
(success, degraded, rejected or error). Nested calls (`caller:`) return to their caller.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        cf = ctx.spec.controlflow
        nodes = ctx.spec.by_id("control-flow node")
        for n in nodes.values():
            if isinstance(n, Call) and n.caller:
                continue  # a nested call returns to its caller, which carries the path on
            if isinstance(n, Call) and not n.next:
                yield ctx.at(n, "id", f"call '{n.id}' has no 'next': where does the request go after it?")
            if isinstance(n, Decision) and not n.branches:
                yield ctx.at(n, "id", f"decision '{n.id}' has no branches")
        # nodes from which no terminal can be reached (reverse reachability from terminals)
        preds: dict[str, set[str]] = {k: set() for k in nodes}
        for nid, n in nodes.items():
            for _, nxt in control_successors(n):
                if nxt in preds:
                    preds[nxt].add(nid)
        good = {t.id for t in cf.terminals}
        todo = list(good)
        while todo:
            for p in preds.get(todo.pop(), ()):
                if p not in good:
                    good.add(p)
                    todo.append(p)
        for nid, n in nodes.items():
            if nid in good or (isinstance(n, Call) and n.caller):
                continue
            dead_end = (isinstance(n, Call) and not n.next) or (isinstance(n, Decision) and not n.branches)
            if not dead_end and control_successors(n):
                yield ctx.at(n, "id", f"no path from '{nid}' reaches a terminal (a loop without exit?)")
