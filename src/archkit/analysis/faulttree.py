"""Fault-tree analysis: minimal cut sets, exact top-event probability, importance, single points of failure.

Pure functions over `archkit.spec.model.FaultTree`; no I/O.

- Minimal cut sets are computed bottom-up (the set algebra MOCUS performs top-down): an OR
  gate unites its inputs' families, an AND gate crosses them, an ATLEAST k/n gate is the
  OR of all k-subsets' ANDs; every step drops non-minimal sets (absorption).
- The top-event probability is exact: a reduced ordered BDD of the tree is evaluated by
  Shannon expansion, P(f) = p(x)·P(f|x=1) + (1-p(x))·P(f|x=0), with basic events assumed
  independent. The rare-event approximation (sum of cut-set probabilities) and the
  min-cut upper bound (1 - Π(1 - P(C))) are reported beside it, labelled as approximations.
- Importance (NUREG/CR-3385 definitions): Birnbaum I_B(e) = P(top | e) - P(top | ¬e);
  Fussell–Vesely FV(e) = P(∪ cut sets that contain e) / P(top), both exact via the BDD.
- A basic event given as `rate_per_hour` becomes a probability over the tree's
  `mission_time_h` with the exponential model p = 1 - e^(-λt).

Validated against OpenFTA's published results for its "Theatre" and "Three Motor" trees
(tests/analysis/faulttrees/).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from archkit.spec.model import BasicEvent, FaultTree, Gate, GateType

__all__ = [
    "FaultTreeAnalysis",
    "FaultTreeError",
    "analyse",
    "event_probabilities",
    "minimal_cut_sets",
    "ranked_events",
    "single_points_of_failure",
    "top_probability",
]

# Guard against combinatorial blow-up on pathological trees (cut sets are listed in runbooks,
# so a tree with more than this many is unreadable anyway).
MAX_CUT_SETS = 200_000


class FaultTreeError(ValueError):
    """The tree cannot be analysed: an unknown input id, a cycle, a bad `atleast` gate."""


CutSets = list[frozenset[str]]


# --------------------------------------------------------------------------- structure


def _structure(tree: FaultTree) -> tuple[dict[str, Gate], dict[str, BasicEvent], list[str]]:
    """Gates and events by id, and the basic events in depth-first order from the top."""
    gates = {g.id: g for g in tree.gates}
    events = {e.id: e for e in tree.events}
    order: list[str] = []
    seen: set[str] = set()
    state: dict[str, int] = {}

    def visit(node: str, trail: tuple[str, ...]) -> None:
        if node in gates:
            if state.get(node) == 1:
                raise FaultTreeError(f"tree '{tree.id}': cycle " + " -> ".join(trail + (node,)))
            if state.get(node) == 2:
                return
            state[node] = 1
            g = gates[node]
            if g.type is GateType.ATLEAST and (g.k is None or not 1 <= g.k <= len(g.inputs)):
                raise FaultTreeError(
                    f"tree '{tree.id}': gate '{g.id}' is atleast with k={g.k} and {len(g.inputs)} inputs"
                )
            for child in g.inputs:
                visit(child, trail + (node,))
            state[node] = 2
        elif node in events:
            if node not in seen:
                seen.add(node)
                order.append(node)
        else:
            where = f"an input of gate '{trail[-1]}'" if trail else "the top"
            raise FaultTreeError(f"tree '{tree.id}': '{node}' ({where}) is neither a gate nor an event")

    visit(tree.top, ())
    return gates, events, order


# --------------------------------------------------------------------------- cut sets


def _minimise(family: Iterable[frozenset[str]]) -> CutSets:
    """Drop every set that contains another (absorption: A + A·B = A)."""
    kept: CutSets = []
    for s in sorted(set(family), key=lambda c: (len(c), sorted(c))):
        if not any(k <= s for k in kept):
            kept.append(s)
    return kept


def _and(a: CutSets, b: CutSets) -> CutSets:
    out = {x | y for x in a for y in b}
    if len(out) > MAX_CUT_SETS:
        raise FaultTreeError(f"more than {MAX_CUT_SETS} cut sets; the tree is too large to list them")
    return _minimise(out)


def _or(families: Iterable[CutSets]) -> CutSets:
    return _minimise(s for fam in families for s in fam)


def _sort_key(cs: frozenset[str]) -> tuple:
    return (len(cs), sorted(cs))


def minimal_cut_sets(tree: FaultTree) -> list[frozenset[str]]:
    """The tree's minimal cut sets, sorted by size, then by their sorted event ids.

    Raises FaultTreeError when the tree references an unknown id or has a cycle.
    """
    gates, events, _ = _structure(tree)
    memo: dict[str, CutSets] = {}

    def cs(node: str) -> CutSets:
        if node in memo:
            return memo[node]
        if node in events:
            res: CutSets = [frozenset([node])]
        else:
            g = gates[node]
            kids = [cs(i) for i in g.inputs]
            if g.type is GateType.OR:
                res = _or(kids)
            elif g.type is GateType.AND:
                res = [frozenset()]
                for fam in kids:
                    res = _and(res, fam)
            else:  # atleast k of n: f(k, i) = kid_i · f(k-1, i+1) + f(k, i+1)
                k = g.k or 1
                table: dict[tuple[int, int], CutSets] = {}

                def f(need: int, i: int) -> CutSets:
                    if need == 0:
                        return [frozenset()]
                    if len(kids) - i < need:
                        return []
                    key = (need, i)
                    if key not in table:
                        table[key] = _or([_and(kids[i], f(need - 1, i + 1)), f(need, i + 1)])
                    return table[key]

                res = f(k, 0)
        memo[node] = res
        return res

    return sorted(cs(tree.top), key=_sort_key)


def single_points_of_failure(cut_sets: Iterable[frozenset[str]]) -> list[str]:
    """Events that alone cause the top event (cut sets of size one), sorted."""
    return sorted(next(iter(c)) for c in cut_sets if len(c) == 1)


# --------------------------------------------------------------------------- probabilities


def event_probability(event: BasicEvent, mission_time_h: float | None) -> float | None:
    """An event's probability: `probability` if given, else 1 - e^(-λt) from `rate_per_hour`."""
    if event.probability is not None:
        return float(event.probability)
    if event.rate_per_hour is not None and mission_time_h is not None:
        return -math.expm1(-event.rate_per_hour * mission_time_h)
    return None


