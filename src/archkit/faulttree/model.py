"""A fault tree as a flat Boolean formula: validated structure, house events, CCF expansion,
event probabilities, and the variable order the BDD is built in.

- Gates: or, and, atleast k/n, not, xor (n-ary parity), nand, nor, iff, imply (two inputs),
  inhibit (the inputs AND the conditioning event), as in the Open-PSA MEF 2.0d §5.
- House events are the constants true/false; an analysis may switch any of them.
- A common-cause group replaces each member by an OR of its independent failure and the
  common-cause events of every subset that contains it (NUREG/CR-5485 §5.2): beta factor
  (one event for the whole group), alpha factor (non-staggered testing) and multiple Greek
  letters (MGL).
- Probabilities: a constant; an exponential rate over the mission time, p = 1 - e^(-λt); a
  periodically tested component, p = 1 - e^(-λ·(t - θ) mod τ) once tested (MEF §6.3
  `periodic-test` with λ, τ, θ and t).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

from archkit.errors import InputError
from archkit.spec.model import BasicEvent, CcfGroup, CcfModel, FaultTree, GateType

__all__ = [
    "Formula",
    "FaultTreeError",
    "choose_order",
    "coalesced",
    "compile_tree",
    "order_candidates",
    "event_probability",
    "variable_order",
]

COHERENT = {GateType.OR, GateType.AND, GateType.ATLEAST, GateType.INHIBIT}
BINARY = {GateType.IFF, GateType.IMPLY}
MAX_CCF_MEMBERS = 12  # alpha/MGL groups create 2^m - m - 1 events


class FaultTreeError(InputError, ValueError):
    """The tree cannot be analysed: an unknown input id, a cycle, a gate with the wrong inputs."""


@dataclass
class Formula:
    """The tree after expansion: gates over variables (basic events) and constants."""

    tree_id: str
    top: str
    gates: dict[str, tuple[GateType, list[str], int]]  # id -> (type, inputs, k)
    variables: list[str]  # basic events (including CCF events) reached from the top, DFS order
    probabilities: dict[str, float | None]
    constants: dict[str, bool] = field(default_factory=dict)
    ccf_of: dict[str, str] = field(default_factory=dict)  # CCF event -> its group id

    @property
    def coherent(self) -> bool:
        return all(t in COHERENT for t, _, _ in self.gates.values())


def event_probability(event: BasicEvent, mission_time_h: float | None) -> float | None:
    """An event's probability: a constant, 1 - e^(-λt), or a periodically tested component."""
    if event.probability is not None:
        return float(event.probability)
    lam = event.rate_per_hour
    if lam is None or mission_time_h is None:
        return None
    t = mission_time_h
    if event.test_interval_h is not None:
        first = event.first_test_h if event.first_test_h is not None else event.test_interval_h
        if t >= first:  # the component is as good as new after each test
            t = (t - first) % event.test_interval_h
    return -math.expm1(-lam * t)


def _ccf_events(group: CcfGroup, qt: float) -> dict[frozenset[str], float]:
    """Probability of each failure combination of the group's members (size 1: independent)."""
    m = len(group.members)
    out: dict[frozenset[str], float] = {}
    if group.model is CcfModel.BETA_FACTOR:
        beta = group.factors[0]
        for x in group.members:
            out[frozenset([x])] = (1 - beta) * qt
        out[frozenset(group.members)] = beta * qt
        return out
    if m > MAX_CCF_MEMBERS:
        raise FaultTreeError(
            f"CCF group '{group.id}' has {m} members; at most {MAX_CCF_MEMBERS} for {group.model.value}"
        )
    f = list(group.factors)
    if group.model is CcfModel.ALPHA_FACTOR:
        alpha = f + [0.0] * (m - len(f))
        total = sum((k + 1) * a for k, a in enumerate(alpha))
        if total <= 0:
            raise FaultTreeError(f"CCF group '{group.id}': alpha factors sum to zero")
        q = [(k / math.comb(m - 1, k - 1)) * (alpha[k - 1] / total) * qt for k in range(1, m + 1)]
    else:  # MGL: rho_1 = 1, rho_2.. = beta, gamma, ...; rho_{m+1} = 0
        rho = [1.0] + f[: m - 1] + [0.0] * (m - 1 - len(f[: m - 1])) + [0.0]
        q = [math.prod(rho[:k]) * (1 - rho[k]) / math.comb(m - 1, k - 1) * qt for k in range(1, m + 1)]
    for k in range(1, m + 1):
        if q[k - 1] == 0 and k > 1:
            continue
        for combo in itertools.combinations(group.members, k):
            out[frozenset(combo)] = q[k - 1]
    return out


