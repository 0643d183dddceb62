"""Fault-tree analysis: exact top-event probability, minimal cut sets, importance.

Pure functions over `archkit.spec.model.FaultTree`; no I/O (the Open-PSA MEF reader and
writer are `archkit.interchange.mef`). The engine (`bdd`, `model`) works the way the reference tools do (SCRAM, XFTA):

- The tree is flattened into a Boolean formula (every MEF gate type, house events,
  common-cause groups), optionally coalesced, and compiled into reduced ordered BDDs, one
  per module, under the variable order `model.choose_order` picks from six heuristics.
- The top-event probability is exact and independent of cut sets: one bottom-up pass of
  Shannon expansion over the BDD, P(f) = p(x)·P(f|x=1) + (1-p(x))·P(f|x=0), with basic
  events independent.
- Minimal cut sets are the BDD's minimal solutions, built as a ZBDD by Rauzy's construction
  (RESS 40, 1993), optionally limited by order; counts by order come from the ZBDD without
  listing; listing prunes by a probability cut-off. With negation (`not`, `xor`, `nand`,
  `nor`, `iff`, `imply`) the tree is not coherent: the sets reported are the minimal sets of
  failed events that, with every other event working, cause the top event — the positive
  parts of its prime implicants; `FaultTreeAnalysis.coherent` says which case applies.
- Importance from the BDD's gradient, all events in one pass (definitions as in SCRAM's
  theory notes and NUREG/CR-3385): Birnbaum MIF = P(S|e) - P(S|¬e); criticality
  CIF = p(e)·MIF/P(S); Fussell–Vesely diagnosis DIF = P(e|S) = p(e)·P(S|e)/P(S);
  RAW = P(S|e)/P(S); RRW = P(S)/P(S|¬e).
- The rare-event approximation (Σ P(C)) and the min-cut upper bound (1 - Π(1 - P(C))) are
  reported beside the exact value, labelled as approximations.

Validated against OpenFTA's and SCRAM's published results (tests/faulttree/faulttrees/) and
against enumeration on random trees.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import math
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from archkit.faulttree.bdd import DiagramLimitError, Zbdd, recursion_room
from archkit.faulttree.engine import Engine
from archkit.faulttree.model import FaultTreeError, choose_order, compile_tree, event_probability
from archkit.spec.model import BasicEvent, FaultTree

__all__ = [
    "FaultTreeAnalysis",
    "FaultTreeError",
    "FaultTreeLimitError",
    "analyse",
    "event_probabilities",
    "event_probability",
    "minimal_cut_sets",
    "notable_single_points",
    "ranked_events",
    "single_points_of_failure",
    "top_probability",
]

Progress = Callable[[str, int, int], None]


class FaultTreeLimitError(FaultTreeError):
    """The tree needs more than one of its `limits` allow; names the limit and how to raise it."""

    def __init__(
        self, tree_id: str, limit: str, value: int, what: str, unit: str = "nodes", other: str = ""
    ) -> None:
        cost = "up to ~2 s and ~130 MB a million" if limit == "max_zbdd_nodes" else "~0.5 s a million"
        super().__init__(
            f"tree '{tree_id}': {what} needs more than {value:,} {unit} "
            f"(limit `limits.{limit}`; raise it in the tree's `limits`, {cost}"
            + (f"; {other}" if other else "")
            + ")"
        )
        self.limit = limit
        self.value = value


# --------------------------------------------------------------------------- compiling


def _engine(
    tree: FaultTree, house: dict[str, bool] | None, progress: Progress | None, modular: bool = True
) -> Engine:
    f, order, heuristic = choose_order(compile_tree(tree, house))
    try:
        return Engine(f, order, tree.limits.max_bdd_nodes, progress, modular, heuristic=heuristic)
    except DiagramLimitError as exc:
        raise FaultTreeLimitError(tree.id, "max_bdd_nodes", exc.limit, "the BDD") from None


# --------------------------------------------------------------------------- results


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
    fussell_vesely: dict[str, float] = field(default_factory=dict)  # diagnosis: P(e | top)
    criticality: dict[str, float] = field(default_factory=dict)
    raw: dict[str, float] = field(default_factory=dict)
    rrw: dict[str, float] = field(default_factory=dict)
    missing_probability: list[str] = field(default_factory=list)
    unused_events: list[str] = field(default_factory=list)
    counts_by_order: list[int] = field(default_factory=list)  # index = order; exact
    cut_sets_listed_all: bool = True  # False when the listing hit a limit or a cut-off
    # why no cut sets were found (`limits.max_zbdd_nodes`); the probability and importance stand
    cut_sets_refused: str | None = None
    coherent: bool = True
    order_limit: int | None = None
    cutoff: float | None = None
    bdd_nodes: int = 0
    variable_order: str = ""  # the heuristic `model.choose_order` picked
    bdd_kernel: str = ""  # "compiled" (ft_kernel, numba) or "python" (ft_bdd)
    modules: int = 0
    zbdd_nodes: int = 0
    seconds: dict[str, float] = field(default_factory=dict)
    ccf_events: dict[str, str] = field(default_factory=dict)

    @property
    def cut_set_count(self) -> int:
        return sum(self.counts_by_order)

    def cut_set_probability(self, cs: frozenset[str]) -> float | None:
        out = 1.0
        for e in cs:
            p = self.event_probabilities.get(e)
            if p is None:
                return None
            out *= p
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "tree": self.tree_id,
            "probability": self.probability,
            "method": self.method,
            "coherent": self.coherent,
            "cut_set_kind": "minimal cut sets"
            if self.coherent
            else "minimal failure sets (prime implicants' positive parts)",
            "cut_set_count": self.cut_set_count,
            "counts_by_order": {str(i): c for i, c in enumerate(self.counts_by_order) if c},
            "order_limit": self.order_limit,
            "cutoff": self.cutoff,
            "cut_sets_listed_all": self.cut_sets_listed_all,
            "cut_sets_refused": self.cut_sets_refused,
            "cut_sets": [sorted(c) for c in self.cut_sets],
            "single_points_of_failure": self.single_points_of_failure,
            "approximations": {"rare_event": self.rare_event, "mcub": self.mcub},
            "event_probabilities": self.event_probabilities,
            "importance": {
                e: {
                    "birnbaum": self.birnbaum[e],
                    "criticality": self.criticality.get(e),
                    "fussell_vesely": self.fussell_vesely.get(e),
                    "raw": self.raw.get(e),
                    "rrw": self.rrw.get(e),
                }
                for e in sorted(self.birnbaum)
            },
            "birnbaum": self.birnbaum,
            "fussell_vesely": self.fussell_vesely,
            "missing_probability": self.missing_probability,
            "unused_events": self.unused_events,
            "bdd_nodes": self.bdd_nodes,
            "variable_order": self.variable_order,
            "bdd_kernel": self.bdd_kernel,
            "modules": self.modules,
            "zbdd_nodes": self.zbdd_nodes,
            "seconds": self.seconds,
        }


def _importance(res: FaultTreeAnalysis, p: dict[str, float], top: float, grad: dict[str, float]) -> None:
    for name in sorted(p):
        b = grad.get(name, 0.0)  # an event a house event or constant masks has no influence
        q = p[name]
        up = top + (1.0 - q) * b  # P(S | e)
        down = top - q * b  # P(S | ¬e)
        res.birnbaum[name] = b
        if top > 0:
            res.criticality[name] = q * b / top
            res.fussell_vesely[name] = q * up / top
            res.raw[name] = up / top
        else:
            res.criticality[name] = res.fussell_vesely[name] = 0.0
            res.raw[name] = math.inf if up > 0 else 1.0
        res.rrw[name] = top / down if down > 0 else math.inf


# One run of archkit asks for the same analysis several times: `render` for the diagram and
# for the runbook plan, `check` for AK111, each ~21 s on a tree of das9701's size (and ~10 s
# to refuse nus9601). The key is the tree's whole value, so an edited tree is a new entry.
_MEMO: OrderedDict[tuple[Any, ...], FaultTreeAnalysis | FaultTreeError] = OrderedDict()
MEMO_SIZE = 8
PROGRESS_EVERY = 10_000  # cut sets listed between two progress reports


def clear_memo() -> None:
    """Forget the analyses `analyse` remembered (tests that count engine builds start here)."""
    _MEMO.clear()


def analyse(
    tree: FaultTree,
    *,
    order: int | None = None,
    cutoff: float | None = None,
    house: dict[str, bool] | None = None,
    cut_sets: bool = True,
    progress: Progress | None = None,
) -> FaultTreeAnalysis:
    """Exact top probability, importance, minimal cut sets (counted, and listed within limits).

    `order` and `cutoff` default to the tree's `limits.max_order` and `limits.cutoff`;
    `house` switches house events. Raises FaultTreeError for a tree that cannot be analysed
    and FaultTreeLimitError (a FaultTreeError) when the BDD outgrows `limits.max_bdd_nodes`.
    Cut sets that outgrow `limits.max_zbdd_nodes` are not found: the result keeps the
    probability and importance, and `cut_sets_refused` says why and how to raise the limit.

    The last MEMO_SIZE answers (refusals included) are remembered by the tree's value and
    the arguments; callers share the result, so they must not change it. `seconds` are
    those of the analysis that ran.
    """
    key = (
        repr(tree.model_dump()),  # not JSON: a spec string may hold a lone surrogate
        order,
        cutoff,
        tuple(sorted(house.items())) if house else None,
        cut_sets,
    )
    hit = _MEMO.get(key)
    if hit is None:
        try:
            hit = _analyse(tree, order, cutoff, house, cut_sets, progress)
        except FaultTreeError as exc:
            hit = exc
        _MEMO[key] = hit
        while len(_MEMO) > MEMO_SIZE:
            _MEMO.popitem(last=False)
    else:
        _MEMO.move_to_end(key)
    if isinstance(hit, FaultTreeError):
        raise hit
    return hit


def _analyse(
    tree: FaultTree,
    order: int | None,
    cutoff: float | None,
    house: dict[str, bool] | None,
    cut_sets: bool,
    progress: Progress | None,
) -> FaultTreeAnalysis:
    order = order if order is not None else tree.limits.max_order
    cutoff = cutoff if cutoff is not None else tree.limits.cutoff
    eng = _engine(tree, house, progress)
    f = eng.formula
    probs = dict(f.probabilities)
    res = FaultTreeAnalysis(tree.id, [], [], {e.id: probs.get(e.id) for e in tree.events})
    res.event_probabilities.update({v: probs[v] for v in f.variables})
    res.coherent, res.order_limit, res.cutoff, res.ccf_events = f.coherent, order, cutoff, dict(f.ccf_of)
    res.bdd_nodes = eng.node_count
    res.variable_order = eng.heuristic
    res.bdd_kernel = eng.kernel
    res.modules = len(eng.modules)
    res.seconds["bdd"] = round(eng.seconds, 4)
    # a CCF member's independent failure keeps the member's id, so this covers members too
    res.unused_events = sorted(e.id for e in tree.events if e.id not in eng.var_index)
    res.missing_probability = sorted(v for v in eng.order if probs.get(v) is None)
    p = {v: probs.get(v) or 0.0 for v in eng.order}
    if res.missing_probability:
        res.method = "unknown: events without probability"
    else:
        t0 = time.perf_counter()
        top, vals, local = eng.probability(p)
        res.probability = top
        res.seconds["probability"] = round(time.perf_counter() - t0, 4)
        t0 = time.perf_counter()
        _importance(res, p, top, eng.gradient(vals, local))
        res.seconds["importance"] = round(time.perf_counter() - t0, 4)
    if cut_sets:
        t0 = time.perf_counter()
        try:
            # the Engine raises the recursion limit for its own diagrams; the cut-set ZBDD's
            # listing and counting here recurse as deep
            with recursion_room(len(eng.order)):
                _cut_sets(tree, eng, res, p, order, cutoff, house, progress)
        except FaultTreeLimitError as exc:
            res.seconds["cut_sets"] = round(time.perf_counter() - t0, 4)
            if exc.limit != "max_zbdd_nodes":
                raise
            # the probability and importance came from the BDD alone: they stand, and the
            # user learns which limit to raise instead of losing the whole analysis
            res.cut_sets_refused = str(exc)
            res.cut_sets_listed_all = False
    return res


def _cut_sets(
    tree: FaultTree,
    eng: Engine,
    res: FaultTreeAnalysis,
    p: dict[str, float],
    order: int | None,
    cutoff: float | None,
    house: dict[str, bool] | None,
    progress: Progress | None,
) -> None:
    t0 = time.perf_counter()
    # see ft_engine: modules are substituted only where positive, so a non-coherent tree takes
    # its cut sets from one diagram of the whole tree; with no module below the top, the
    # diagram built for the probability is that one already (das9701: 7 s saved of 14)
    if not eng.formula.coherent and len(eng.modules) > 1:
        eng = _engine(tree, house, progress, modular=False)
    z = Zbdd(tree.limits.max_zbdd_nodes)
    try:
        root = eng.cut_sets(z, order)
    except DiagramLimitError as exc:
        raise FaultTreeLimitError(
            tree.id,
            "max_zbdd_nodes",
            exc.limit,
            "finding the minimal cut sets",
            "ZBDD nodes and memoised steps",
            "or bound the cut sets by order: `limits.max_order`, `--order N`",
        ) from None
    res.zbdd_nodes = len(z)
    res.seconds["cut_sets"] = round(time.perf_counter() - t0, 4)
    t0 = time.perf_counter()
    limit = tree.limits.max_cut_sets
    use_cutoff = cutoff if cutoff and not res.missing_probability else None
    pi = {eng.var_index[v]: q for v, q in p.items()}
    with _no_cycle_collection():
        listed, counts = _list_sets(z, root, pi, use_cutoff, limit, progress)
        cut_sets = _in_report_order(listed, eng.names)
    res.counts_by_order = counts if use_cutoff is not None else z.count_by_order(root)
    res.cut_sets_listed_all = len(listed) == res.cut_set_count and use_cutoff is None
    res.cut_sets = cut_sets
    res.single_points_of_failure = single_points_of_failure(res.cut_sets)
    res.seconds["listing"] = round(time.perf_counter() - t0, 4)
    if res.probability is not None and res.cut_sets_listed_all:
        cs_p = [res.cut_set_probability(s) or 0.0 for s in res.cut_sets]
        res.rare_event = math.fsum(cs_p)
        res.mcub = -math.expm1(math.fsum(math.log1p(-x) if x < 1 else -math.inf for x in cs_p))


# --------------------------------------------------------------------------- small helpers


def _list_sets(
    z: Zbdd,
    root: int,
    pi: dict[int, float],
    use_cutoff: float | None,
    limit: int,
    progress: Progress | None,
) -> tuple[list[list[int]], list[int]]:
    """The first `limit` sets of the family (as diagram variables), and with a probability
    cut-off the count of every set above it by size (without one the diagram counts them)."""
    listed: list[list[int]] = []
    counts: list[int] = []
    found = z.sets(root, pi, use_cutoff)
    if use_cutoff is None:
        # the counts come from the diagram (count_by_order), so only the listed sets are visited
        while len(listed) < limit:
            chunk = [vs for vs, _prob in itertools.islice(found, min(PROGRESS_EVERY, limit - len(listed)))]
            if not chunk:
                break
            listed += chunk
            if progress is not None:
                progress("cut sets", len(listed), 0)
    else:
        # a probability cut-off prunes inside the walk, so every set above it is visited and counted
        for seen, (vs, _prob) in enumerate(found, 1):
            if len(listed) < limit:
                listed.append(vs)
            while len(counts) <= len(vs):
                counts.append(0)
            counts[len(vs)] += 1
            if progress is not None and seen % PROGRESS_EVERY == 0:
                progress("cut sets", seen, 0)
    return listed, counts


@contextlib.contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Python's cycle collector paused while a million cut sets are made: the lists and
    frozensets hold only ints and strings, so they form no cycles, but each allocation burst
    starts a collection that walks every object made so far (das9701's listing: 6.9 s with it,
    3.4 s without, measured)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _in_report_order(sets: list[list[int]], names: dict[int, str]) -> list[frozenset[str]]:
    """The cut sets (as diagram variables) by size, then by their sorted event ids (as
    `sorted(key=lambda c: (len(c), sorted(c)))` would order them). Each event's rank among the
    sorted ids stands in for its id, so one numpy sort of a sets × size matrix replaces a Python
    sort per set (das9701's million sets: those sorts were 4.6 s of the 13.2 s its listing took
    under cProfile)."""
    if not sets:
        return []
    import numpy as np  # here, not at the top: `archkit check` on a spec without trees never needs it

    by_id = sorted(names, key=names.__getitem__)
    rank = np.zeros(max(names, default=-1) + 1, dtype=np.int32)  # no events: a constant top
    rank[by_id] = np.arange(len(by_id), dtype=np.int32)
    sizes = np.fromiter(map(len, sets), dtype=np.int64, count=len(sets))
    total = int(sizes.sum())
    ix = np.int32 if total < 2**31 else np.int64  # half the index memory for a million sets
    flat = np.fromiter(itertools.chain.from_iterable(sets), dtype=np.int32, count=total)
    width = max(int(sizes.max()), 1)
    ranks = np.full((len(sets), width), len(by_id), dtype=np.int32)  # padding sorts after every rank
    row = np.repeat(np.arange(len(sets), dtype=ix), sizes)
    col = np.arange(total, dtype=ix) - np.repeat((np.cumsum(sizes) - sizes).astype(ix), sizes)
    ranks[row, col] = rank[flat]
    del row, col, flat
    ranks.sort(axis=1)
    order = np.lexsort([ranks[:, j] for j in range(width - 1, -1, -1)] + [sizes])  # last key first
    return [frozenset([names[v] for v in sets[i]]) for i in order.tolist()]


def minimal_cut_sets(tree: FaultTree) -> list[frozenset[str]]:
    """The tree's minimal cut sets, sorted by size, then by their sorted event ids.

    Raises FaultTreeError when the tree references an unknown id or has a cycle, or when
    its diagrams outgrow the tree's limits.
    """
    a = analyse(tree)
    if a.cut_sets_refused is not None:
        raise FaultTreeError(a.cut_sets_refused)
    return a.cut_sets


def single_points_of_failure(cut_sets: Iterable[frozenset[str]]) -> list[str]:
    """Events that alone cause the top event (cut sets of size one), sorted."""
    return sorted(next(iter(c)) for c in cut_sets if len(c) == 1)


def notable_single_points(a: FaultTreeAnalysis) -> list[str]:
    """Single points of failure worth a red mark: order-one cut sets in a tree that has
    redundancy elsewhere (some cut set of order two or more). In a tree where every event
    alone fails the top event (an OR of leaves), marking them all says nothing."""
    if not any(c > 0 for c in a.counts_by_order[2:]):
        return []
    return a.single_points_of_failure


def event_probabilities(tree: FaultTree) -> dict[str, float | None]:
    """Every event's probability (None when neither a probability nor a rate with a mission time)."""
    return {e.id: event_probability(e, tree.mission_time_h) for e in tree.events}


