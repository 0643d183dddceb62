"""AK104: the data flow has a cycle."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic
from archkit.spec.dataflow import Edge


@register
class DataflowCycle(Rule):
    """The data flow has a cycle, so latency along a path is unbounded."""

    code = "AK104"
    name = "dataflow-cycle"
    source = "seed 004 §2.1: a scenario flow is a directed graph with timing constraints"
    rationale = """
Latency budgets are summed along paths of the data flow; a cycle makes the sum infinite
and the diagram unreadable. Model loops (retries, re-ranking) in the control flow instead,
where each call has a timeout and bounded retries.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        spec = ctx.spec
        succ: dict[str, list[Edge]] = {s.id: [] for s in spec.dataflow.stages}
        for e in spec.dataflow.edges:
            if e.from_ in succ and e.to in succ:
                succ[e.from_].append(e)
        color = {n: 0 for n in succ}  # 0 new, 1 on stack, 2 done
        reported = set()
        for root in succ:
            if color[root]:
                continue
            stack = [(root, iter(succ[root]))]
            path = [root]
            color[root] = 1
            while stack:
                node, it = stack[-1]
                edge = next(it, None)
                if edge is None:
                    color[node] = 2
                    stack.pop()
                    path.pop()
                    continue
                nxt = edge.to
                if color[nxt] == 1:
                    cycle = path[path.index(nxt) :] + [nxt]
                    key = frozenset(cycle)
                    if key not in reported:
                        reported.add(key)
                        yield ctx.at(edge, "to", "data flow cycle: " + " -> ".join(cycle))
                elif color[nxt] == 0:
                    color[nxt] = 1
                    stack.append((nxt, iter(succ[nxt])))
                    path.append(nxt)
