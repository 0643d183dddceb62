"""The fault-tree engine: modules, one BDD per module, probability, gradient, cut sets.

A module is a gate whose descendants are reached only through it (Dutuit & Rauzy, "A
linear-time algorithm to find modules of fault trees", IEEE Trans. Reliability 45(3),
1996). Modules are independent of the rest of the tree, so each gets its own BDD in which
its child modules are single variables: P(module) feeds its parent as that variable's
probability, derivatives chain through module variables, and minimal cut sets of a module
are substituted for its variable (the sets of independent modules never overlap, so the
substitution keeps them minimal). Large industrial trees (Aralia's EDF ones) split into
dozens of small diagrams instead of one huge one.

Variable indices: the basic event at position i of the global order is 2i+1; a module
whose events start at position i is 2i, just before its own events, so every diagram and
the expanded cut-set ZBDD share one order.

Substituting a module's cut sets for its variable assumes the variable occurs positively;
with negation a module may be needed false, so non-coherent trees get their cut sets from
one diagram of the whole tree (`modular=False`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from archkit.faulttree.bdd import Bdd, DiagramLimitError, Zbdd, recursion_room
from archkit.faulttree.model import Formula
from archkit.spec.model import GateType

__all__ = ["Engine"]

Progress = Callable[[str, int, int], None]
# Nodes after which "auto" rebuilds a module with the compiled kernel: ~0.4 s of Python
# diagram, as long as numba takes to load (measured on the Aralia trees, docs/benchmarks.md).
SWITCH_AT = 100_000
# Nodes before a compiled diagram first frees its garbage (~20 MB of arrays); then each time
# the nodes double (quadruple after a pass that freed less than half; `Engine._build`).
COLLECT_AT = 1_000_000


def combine(bdd: Bdd, kind: GateType, kids: list[int], k: int) -> int:
    """One gate over its inputs' diagrams.

    AND and OR take their inputs deepest top variable first, so each step adds a diagram
    that sits above the accumulated one in the order: on edf9203 under a depth-first order
    that cut the nodes created from 3,006,032 to 1,207,361 against taking the newest first.
    """
    if kind in (GateType.AND, GateType.INHIBIT, GateType.NAND):
        acc = 1
        for x in sorted(kids, key=bdd.var.__getitem__, reverse=True):
            acc = bdd.conj(acc, x)
        return bdd.neg(acc) if kind is GateType.NAND else acc
    if kind in (GateType.OR, GateType.NOR):
        acc = 0
        for x in sorted(kids, key=bdd.var.__getitem__, reverse=True):
            acc = bdd.disj(acc, x)
        return bdd.neg(acc) if kind is GateType.NOR else acc
    if kind is GateType.NOT:
        return bdd.neg(kids[0])
    if kind in (GateType.XOR, GateType.IFF):
        acc = 0
        for x in kids:
            acc = bdd.xor(acc, x)
        return bdd.neg(acc) if kind is GateType.IFF else acc
    if kind is GateType.IMPLY:
        return bdd.disj(bdd.neg(kids[0]), kids[1])
    # atleast k of n: f(need, i) = kid_i · f(need-1, i+1) + f(need, i+1), tabulated
    n = len(kids)
    row = [1] * (n + 1)
    for need in range(1, k + 1):
        nxt = [0] * (n + 1)
        for i in range(n - need, -1, -1):
            nxt[i] = bdd.disj(bdd.conj(kids[i], row[i + 1]), nxt[i + 1])
        row = nxt
    return row[0]


@dataclass
class Module:
    gate: str
    index: int  # the module's own variable index (even)
    bdd: Bdd
    root: int = 0
    children: dict[int, str] = field(default_factory=dict)  # variable index -> child module
    nodes: Sequence[int] = field(default_factory=list)


def find_modules(f: Formula) -> list[str]:
    """Gates that are modules, in post-order (children before parents); the top is last."""
    gates = f.gates
    first: dict[str, int] = {}
    second: dict[str, int] = {}
    last: dict[str, int] = {}
    clock = 0
    stack: list[tuple[str, int]] = [(f.top, 0)]
    post: list[str] = []
    while stack:
        node, i = stack.pop()
        if i == 0:
            clock += 1
            if node in first:
                last[node] = clock
                continue
            first[node] = last[node] = clock
            if node not in gates:
                continue
        ins = gates[node][1]
        if i < len(ins):
            stack.append((node, i + 1))
            stack.append((ins[i], 0))
        else:
            clock += 1
            second[node] = last[node] = clock
            post.append(node)
    lo: dict[str, int] = {}
    hi: dict[str, int] = {}
    for g in post:  # children finish first, so their ranges are known
        a, b = 1 << 60, -1
        for c in gates[g][1]:
            a = min(a, first[c], lo.get(c, 1 << 60))
            b = max(b, last[c], hi.get(c, -1))
        lo[g], hi[g] = a, b
    return [g for g in post if first[g] < lo[g] and hi[g] < second[g]]


class Engine:
    """A compiled tree: modules and their BDDs over one global variable order."""

    def __init__(
        self,
        f: Formula,
        order: list[str],
        max_nodes: int,
        progress: Progress | None = None,
        modular: bool = True,
        kernel: str = "auto",
        heuristic: str = "",
    ) -> None:
        start = time.perf_counter()
        self.formula = f
        self.order = order
        self.heuristic = heuristic  # which variable-order heuristic built `order`
        self.kernel = "python"  # which BDD implementation built the diagrams
        self.var_index = {v: 2 * i + 1 for i, v in enumerate(order)}
        self.names: dict[int, str] = {i: v for v, i in self.var_index.items()}
        mods = find_modules(f) if modular else [f.top]
        self.is_module = set(mods)
        firstpos = self._first_positions()
        self.modules: dict[str, Module] = {}
        self.constant: dict[str, int] = {}
        self.created = 0  # nodes made, those garbage-collected while building included
        with recursion_room(len(order)):
            for done, g in enumerate(mods, 1):
                pos = firstpos.get(g)
                m = self._module(g, 2 * pos if pos is not None else -1, kernel, max_nodes)
                self.created += m.bdd.created
                m.root = m.bdd.finish(m.root)
                m.nodes = m.bdd.reachable(m.root)
                if m.root < 2:
                    self.constant[g] = m.root
                self.modules[g] = m
                if progress is not None:
                    progress("modules", done, len(mods))
        self.seconds = time.perf_counter() - start

    def _module(self, g: str, index: int, kernel: str, max_nodes: int) -> Module:
        """Module `g` built by the kernel asked for: "python" (`ft_bdd.Bdd`), "compiled"
        (`ft_kernel`, numba), or "auto": the Python diagram, and the compiled one for a module
        that outgrows SWITCH_AT nodes in Python. Loading numba costs ~0.4 s (and compiling,
        once per machine, ~5 s), which a module that small never repays."""
        nvars = len(self.order)
        if kernel != "compiled":
            budget = max_nodes if kernel == "python" else min(max_nodes, SWITCH_AT)
            m = Module(g, index, Bdd(nvars, budget))
            try:
                m.root = self._build(m)
                return m
            except DiagramLimitError:
                if kernel == "python" or budget == max_nodes:
                    raise
        from archkit.faulttree import compiled
        from archkit.faulttree import kernel as ft_kernel

        if not ft_kernel.available(nvars):
            m = Module(g, index, Bdd(nvars, max_nodes))
        else:
            m = Module(g, index, compiled.CompiledBdd(nvars, max_nodes))
            self.kernel = "compiled"
        m.root = self._build(m)
        return m

    @property
    def top(self) -> Module:
        return self.modules[self.formula.top]

    @property
    def node_count(self) -> int:
        """Nodes the diagrams made, garbage-collected ones included (the work done)."""
        return self.created

    def _first_positions(self) -> dict[str, int]:
        """Each gate's first variable position (gates over constants only have none)."""
        gates = self.formula.gates
        pos: dict[str, int] = {}
        done: set[str] = set()
        stack = [self.formula.top]
        while stack:
            n = stack[-1]
            if n in done or n not in gates:
                stack.pop()
                continue
            pending = [x for x in gates[n][1] if x in gates and x not in done]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            done.add(n)
            cands = [pos[x] for x in gates[n][1] if x in pos]
            cands += [(self.var_index[x] - 1) // 2 for x in gates[n][1] if x in self.var_index]
            if cands:
                pos[n] = min(cands)
        return pos

    def _build(self, m: Module) -> int:
        f, bdd = self.formula, m.bdd
        val: dict[str, int] = {}
        # uses[x]: parents of x in this module not built yet. A diagram whose uses reach 0 is
        # garbage, which a collecting diagram frees once its nodes grow (as CUDD does).
        uses = self._uses(m) if bdd.collects else {}
        collect_at = COLLECT_AT
        stack = [m.gate]
        while stack:
            node = stack[-1]
            if node in val:
                stack.pop()
                continue
            if node in f.constants:
                val[node] = int(f.constants[node])
            elif node in self.var_index:
                val[node] = bdd.variable(self.var_index[node])
            elif node != m.gate and node in self.is_module:
                sub = self.modules[node]
                if node in self.constant:
                    val[node] = self.constant[node]
                else:
                    val[node] = bdd.variable(sub.index)
                    m.children[sub.index] = node
            else:
                kind, ins, k = f.gates[node]
                pending = [x for x in ins if x not in val]
                if pending:
                    stack.extend(pending)
                    continue
                val[node] = combine(bdd, kind, [val[x] for x in ins], k)
                if uses:
                    for x in ins:
                        uses[x] -= 1
                    if len(bdd) >= collect_at:
                        before = len(bdd)
                        live = [x for x in val if uses.get(x, 1) > 0]
                        for x, r in zip(live, bdd.collect([val[x] for x in live]), strict=True):
                            val[x] = r
                        for x in [x for x in val if uses.get(x, 1) <= 0]:
                            del val[x]
                        # a pass that freed little would free little again soon: wait for the
                        # nodes to quadruple instead (das9701: three of six passes freed < 7 %)
                        grow = 2 if 2 * len(bdd) <= before else 4
                        collect_at = max(COLLECT_AT, grow * len(bdd))
            stack.pop()
        return val[m.gate]

    def _uses(self, m: Module) -> dict[str, int]:
        """How many times each node is an input of a gate that module `m` builds itself."""
        gates = self.formula.gates
        uses: dict[str, int] = {}
        seen = {m.gate}
        stack = [m.gate]
        while stack:
            for x in gates[stack.pop()][1]:
                uses[x] = uses.get(x, 0) + 1
                if x not in seen and x in gates and x not in self.is_module:
                    seen.add(x)
                    stack.append(x)
        return uses

    # ---- quantities

    def probability(
        self, p: dict[str, float]
    ) -> tuple[float, dict[str, dict[int, float]], dict[str, dict[int, float]]]:
        """P(top), each module's node probabilities, and each module's variable probabilities."""
        with recursion_room(len(self.order)):
            pm: dict[str, float] = {}
            vals: dict[str, dict[int, float]] = {}
            local: dict[str, dict[int, float]] = {}
            for g, m in self.modules.items():  # post-order: children first
                if g in self.constant:
                    pm[g] = float(self.constant[g])
                    continue
                q = {
                    v: pm[m.children[v]] if v % 2 == 0 else p[self.names[v]] for v in m.bdd.variables(m.nodes)
                }
                vals[g] = m.bdd.probability(m.root, q, m.nodes)  # type: ignore[arg-type]
                local[g] = q
                pm[g] = vals[g][m.root]
            return pm[self.formula.top], vals, local

    def gradient(
        self, vals: dict[str, dict[int, float]], local: dict[str, dict[int, float]]
    ) -> dict[str, float]:
        """∂P(top)/∂p(e) for every basic event, chained through module variables."""
        with recursion_room(len(self.order)):
            weight = {self.formula.top: 1.0}
            out: dict[str, float] = {}
            for g in reversed(list(self.modules)):  # parents before children
                m = self.modules[g]
                w = weight.get(g, 0.0)
                if g in self.constant:
                    continue
                for v, d in m.bdd.gradient(m.root, local[g], vals[g], m.nodes).items():
                    if v % 2 == 0:
                        weight[m.children[v]] = w * d
                    else:
                        out[self.names[v]] = w * d
            return out

    def cut_sets(self, z: Zbdd, order: int | None) -> int:
        """The tree's minimal cut sets as one ZBDD over basic-event indices."""
        with recursion_room(len(self.order)):
            expanded: dict[str, int] = {}
            for g, m in self.modules.items():
                if g in self.constant:
                    expanded[g] = self.constant[g]
                    continue
                local = self._minsol(z, m, order)
                memo: dict[int, int] = {}
                expanded[g] = self._expand(z, local, m, expanded, memo)
            root = expanded[self.formula.top]
            return z.restrict_order(root, order) if order is not None else root

    def _minsol(self, z: Zbdd, m: Module, order: int | None) -> int:
        """Module m's minimal solutions in z: compiled (`compiled.minimal_solutions`) for a
        compiled diagram, then copied into z; otherwise `Zbdd.minsol` over Python lists."""
        if self.kernel == "compiled":
            from archkit.faulttree import compiled

            if isinstance(m.bdd, compiled.CompiledBdd):
                out = compiled.minimal_solutions(m.bdd, m.root, order, z.max_nodes - len(z))
                if out is not None:
                    return compiled.into_zbdd(z, out)
        m.bdd.lists()
        return z.minsol(m.bdd, m.root, order, {})

    def _expand(self, z: Zbdd, n: int, m: Module, expanded: dict[str, int], memo: dict[int, int]) -> int:
        if n < 2:
            return n
        hit = memo.get(n)
        if hit is not None:
            return hit
        v = z.var[n]
        lo = self._expand(z, z.lo[n], m, expanded, memo)
        hi = self._expand(z, z.hi[n], m, expanded, memo)
        # a module's variable stands for its own cut sets, which come before hi's variables
        r = z.union(z.concat(expanded[m.children[v]], hi), lo) if v % 2 == 0 else z.mk(v, lo, hi)
        memo[n] = r
        return r