def compile_tree(tree: FaultTree, house: dict[str, bool] | None = None) -> Formula:
    """Validate the tree and flatten it; `house` overrides house events' states.

    Raises FaultTreeError for an unknown input, a cycle, or a gate with the wrong inputs.
    """
    gates: dict[str, tuple[GateType, list[str], int]] = {}
    for g in tree.gates:
        if g.id in gates:
            continue  # duplicates are AK102's
        inputs = list(g.inputs)
        k = g.k or 0
        if g.type is GateType.ATLEAST and not 1 <= k <= len(inputs):
            raise FaultTreeError(
                f"tree '{tree.id}': gate '{g.id}' is atleast with k={g.k} and {len(inputs)} inputs"
            )
        if g.type is GateType.NOT and len(inputs) != 1:
            raise FaultTreeError(
                f"tree '{tree.id}': gate '{g.id}' is not with {len(inputs)} inputs; it takes one"
            )
        if g.type in BINARY and len(inputs) != 2:
            raise FaultTreeError(
                f"tree '{tree.id}': gate '{g.id}' is {g.type.value} with {len(inputs)} inputs; it takes two"
            )
        if g.type is GateType.INHIBIT:
            if g.condition is None:
                raise FaultTreeError(f"tree '{tree.id}': inhibit gate '{g.id}' has no condition")
            inputs.append(g.condition)
        gates[g.id] = (g.type, inputs, k)
    events = {e.id: e for e in reversed(tree.events)}  # first wins
    states = {h.id: h.state for h in tree.house_events}
    for hid, val in (house or {}).items():
        if hid not in states:
            known = ", ".join(sorted(states)) or "none"
            raise FaultTreeError(f"tree '{tree.id}': no house event '{hid}' (known: {known})")
        states[hid] = val
    probs: dict[str, float | None] = {
        e: event_probability(ev, tree.mission_time_h) for e, ev in events.items()
    }
    ccf_of: dict[str, str] = {}
    for grp in tree.ccf_groups:
        missing = [m for m in grp.members if m not in events]
        if missing:
            raise FaultTreeError(
                f"tree '{tree.id}': CCF group '{grp.id}' names unknown event(s) {', '.join(missing)}"
            )
        qt = grp.probability
        if qt is None:
            own = {probs[m] for m in grp.members}
            if len(own) != 1 or None in own:
                raise FaultTreeError(
                    f"tree '{tree.id}': CCF group '{grp.id}' needs `probability` (its members' probabilities differ)"
                )
            qt = own.pop()
        assert qt is not None  # refused above when a member's probability is unknown
        combos = _ccf_events(grp, float(qt))
        for m in grp.members:
            kids = []
            for combo, q in combos.items():
                if m not in combo:
                    continue
                name = m if len(combo) == 1 else f"{grp.id}[{' '.join(x for x in grp.members if x in combo)}]"
                probs[name] = q
                if len(combo) > 1:
                    ccf_of[name] = grp.id
                kids.append(name)
            gates[f"{m}@ccf"] = (GateType.OR, kids, 0)
        for gid, (t, ins, k) in list(gates.items()):
            if not gid.endswith("@ccf"):
                gates[gid] = (t, [f"{x}@ccf" if x in grp.members else x for x in ins], k)
    order: list[str] = []
    seen: set[str] = set()
    state: dict[str, int] = {}
    top = f"{tree.top}@ccf" if f"{tree.top}@ccf" in gates else tree.top
    # iterative depth-first walk: a deep tree must not hit the recursion limit
    stack: list[tuple[str, int, tuple[str, ...]]] = [(top, 0, ())]
    while stack:
        node, i, trail = stack.pop()
        if node in gates:
            if i == 0:
                if state.get(node) == 2:
                    continue
                if state.get(node) == 1:
                    raise FaultTreeError(f"tree '{tree.id}': cycle " + " -> ".join(trail + (node,)))
                state[node] = 1
            ins = gates[node][1]
            if i < len(ins):
                stack.append((node, i + 1, trail))
                stack.append((ins[i], 0, trail + (node,)))
            else:
                state[node] = 2
        elif node in states:
            continue
        elif node in probs:
            if node not in seen:
                seen.add(node)
                order.append(node)
        else:
            where = f"an input of gate '{trail[-1].removesuffix('@ccf')}'" if trail else "the top"
            raise FaultTreeError(f"tree '{tree.id}': '{node}' ({where}) is neither a gate nor an event")
    return Formula(tree.id, top, gates, order, probs, states, ccf_of)


