"""Fault-tree analysis against published benchmark values (OpenFTA via SCRAM) and a brute-force oracle."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from archkit.faulttree import (
    FaultTreeError,
    analyse,
    event_probabilities,
    minimal_cut_sets,
    ranked_events,
    top_probability,
)
from archkit.spec import load_file
from archkit.spec.model import BasicEvent, FaultTree, Gate

HERE = Path(__file__).parent / "faulttrees"
ROOT = Path(__file__).resolve().parents[2]


def tree_of(name: str) -> FaultTree:
    res = load_file(HERE / name)
    assert res.spec is not None, res.diagnostics
    return res.spec.faulttrees[0]


# ---------------------------------------------------------------- OpenFTA "Theatre"


def test_theatre_cut_sets_match_openfta():
    # OpenFTA_Report.txt: order 2: GEN_FAIL MAINS_FAIL; MAINS_FAIL RELAY_FAIL; nothing else
    assert minimal_cut_sets(tree_of("theatre.yaml")) == [
        frozenset({"Gen_Fail", "Mains_Fail"}),
        frozenset({"Mains_Fail", "Relay_Fail"}),
    ]


def test_theatre_rate_becomes_probability_over_mission_time():
    probs = event_probabilities(tree_of("theatre.yaml"))
    assert probs["Gen_Fail"] == pytest.approx(1 - math.exp(-0.02), rel=1e-15)


def test_theatre_probabilities_match_openfta():
    a = analyse(tree_of("theatre.yaml"))
    # "Exact value : 2.064338E-003"; "1 term +2.094040E-003 (upper bound)"
    assert a.probability == pytest.approx(2.064338e-3, abs=5e-10)
    assert a.method == "bdd-exact"
    assert a.rare_event == pytest.approx(2.094040e-3, abs=5e-10)
    assert a.cut_set_probability(frozenset({"Gen_Fail", "Mains_Fail"})) == pytest.approx(
        5.940398e-4, abs=5e-11
    )
    # Primary event analysis: GEN_FAIL 28.78 %, RELAY_FAIL 72.66 % (single-cut-set events: exact FV)
    assert a.fussell_vesely["Gen_Fail"] == pytest.approx(0.2878, abs=5e-5)
    assert a.fussell_vesely["Relay_Fail"] == pytest.approx(0.7266, abs=5e-5)
    assert a.fussell_vesely["Mains_Fail"] == pytest.approx(1.0)  # OpenFTA's 101.44 % is the rare-event sum
    assert a.single_points_of_failure == []


def test_theatre_with_scram_probabilities():
    # SCRAM's theatre.xml gives Gen_Fail p = 0.02: P = 0.03 × (1 - 0.98 × 0.95) = 2.07e-3
    tree = tree_of("theatre.yaml")
    gen = next(e for e in tree.events if e.id == "Gen_Fail")
    gen.probability = 0.02
    assert top_probability(tree) == pytest.approx(0.00207, rel=1e-12)


def test_theatre_birnbaum():
    a = analyse(tree_of("theatre.yaml"))
    pg, pm, pr = 1 - math.exp(-0.02), 0.03, 0.05
    assert a.birnbaum["Mains_Fail"] == pytest.approx(1 - (1 - pg) * (1 - pr))
    assert a.birnbaum["Relay_Fail"] == pytest.approx(pm * (1 - pg))
    assert a.birnbaum["Gen_Fail"] == pytest.approx(pm * (1 - pr))


# ---------------------------------------------------------------- OpenFTA "Three Motor"


def test_three_motor_cut_sets_match_openfta():
    cs = minimal_cut_sets(tree_of("three-motor.yaml"))
    assert len(cs) == 54
    assert Counter(len(c) for c in cs) == {2: 7, 3: 3, 4: 2, 5: 26, 7: 16}
    order2 = {" ".join(sorted(c)) for c in cs if len(c) == 2}
    assert order2 == {"K1 K5", "K1 T2", "K2 K5", "K5 S1", "K5 T1", "K5 T3", "S1 T2"}
    order3 = {" ".join(sorted(c)) for c in cs if len(c) == 3}
    assert order3 == {"K2 T1inc T2", "T1 T1inc T2", "T1inc T2 T3"}
    order4 = {" ".join(sorted(c)) for c in cs if len(c) == 4}
    assert order4 == {"K5 KT1 KT2 KT3", "K5 KT1 KT3 T4"}
    assert frozenset(["KT1", "KT1inc", "KT2", "KT2inc", "KT3", "KT3inc", "T2"]) in cs


def test_three_motor_probabilities_match_openfta():
    a = analyse(tree_of("three-motor.yaml"))
    # OpenFTA works in single precision: its figures agree with ours to ~1e-6 relative.
    assert a.rare_event == pytest.approx(2.824405e-3, rel=1e-6)  # "1 term (upper bound)"
    assert a.probability == pytest.approx(2.720245e-3, rel=1e-6)  # 6-term inclusion-exclusion
    assert a.mcub is not None and a.probability < a.mcub < a.rare_event


def test_cut_sets_are_sorted_deterministically():
    cs = minimal_cut_sets(tree_of("three-motor.yaml"))
    assert cs == sorted(cs, key=lambda c: (len(c), sorted(c)))


# ---------------------------------------------------------------- gates, errors, ranking


def _tree(gates, events, top="top", mission=None) -> FaultTree:
    return FaultTree(
        id="t",
        top=top,
        mission_time_h=mission,
        gates=[Gate(**g) for g in gates],
        events=[BasicEvent(**e) for e in events],
    )


def test_atleast_gate_two_of_three():
    t = _tree(
        [{"id": "top", "type": "atleast", "k": 2, "inputs": ["a", "b", "c"]}],
        [{"id": x, "probability": 0.1} for x in "abc"],
    )
    assert minimal_cut_sets(t) == [frozenset("ab"), frozenset("ac"), frozenset("bc")]
    assert top_probability(t) == pytest.approx(3 * 0.01 * 0.9 + 0.001)


def test_single_points_of_failure_and_examples():
    res = load_file(ROOT / "examples" / "industrial-inspection.yaml")
    a = analyse(res.spec.faulttrees[0])
    assert a.single_points_of_failure == ["gpu-gone", "gpu-oom", "not-ready"]
    assert a.probability == pytest.approx(1 - 0.998 * 0.99 * 0.995)


def test_unknown_probability_is_reported_not_guessed():
    t = _tree(
        [{"id": "top", "type": "or", "inputs": ["a", "b"]}],
        [{"id": "a", "probability": 0.1}, {"id": "b", "rate_per_hour": 0.001}],
    )
    a = analyse(t)
    assert a.probability is None and a.missing_probability == ["b"]
    assert a.cut_sets == [frozenset("a"), frozenset("b")]


def test_unknown_input_and_cycle_raise():
    with pytest.raises(FaultTreeError, match="neither a gate nor an event"):
        minimal_cut_sets(_tree([{"id": "top", "type": "or", "inputs": ["ghost"]}], []))
    with pytest.raises(FaultTreeError, match="cycle"):
        minimal_cut_sets(
            _tree(
                [{"id": "top", "type": "or", "inputs": ["g"]}, {"id": "g", "type": "and", "inputs": ["top"]}],
                [],
            )
        )


def test_ranking_uses_importance_per_second_of_check():
    t = _tree(
        [{"id": "top", "type": "or", "inputs": ["slow", "fast", "rare"]}],
        [
            {"id": "slow", "probability": 0.02, "cost_s": 600},
            {"id": "fast", "probability": 0.01, "cost_s": 10},
            {"id": "rare", "probability": 0.001, "cost_s": 10},
        ],
    )
    assert [e.id for e in ranked_events(t)] == ["fast", "rare", "slow"]  # 1e-4/s beats 3.3e-5/s


# ---------------------------------------------------------------- brute-force oracle


@st.composite
def random_trees(draw):
    n = draw(st.integers(2, 7))
    names = [f"e{i}" for i in range(n)]
    events = [{"id": x, "probability": draw(st.sampled_from([0.01, 0.1, 0.3, 0.5, 0.9]))} for x in names]
    gates = []
    pool = list(names)
    for gi in range(draw(st.integers(1, 4))):
        kids = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=4, unique=True))
        kind = draw(st.sampled_from(["or", "and", "atleast"]))
        g = {"id": f"g{gi}", "type": kind, "inputs": kids}
        if kind == "atleast":
            g["k"] = draw(st.integers(1, len(kids)))
        gates.append(g)
        pool.append(g["id"])
    return _tree(gates, events, top=gates[-1]["id"])


def _truth(tree: FaultTree, failed: set[str]) -> bool:
    gates = {g.id: g for g in tree.gates}

    def ev(node):
        if node not in gates:
            return node in failed
        vals = [ev(i) for i in gates[node].inputs]
        g = gates[node]
        return {"or": any, "and": all}.get(g.type.value, lambda v: sum(v) >= g.k)(vals)

    return ev(tree.top)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_trees())
def test_bdd_and_cut_sets_agree_with_enumeration(tree):
    used = sorted({i for g in tree.gates for i in g.inputs if not i.startswith("g")})
    probs = {e.id: e.probability for e in tree.events}
    exact = 0.0
    failing = []
    for bits in itertools.product([0, 1], repeat=len(used)):
        failed = {e for e, b in zip(used, bits, strict=False) if b}
        w = math.prod(probs[e] if e in failed else 1 - probs[e] for e in used)
        if _truth(tree, failed):
            exact += w
            failing.append(frozenset(failed))
    minimal = sorted(
        {f for f in failing if not any(o < f for o in failing)}, key=lambda c: (len(c), sorted(c))
    )
    assert minimal_cut_sets(tree) == minimal
    p = top_probability(tree)
    assert p == pytest.approx(exact, abs=1e-12)
