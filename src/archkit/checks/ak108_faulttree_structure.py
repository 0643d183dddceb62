"""AK108: a fault tree is malformed."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic
from archkit.faulttree import FaultTreeLimitError
from archkit.faulttree.model import FaultTreeError, compile_tree
from archkit.spec.faulttrees import FaultTree
from archkit.spec.model import GateType

ARITY = {GateType.NOT: 1, GateType.IFF: 2, GateType.IMPLY: 2}


@register
class FaultTreeStructure(Rule):
    """A fault tree has a cycle, an unused event, a gate with the wrong inputs, or is refused by the analysis."""

    code = "AK108"
    name = "faulttree-structure"
    source = "seed 000 §3.4: root event, gates, leaf checks"
    rationale = """
A fault tree is a directed acyclic graph from the top event to leaf events. Cycles make
minimal cut sets undefined; an event no gate uses never appears in the runbook; an
`atleast` gate needs 1 <= k <= number of inputs; `not` takes one input, `iff` and `imply`
two; an `inhibit` gate needs its conditioning event. Any other reason the analysis refuses the tree is reported here too, so no tree
is drawn without its figures silently.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for tree in ctx.spec.faulttrees:
            found = list(self._structure(ctx, tree))
            yield from found
            if found:
                continue
            try:
                compile_tree(tree)
            except FaultTreeLimitError:
                pass  # AK111
            except FaultTreeError as exc:
                if "neither a gate nor an event" not in str(exc) and "unknown event" not in str(exc):
                    yield ctx.at(tree, "top", str(exc))  # dangling references are AK103's

    def _structure(self, ctx: Context, tree: FaultTree) -> Iterator[Diagnostic]:
        gates = {g.id: g for g in tree.gates}
        used = {tree.top}
        for grp in tree.ccf_groups:
            used.update(grp.members)  # unknown members are AK103's
        for g in tree.gates:
            used.update(g.inputs)
            if g.type in ARITY and len(g.inputs) != ARITY[g.type]:
                yield ctx.at(
                    g,
                    "inputs",
                    f"gate '{g.id}' is {g.type.value} with {len(g.inputs)} inputs; it takes {ARITY[g.type]}",
                )
            if g.type is GateType.INHIBIT:
                if g.condition is None:
                    yield ctx.at(
                        g, "type", f"inhibit gate '{g.id}' has no condition (the conditioning event)"
                    )
                else:
                    used.add(g.condition)
            elif g.condition is not None:
                yield ctx.at(
                    g,
                    "condition",
                    f"gate '{g.id}' is {g.type.value}; 'condition' applies to inhibit gates only",
                )
            if g.type is GateType.ATLEAST:
                if g.k is None or g.k > len(g.inputs):
                    yield ctx.at(g, "k", f"gate '{g.id}' is atleast but k={g.k} with {len(g.inputs)} inputs")
            elif g.k is not None:
                yield ctx.at(g, "k", f"gate '{g.id}' is {g.type.value}; 'k' applies to atleast gates only")
        for e in tree.events:
            if e.id not in used:
                yield ctx.at(e, "id", f"event '{e.id}' is not an input of any gate in tree '{tree.id}'")
        for g in tree.gates:
            if g.id not in used:
                yield ctx.at(g, "id", f"gate '{g.id}' is not reachable from top '{tree.top}'")
        # cycle detection: an iterative depth-first walk (a chain of thousands of gates must not
        # meet Python's recursion limit); `path` is the current trail, `state` 1 on it, 2 done
        state: dict[str, int] = {}
        for root in gates:
            if state.get(root):
                continue
            path: list[str] = [root]
            todo: list[Iterator[str]] = [iter(gates[root].inputs)]
            state[root] = 1
            while todo:
                inp = next(todo[-1], None)
                if inp is None:
                    state[path.pop()] = 2
                    todo.pop()
                elif inp in gates and state.get(inp) == 1:
                    cyc = path + [inp]
                    yield ctx.at(gates[cyc[-2]], "inputs", "fault tree cycle: " + " -> ".join(cyc))
                    return
                elif inp in gates and not state.get(inp):
                    state[inp] = 1
                    path.append(inp)
                    todo.append(iter(gates[inp].inputs))