def _weights(f: Formula) -> dict[str, int]:
    """Each node's weight: 1 for an event, 0 for a constant, the sum of its inputs' for a gate.

    A shared event is counted once per path through the gates (a set union per gate would cost
    quadratic memory; an upper bound on the variables beneath suffices to rank inputs), capped
    so a deep DAG cannot overflow. Iterative post-order: trees can be deep.
    """
    gates = f.gates
    weight: dict[str, int] = {}
    stack = [f.top]
    while stack:
        n = stack[-1]
        if n in weight or n not in gates:
            stack.pop()
            if n not in gates:
                weight.setdefault(n, 0 if n in f.constants else 1)
            continue
        pending = [x for x in gates[n][1] if x not in weight]
        if pending:
            stack.extend(pending)
        else:
            stack.pop()
            weight[n] = min(sum(weight[x] for x in gates[n][1]), 1 << 40)
    return weight


def variable_order(f: Formula) -> list[str]:
    """The BDD's variable order: a weighted depth-first heuristic.

    Plain depth-first order from the top (Fussell's, the old default) places the variables of
    one gate together but ignores how much each subtree weighs; Bouissou, Bruyère & Rauzy
    ("BDD based fault-tree processing: a comparison of variable ordering heuristics",
    ESREL 1997) found depth-first orders that visit a gate's lighter inputs first among the
    best static heuristics. Here a gate's inputs are visited by increasing number of
    distinct variables beneath them (ties: document order), so small, often shared modules
    come first and large subtrees last; measured in bench/bench_faulttree.py.
    """
    weight = _weights(f)
    gates = f.gates
    order: list[str] = []
    seen: set[str] = set()
    stack = [f.top]
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        if n in gates:
            kids = sorted(gates[n][1], key=lambda x: weight[x])  # stable: ties keep document order
            stack.extend(reversed(kids))
        elif n not in f.constants:
            order.append(n)
    return order


# --------------------------------------------------------------------------- preprocessing


def _post_order(f: Formula, weight: dict[str, int] | None = None) -> list[str]:
    """Gates reachable from the top, children before parents (iterative: trees can be deep).

    Children in document order, or with `weight` heaviest first (ties: document order).
    """
    gates = f.gates
    done: set[str] = set()
    out: list[str] = []
    ranked: dict[str, list[str]] = {}
    stack = [(f.top, 0)] if f.top in gates else []
    while stack:
        g, i = stack.pop()
        if i == 0 and g in done:
            continue
        ins = gates[g][1]
        if weight is not None:  # sorted once per gate, not on every return to its frame
            if g not in ranked:
                ranked[g] = sorted(ins, key=lambda x: -weight[x])
            ins = ranked[g]
        while i < len(ins) and (ins[i] not in gates or ins[i] in done):
            i += 1
        if i < len(ins):
            stack.append((g, i + 1))
            stack.append((ins[i], 0))
        else:
            done.add(g)
            out.append(g)
    return out


def coalesced(f: Formula) -> Formula:
    """The same function with AND gates under AND gates (OR under OR) merged into their parent.

    Gate coalescing, the first step of SCRAM's and XFTA's preprocessing: fewer, wider gates,
    whose inputs the BDD then combines in variable order (`ft_engine.combine`) instead of one
    child gate at a time. Only a child with a single parent is merged, so the formula never
    grows; the top keeps its name.
    """
    gates = f.gates
    post = _post_order(f)
    if not post:  # the top is an event or a constant
        return f
    parents: dict[str, int] = {}
    for g in post:
        for x in set(gates[g][1]):
            parents[x] = parents.get(x, 0) + 1
    flat: dict[str, list[str]] = {}
    for g in post:
        kind, ins, _k = gates[g]
        out: list[str] = []
        for x in ins:
            mergeable = (
                kind in (GateType.AND, GateType.OR)
                and x in gates
                and gates[x][0] is kind
                and parents.get(x) == 1
            )
            if mergeable:
                out.extend(flat[x])
            else:
                out.append(x)
        flat[g] = out
    new: dict[str, tuple[GateType, list[str], int]] = {}
    stack = [f.top]
    while stack:
        g = stack.pop()
        if g in new:
            continue
        kind, _ins, k = gates[g]
        new[g] = (kind, flat[g], k)
        stack.extend(x for x in flat[g] if x in gates and x not in new)
    return Formula(f.tree_id, f.top, new, f.variables, f.probabilities, f.constants, f.ccf_of)