def event_probabilities(tree: FaultTree) -> dict[str, float | None]:
    """Every event's probability (None when neither a probability nor a rate with a mission time)."""
    return {e.id: event_probability(e, tree.mission_time_h) for e in tree.events}


class _Bdd:
    """A small reduced ordered BDD: node 0 is FALSE, node 1 is TRUE, others (var, low, high)."""

    def __init__(self) -> None:
        self.nodes: list[tuple[int, int, int]] = [(-1, 0, 0), (-1, 1, 1)]
        self.unique: dict[tuple[int, int, int], int] = {}
        self.cache: dict[tuple[str, int, int], int] = {}

    def mk(self, var: int, low: int, high: int) -> int:
        if low == high:
            return low
        key = (var, low, high)
        node = self.unique.get(key)
        if node is None:
            node = len(self.nodes)
            self.nodes.append(key)
            self.unique[key] = node
        return node

    def var(self, v: int) -> int:
        return self.mk(v, 0, 1)

    def apply(self, op: str, a: int, b: int) -> int:
        if op == "and":
            if a == 0 or b == 0:
                return 0
            if a == 1:
                return b
            if b == 1:
                return a
        else:
            if a == 1 or b == 1:
                return 1
            if a == 0:
                return b
            if b == 0:
                return a
        if a == b:
            return a
        if a > b:
            a, b = b, a
        key = (op, a, b)
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        va, vb = self.nodes[a][0], self.nodes[b][0]
        v = min(va, vb)
        a0, a1 = (self.nodes[a][1], self.nodes[a][2]) if va == v else (a, a)
        b0, b1 = (self.nodes[b][1], self.nodes[b][2]) if vb == v else (b, b)
        res = self.mk(v, self.apply(op, a0, b0), self.apply(op, a1, b1))
        self.cache[key] = res
        return res

    def fold(self, op: str, items: list[int]) -> int:
        acc = 1 if op == "and" else 0
        for it in items:
            acc = self.apply(op, acc, it)
        return acc

    def probability(self, root: int, p: list[float]) -> float:
        """Shannon expansion bottom-up: nodes are created after their children, so index order works."""
        val = [0.0] * len(self.nodes)
        val[1] = 1.0
        for i in range(2, root + 1):
            v, lo, hi = self.nodes[i]
            val[i] = p[v] * val[hi] + (1.0 - p[v]) * val[lo]
        return val[root]


def _tree_bdd(tree: FaultTree) -> tuple[_Bdd, int, dict[str, int]]:
    gates, events, order = _structure(tree)
    index = {e: i for i, e in enumerate(order)}  # DFS order from the top: a good static order
    bdd = _Bdd()
    memo: dict[str, int] = {}

    def build(node: str) -> int:
        if node in memo:
            return memo[node]
        if node in events:
            res = bdd.var(index[node])
        else:
            g = gates[node]
            kids = [build(i) for i in g.inputs]
            if g.type is GateType.OR:
                res = bdd.fold("or", kids)
            elif g.type is GateType.AND:
                res = bdd.fold("and", kids)
            else:
                k = g.k or 1
                table: dict[tuple[int, int], int] = {}

                def f(need: int, i: int) -> int:
                    if need == 0:
                        return 1
                    if len(kids) - i < need:
                        return 0
                    if (need, i) not in table:
                        table[(need, i)] = bdd.apply(
                            "or", bdd.apply("and", kids[i], f(need - 1, i + 1)), f(need, i + 1)
                        )
                    return table[(need, i)]

                res = f(k, 0)
        memo[node] = res
        return res

    return bdd, build(tree.top), index


def top_probability(tree: FaultTree) -> float | None:
    """Exact probability of the top event (BDD), or None when an event's probability is unknown."""
    probs = event_probabilities(tree)
    bdd, root, index = _tree_bdd(tree)
    p = [0.0] * len(index)
    for e, i in index.items():
        if probs.get(e) is None:
            return None
        p[i] = probs[e]  # type: ignore[assignment]
    return bdd.probability(root, p)