def top_probability(tree: FaultTree) -> float | None:
    """Exact probability of the top event (BDD), or None when an event's probability is unknown."""
    return analyse(tree, cut_sets=False).probability


DEFAULT_CHECK_COST_S = 60.0  # a check whose `cost_s` is not given is assumed to take a minute


def ranked_events(tree: FaultTree, analysis: FaultTreeAnalysis | None = None) -> list[BasicEvent]:
    """Leaf events in the order an on-call engineer should check them.

    With probabilities: decreasing diagnosis importance per second of check (`cost_s`,
    default one minute) — FV(e) = P(e | top) is the chance that e has failed given that the
    top event happened, and inspecting in decreasing probability/cost order minimises the
    expected time to find a single cause (the classic sequential-search result, Kadane &
    Simon 1977). Without probabilities: events in smaller cut sets first, then cheaper.
    Ties keep document order, so the order is stable.
    """
    a = analysis or analyse(tree)
    smallest: dict[str, int] = {}
    for cs in a.cut_sets:
        for e in cs:
            smallest[e] = min(smallest.get(e, len(cs)), len(cs))
    pos = {e.id: i for i, e in enumerate(tree.events)}

    def key(e: BasicEvent) -> tuple[Any, ...]:
        cost = e.cost_s if e.cost_s is not None else DEFAULT_CHECK_COST_S
        if a.probability is not None:
            fv = a.fussell_vesely.get(e.id, 0.0)
            # rounded so that float noise never reorders equals
            score = -round(fv / cost, 12) if cost > 0 else -math.inf
            return (e.id not in smallest, score, -round(fv, 12), pos[e.id])
        return (e.id not in smallest, smallest.get(e.id, 10**9), cost, pos[e.id])

    return sorted(tree.events, key=key)