def topological_order(f: Formula, heaviest_first: bool = False) -> list[str]:
    """SCRAM's order: a gate's child gates first (depth-first), then its own basic events.

    `heaviest_first` visits a gate's child gates by decreasing weight (`_weights`), the
    reverse of the weighted depth-first order's rule: the large shared subtrees take the top
    of the order and each gate's own events follow their heavy siblings. On das9701 that
    builds the diagram in 14.1 million nodes against 47.2 million in document order, and on
    edf9204 in 1.1 million against 2.9 (bench/bench_faulttree.py, docs/benchmarks.md).
    """
    gates = f.gates
    order: list[str] = []
    seen: set[str] = set()
    for g in _post_order(f, _weights(f) if heaviest_first else None):
        for x in gates[g][1]:
            if x not in gates and x not in f.constants and x not in seen:
                seen.add(x)
                order.append(x)
    return order


def _spans(f: Formula, order: list[str]) -> list[tuple[int, int]]:
    """Per gate over variables, the positions of the first and last variable beneath it."""
    pos = {v: i for i, v in enumerate(order)}
    gates = f.gates
    lo: dict[str, int] = {}
    hi: dict[str, int] = {}
    out: list[tuple[int, int]] = []
    for g in _post_order(f):
        a, b = 1 << 60, -1
        for x in gates[g][1]:
            if x in gates:
                a, b = min(a, lo[x]), max(b, hi[x])
            elif x in pos:
                a, b = min(a, pos[x]), max(b, pos[x])
        lo[g], hi[g] = a, b
        if b >= 0:
            out.append((a, b))
    return out


def span_sum(f: Formula, order: list[str]) -> int:
    """Σ over gates of the distance between the first and last variable beneath it.

    A static estimate of the BDD's width (each gate's variables should sit close together,
    the intuition behind every depth-first heuristic; Bouissou et al., ESREL 1997): used only
    to choose between candidate orders.
    """
    return sum(b - a for a, b in _spans(f, order))


def cut_width(f: Formula, order: list[str]) -> int:
    """The most gates whose variables lie both above and below one point of the order.

    Berman ("Circuit width, register allocation, and ordered binary decision diagrams", IEEE
    Trans. CAD 10(8), 1991) bounds an ordered BDD's width by an exponential in the circuit's
    cut width under the order: the gates open across a level are what the diagram must
    remember there. `span_sum` is the same count summed over every point instead of its peak.
    """
    return _width(_spans(f, order), len(order))


def _width(spans: list[tuple[int, int]], points: int) -> int:
    delta = [0] * (points + 1)
    for a, b in spans:
        delta[a] += 1
        delta[b] -= 1
    peak = now = 0
    for d in delta:
        now += d
        peak = max(peak, now)
    return peak


def _score(f: Formula, order: list[str]) -> tuple[int, int]:
    """(`cut_width`, `span_sum`) from one walk of the gates' spans."""
    spans = _spans(f, order)
    return _width(spans, len(order)), sum(b - a for a, b in spans)


def order_candidates(f: Formula) -> list[tuple[str, Formula, list[str]]]:
    """The variable-order heuristics `choose_order` picks from: (name, formula, order)."""
    fc = coalesced(f)
    return [
        ("weighted depth-first", f, variable_order(f)),
        ("depth-first", f, list(f.variables)),
        ("topological", f, topological_order(f)),
        ("depth-first, coalesced", fc, list(fc.variables)),
        ("topological, coalesced", fc, topological_order(fc)),
        ("topological heaviest first, coalesced", fc, topological_order(fc, heaviest_first=True)),
    ]


def choose_order(f: Formula) -> tuple[Formula, list[str], str]:
    """The formula (as given or coalesced), its variable order, and the heuristic's name.

    No static order suits every tree: on the Aralia set the weighted depth-first order is
    the only one that builds cea9601 within 3,000,000 nodes, edf9203 needs a plain
    depth-first order over the coalesced gates (842,158 nodes), and das9701 the topological
    order with heaviest child gates first (14.1 million nodes; 76.8 million under the
    depth-first-coalesced order the span score picked). Each candidate is scored by its peak
    `cut_width`, then by `span_sum`, and the lowest wins (ties: the first listed). Over the
    42 Aralia trees some candidate builds, the span score alone (over the first five) made
    87.7 million nodes in all, the cut width then span 22.8 million; neither chose a
    candidate that fails where another succeeds (bench/bench_faulttree.py --orders,
    docs/benchmarks.md).
    """
    name, form, order = min(order_candidates(f), key=lambda c: _score(c[1], c[2]))
    return form, order, name