# --------------------------------------------------------------------------- the whole analysis


@dataclass
class FaultTreeAnalysis:
    """Everything archkit derives from one fault tree."""

    tree_id: str
    cut_sets: list[frozenset[str]]
    single_points_of_failure: list[str]
    event_probabilities: dict[str, float | None]
    probability: float | None = None  # exact (BDD); None if any probability is unknown
    method: str = "bdd-exact"
    rare_event: float | None = None  # approximation: Σ P(C)
    mcub: float | None = None  # approximation: 1 - Π(1 - P(C))
    birnbaum: dict[str, float] = field(default_factory=dict)
    fussell_vesely: dict[str, float] = field(default_factory=dict)
    missing_probability: list[str] = field(default_factory=list)
    unused_events: list[str] = field(default_factory=list)

    def cut_set_probability(self, cs: frozenset[str]) -> float | None:
        out = 1.0
        for e in cs:
            p = self.event_probabilities.get(e)
            if p is None:
                return None
            out *= p
        return out

    def to_dict(self) -> dict:
        return {
            "tree": self.tree_id,
            "cut_sets": [sorted(c) for c in self.cut_sets],
            "single_points_of_failure": self.single_points_of_failure,
            "probability": self.probability,
            "method": self.method,
            "approximations": {"rare_event": self.rare_event, "mcub": self.mcub},
            "event_probabilities": self.event_probabilities,
            "birnbaum": self.birnbaum,
            "fussell_vesely": self.fussell_vesely,
            "missing_probability": self.missing_probability,
            "unused_events": self.unused_events,
        }


def analyse(tree: FaultTree) -> FaultTreeAnalysis:
    """Cut sets, exact top probability, approximations and importance of one tree.

    Raises FaultTreeError for a tree that cannot be analysed (see AK108 for the located finding).
    """
    cut_sets = minimal_cut_sets(tree)
    probs = event_probabilities(tree)
    bdd, root, index = _tree_bdd(tree)
    res = FaultTreeAnalysis(tree.id, cut_sets, single_points_of_failure(cut_sets), probs)
    res.unused_events = sorted(e.id for e in tree.events if e.id not in index)
    res.missing_probability = sorted(e for e in index if probs.get(e) is None)
    if res.missing_probability:
        res.method = "unknown: events without probability"
        return res
    p = [0.0] * len(index)
    for e, i in index.items():
        p[i] = probs[e]  # type: ignore[assignment]
    top = bdd.probability(root, p)
    res.probability = top
    cs_p = [res.cut_set_probability(c) or 0.0 for c in cut_sets]
    res.rare_event = sum(cs_p)
    res.mcub = -math.expm1(sum(math.log1p(-x) if x < 1 else -math.inf for x in cs_p))
    for e, i in sorted(index.items()):
        saved = p[i]
        p[i] = 1.0
        hi = bdd.probability(root, p)
        p[i] = 0.0
        lo = bdd.probability(root, p)
        p[i] = saved
        res.birnbaum[e] = hi - lo
        containing = [c for c in cut_sets if e in c]
        if top > 0 and containing:
            sub = bdd.fold(
                "or",
                [bdd.fold("and", [bdd.var(index[x]) for x in sorted(c, key=index.get)]) for c in containing],
            )
            res.fussell_vesely[e] = bdd.probability(sub, p) / top
        else:
            res.fussell_vesely[e] = 0.0
    return res


DEFAULT_CHECK_COST_S = 60.0  # a check whose `cost_s` is not given is assumed to take a minute


def ranked_events(tree: FaultTree, analysis: FaultTreeAnalysis | None = None) -> list[BasicEvent]:
    """Leaf events in the order an on-call engineer should check them.

    With probabilities: decreasing Fussell–Vesely importance per second of check (`cost_s`,
    default one minute) — FV(e) is the share of the top event's probability that e takes part
    in, and inspecting in decreasing probability/cost order minimises the expected time to find
    a single cause (the classic sequential-search result, Kadane & Simon 1977). Without
    probabilities: events in smaller cut sets first, then cheaper. Ties keep document order,
    so the order is stable.
    """
    a = analysis or analyse(tree)
    smallest: dict[str, int] = {}
    for c in a.cut_sets:
        for e in c:
            smallest[e] = min(smallest.get(e, len(c)), len(c))
    pos = {e.id: i for i, e in enumerate(tree.events)}

    def key(e: BasicEvent) -> tuple:
        cost = e.cost_s if e.cost_s is not None else DEFAULT_CHECK_COST_S
        if a.probability is not None:
            fv = a.fussell_vesely.get(e.id, 0.0)
            # rounded so that float noise never reorders equals
            score = -round(fv / cost, 12) if cost > 0 else -math.inf
            return (e.id not in smallest, score, -round(fv, 12), pos[e.id])
        return (e.id not in smallest, smallest.get(e.id, 10**9), cost, pos[e.id])

    return sorted(tree.events, key=key)
