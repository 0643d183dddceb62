"""The fault-tree engine against SCRAM on the Aralia benchmark set, against enumeration on
random trees of every gate type, and the Open-PSA MEF importer/exporter.

Reference figures: tests/faulttree/faulttrees/scram-reference.json (SCRAM 0.16.2 run on the
same files; see its "source"). The heaviest Aralia trees are measured by
bench/bench_faulttree.py instead of here (minutes on a shared machine).
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from unittest import mock

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from archkit.cli import _load_commands, app
from archkit.faulttree import FaultTreeError, FaultTreeLimitError, analyse, minimal_cut_sets
from archkit.faulttree.bdd import DiagramLimitError
from archkit.interchange.mef import MefError, export_mef, import_mef
from archkit.spec import load_file
from archkit.spec.model import BasicEvent, CcfGroup, FaultTree, Gate, HouseEvent
from tests.conftest import ROOT

HERE = Path(__file__).parent / "faulttrees"
ARALIA = HERE / "aralia"
SCRAM = HERE / "scram"
REF = json.loads((HERE / "scram-reference.json").read_text())["trees"]
ALL_ARALIA = sorted(p.stem for p in ARALIA.glob("*.xml"))
# Trees analysed here in about a second or less each; the rest are in bench/bench_faulttree.py.
QUICK = [
    "baobab1", "baobab2", "baobab3", "chinese", "das9201", "das9202", "das9203", "das9204", "das9205",
    "das9206", "das9207", "das9208", "das9209", "edf9201", "edf9205", "edf9206", "ftr10", "isp9601",
    "isp9602", "isp9603", "isp9604", "isp9605", "isp9606", "isp9607",
]  # fmt: skip


def mef(*paths: Path, mission: float | None = None) -> FaultTree:
    return import_mef([(str(p), p.read_bytes()) for p in paths], mission)[0]


def same_to_printed_digits(ours: float, printed: float, digits: int = 6) -> bool:
    """SCRAM prints 6 significant digits: ours must round to the same figure."""
    if printed == 0:
        return ours == 0
    ulp = 10 ** (math.floor(math.log10(abs(printed))) - digits + 1)
    return abs(ours - printed) <= 0.5 * ulp * (1 + 1e-9)


# ---------------------------------------------------------------- SCRAM's benchmark trees


def test_baobab1_probability_and_all_cut_sets():
    tree = mef(SCRAM / "baobab1.xml", SCRAM / "baobab1-basic-events.xml")
    tree.limits.max_cut_sets = 50_000  # all 46,188 listed: above the default listing budget (10,000)
    a = analyse(tree)
    assert a.probability == pytest.approx(1.2823046e-6, rel=1e-6)  # SCRAM: 1.2823e-6
    assert a.cut_set_count == len(a.cut_sets) == 46188
    # SCRAM's distribution starts at order 1; ours is indexed by order
    assert (
        a.counts_by_order[1:] == REF["Baobab1"]["distribution"]
    )  # 0 1 1 70 400 2212 14748 8460 10624 6600 3072
    assert a.rare_event == pytest.approx(1.6815e-6, rel=1e-4)  # SCRAM's rare-event figure


def test_baobab1_order_limits_match_scram():
    tree = mef(SCRAM / "baobab1.xml", SCRAM / "baobab1-basic-events.xml")
    assert analyse(tree, order=8).counts_by_order[1:] == [0, 1, 1, 70, 400, 2212, 14748, 8460]  # 25,892
    a4 = analyse(tree, order=4)
    assert a4.cut_set_count == 72  # SCRAM's Baobab1L4Importance
    assert len({e for c in a4.cut_sets for e in c}) == 40


def test_baobab2_counts_by_order():
    a = analyse(mef(SCRAM / "baobab2.xml", SCRAM / "baobab2-basic-events.xml"))
    assert a.cut_set_count == 4805
    assert a.counts_by_order[1:] == [0, 6, 121, 268, 630, 3780]


def test_200_event_at_order_15_and_20():
    tree = mef(SCRAM / "200_event.xml")
    a = analyse(tree, order=15)
    assert a.cut_set_count == 287 == REF["200_event-l15"]["products"]
    assert a.probability == pytest.approx(0.5598535, rel=1e-6)  # SCRAM: 0.55985
    a20 = analyse(tree, order=20, cut_sets=True)
    assert a20.cut_set_count == REF["200_event"]["products"]
    assert a20.counts_by_order[1:] == REF["200_event"]["distribution"]


@pytest.mark.parametrize("name", QUICK)
def test_aralia_probability_and_counts_match_scram(name):
    tree = mef(ARALIA / f"{name}.xml")
    tree.limits.max_cut_sets = 10  # the counts come from the ZBDD; listing is not the point here
    a = analyse(tree, order=20)
    ref = REF[name]
    assert same_to_printed_digits(a.probability, ref["probability"]), (a.probability, ref["probability"])
    if "products" in ref:
        assert a.cut_set_count == ref["products"]
        assert a.counts_by_order[1:] == ref["distribution"]  # SCRAM's starts at order 1


@pytest.mark.parametrize("name", ALL_ARALIA)
def test_every_aralia_tree_imports_and_round_trips(name):
    tree = mef(ARALIA / f"{name}.xml")
    assert tree.gates and tree.events
    doc = {
        "apiVersion": "archkit/v1",
        "metadata": {"name": "t"},
        "faulttrees": [tree.model_dump(mode="json")],
    }
    again = FaultTree.model_validate(yaml.safe_load(yaml.safe_dump(doc))["faulttrees"][0])
    assert again == tree
    back = import_mef([("export.xml", export_mef(tree).encode())])[0]
    assert back.top == tree.top
    for part in ("gates", "events", "house_events"):  # the same objects; order may follow first use
        assert sorted(getattr(back, part), key=lambda x: x.id) == sorted(
            getattr(tree, part), key=lambda x: x.id
        )


# ---------------------------------------------------------------- every gate type vs enumeration


GATES = ["or", "and", "atleast", "not", "xor", "nand", "nor", "iff", "imply", "inhibit"]


@st.composite
def random_trees(draw):
    n = draw(st.integers(2, 7))
    names = [f"e{i}" for i in range(n)]
    events = [{"id": x, "probability": draw(st.sampled_from([0.01, 0.1, 0.3, 0.5, 0.9]))} for x in names]
    houses = [{"id": "h", "state": draw(st.booleans())}]
    pool = names + ["h"]
    gates = []
    for gi in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(GATES))
        size = 1 if kind == "not" else 2 if kind in ("iff", "imply") else draw(st.integers(1, 4))
        if size > len(pool):
            continue
        kids = draw(st.lists(st.sampled_from(pool), min_size=size, max_size=size, unique=True))
        g = {"id": f"g{gi}", "type": kind, "inputs": kids}
        if kind == "atleast":
            g["k"] = draw(st.integers(1, len(kids)))
        if kind == "inhibit":
            g["condition"] = draw(st.sampled_from(names))
        gates.append(g)
        pool.append(g["id"])
    if not gates:
        gates = [{"id": "g0", "type": "or", "inputs": names}]
    ccf = []
    if draw(st.booleans()):
        model = draw(st.sampled_from(["beta-factor", "alpha-factor", "mgl"]))
        factors = {"beta-factor": [0.1], "alpha-factor": [0.9, 0.07, 0.03], "mgl": [0.1, 0.3]}[model]
        ccf = [CcfGroup(id="ccf", members=names[:2], model=model, probability=0.2, factors=factors)]
    return FaultTree(
        id="t",
        top=gates[-1]["id"],
        gates=[Gate(**g) for g in gates],
        events=[BasicEvent(**e) for e in events],
        house_events=[HouseEvent(**h) for h in houses],
        ccf_groups=ccf,
    )


def _truth(tree: FaultTree, node: str, true: set[str], house: dict[str, bool]) -> bool:
    gates = {g.id: g for g in tree.gates}
    if node in house:
        return house[node]
    if node not in gates:
        return node in true
    g = gates[node]
    v = [_truth(tree, i, true, house) for i in g.inputs]
    kind = g.type.value
    if kind == "inhibit":
        return all(v) and _truth(tree, g.condition, true, house)
    if kind in ("not", "iff", "imply"):
        return {"not": lambda: not v[0], "iff": lambda: v[0] == v[1], "imply": lambda: (not v[0]) or v[1]}[
            kind
        ]()
    return {
        "or": any(v),
        "and": all(v),
        "xor": sum(v) % 2 == 1,
        "nand": not all(v),
        "nor": not any(v),
        "atleast": sum(v) >= (g.k or 1),
    }[kind]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_trees())
def test_engine_agrees_with_enumeration_on_every_gate_type(tree):
    """Probability, importance and minimal failure sets against the truth table (the oracle
    evaluates the gates directly; CCF groups by expanding members into their failure events)."""
    a = analyse(tree)
    house = {h.id: h.state for h in tree.house_events}
    variables = sorted(v for v in a.event_probabilities if a.event_probabilities[v] is not None)
    members = {m for g in tree.ccf_groups for m in g.members}
    expand: dict[str, list[str]] = {
        m: [v for v in variables if v == m or (v.startswith("ccf[") and m in v)] for m in members
    }
    used = [v for v in variables if v not in a.unused_events]
    exact = 0.0
    sols = []
    probs = a.event_probabilities
    for bits in itertools.product([0, 1], repeat=len(used)):
        on = {v for v, b in zip(used, bits, strict=True) if b}
        failed = {e.id for e in tree.events if e.id in on and e.id not in members}
        failed |= {m for m, vs in expand.items() if any(v in on for v in vs)}
        if _truth(tree, tree.top, failed, house):
            exact += math.prod(probs[v] if v in on else 1 - probs[v] for v in used)
            sols.append(frozenset(on))
    minimal = sorted({s for s in sols if not any(o < s for o in sols)}, key=lambda c: (len(c), sorted(c)))
    assert a.probability == pytest.approx(exact, abs=1e-12)
    assert a.cut_sets == minimal
    assert a.cut_set_count == len(minimal)
    for v in used:  # Birnbaum = P(top | v) - P(top | not v), by enumeration
        hi = lo = 0.0
        for bits in itertools.product([0, 1], repeat=len(used)):
            on = {u for u, b in zip(used, bits, strict=True) if b}
            failed = {e.id for e in tree.events if e.id in on and e.id not in members}
            failed |= {m for m, vs in expand.items() if any(x in on for x in vs)}
            if not _truth(tree, tree.top, failed, house):
                continue
            w = math.prod(probs[u] if u in on else 1 - probs[u] for u in used if u != v)
            if v in on:
                hi += w
            else:
                lo += w
        assert a.birnbaum[v] == pytest.approx(hi - lo, abs=1e-9)


def test_house_events_switch_per_analysis():
    tree = FaultTree(
        id="t",
        top="g",
        gates=[Gate(id="g", type="and", inputs=["a", "maintenance"])],
        events=[BasicEvent(id="a", probability=0.1)],
        house_events=[HouseEvent(id="maintenance", state=False)],
    )
    assert analyse(tree).probability == 0
    assert analyse(tree, house={"maintenance": True}).probability == pytest.approx(0.1)


def test_beta_factor_and_periodic_test():
    tree = FaultTree(
        id="t",
        top="g",
        mission_time_h=1000,
        gates=[Gate(id="g", type="and", inputs=["p1", "p2"])],
        events=[
            BasicEvent(id="p1", probability=0.01),
            BasicEvent(id="p2", probability=0.01),
            BasicEvent(id="valve", rate_per_hour=1e-4, test_interval_h=720),
        ],
        ccf_groups=[CcfGroup(id="pumps", members=["p1", "p2"], factors=[0.1])],
    )
    a = analyse(tree)
    q_ind, q_ccf = 0.9 * 0.01, 0.1 * 0.01
    assert a.probability == pytest.approx(q_ccf + (1 - q_ccf) * q_ind**2, rel=1e-12)
    assert frozenset(["pumps[p1 p2]"]) in a.cut_sets
    # tested at 720 h: at 1000 h the valve has been exposed for 280 h since its test
    assert a.event_probabilities["valve"] == pytest.approx(1 - math.exp(-1e-4 * 280))


def test_limit_is_an_error_naming_the_limit():
    tree = mef(SCRAM / "baobab2.xml", SCRAM / "baobab2-basic-events.xml")
    tree.limits.max_bdd_nodes = 100
    with pytest.raises(FaultTreeLimitError, match="limits.max_bdd_nodes"):
        analyse(tree)


def test_cut_sets_over_their_limit_keep_the_probability():
    """The ZBDD has its own budget: over it, the BDD's probability and importance stand and the
    result says which limit stopped the cut sets (Baobab2: 4,805 sets)."""
    tree = mef(SCRAM / "baobab2.xml", SCRAM / "baobab2-basic-events.xml")
    whole = analyse(tree)
    tree.limits.max_zbdd_nodes = 200
    a = analyse(tree)
    assert a.probability == whole.probability and a.birnbaum == whole.birnbaum
    assert a.cut_sets == [] and not a.cut_sets_listed_all
    assert a.cut_sets_refused is not None and "limits.max_zbdd_nodes" in a.cut_sets_refused
    assert "--order" in a.cut_sets_refused
    with pytest.raises(FaultTreeError, match="max_zbdd_nodes"):
        minimal_cut_sets(tree)
    assert analyse(tree, order=2).counts_by_order == whole.counts_by_order[:3]


def test_a_non_coherent_tree_with_one_module_is_built_once(monkeypatch):
    """A tree with negation takes its cut sets from one diagram of the whole tree; when the top
    is its only module, the diagram built for the probability is that one (no second build)."""
    from archkit import faulttree as ft

    built: list[bool] = []
    real = ft._engine

    def counting(tree, house, progress, modular=True):
        built.append(modular)
        return real(tree, house, progress, modular)

    monkeypatch.setattr(ft, "_engine", counting)
    shared = Gate(id="top", type="and", inputs=["x", "n"])
    one = FaultTree(
        id="one",
        top="top",
        gates=[shared, Gate(id="n", type="not", inputs=["x2"]), Gate(id="x", type="or", inputs=["a", "x2"])],
        events=[BasicEvent(id="a", probability=0.1), BasicEvent(id="x2", probability=0.2)],
    )
    a = analyse(one)
    assert built == [True] and not a.coherent and a.modules == 1
    assert a.cut_sets == [frozenset(["a"])]  # a with x2 working: the positive part of a·¬x2
    two = FaultTree(
        id="two",
        top="top",
        gates=[
            Gate(id="top", type="or", inputs=["m", "k"]),
            Gate(id="m", type="and", inputs=["a", "b"]),
            Gate(id="k", type="not", inputs=["c"]),
        ],
        events=[BasicEvent(id=e, probability=0.1) for e in "abc"],
    )
    built.clear()
    analyse(two)
    assert built == [True, False]


# ---------------------------------------------------------------- MEF safety and errors


def test_mef_refuses_entities_and_dtds():
    bomb = b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">]><opsa-mef>&lol;</opsa-mef>'
    with pytest.raises(MefError, match="bomb.xml:1"):
        import_mef([("bomb.xml", bomb)])
    ext = b'<?xml version="1.0"?><!DOCTYPE x SYSTEM "http://127.0.0.1:9/x.dtd"><opsa-mef/>'
    with pytest.raises(MefError, match="refused"):
        import_mef([("ext.xml", ext)])


def test_mef_errors_are_located():
    with pytest.raises(MefError, match=r"^bad.xml:3:\d+: "):
        import_mef([("bad.xml", b"<opsa-mef>\n<define-fault-tree name='t'>\n<oops</opsa-mef>")])
    text = b"""<opsa-mef>
<define-fault-tree name="t">
<define-gate name="top"><priority-and><basic-event name="a"/></priority-and></define-gate>
</define-fault-tree></opsa-mef>"""
    with pytest.raises(MefError, match=r"^m.xml:3: <priority-and> is not a Boolean connective"):
        import_mef([("m.xml", text)])


@pytest.fixture(scope="module")
def cli() -> CliRunner:
    _load_commands()
    return CliRunner()


def test_cli_import_writes_a_new_spec_and_never_overwrites(cli, tmp_path):
    out = tmp_path / "chinese.yaml"
    res = cli.invoke(app, ["faulttree", "import", str(ARALIA / "chinese.xml"), "-o", str(out)])
    assert res.exit_code == 0, res.output
    loaded = load_file(out)
    assert loaded.spec is not None, [d.text() for d in loaded.diagnostics]
    again = cli.invoke(app, ["faulttree", "import", str(ARALIA / "chinese.xml"), "-o", str(out)])
    assert again.exit_code == 2 and "already exists" in again.output
    report = cli.invoke(app, ["faulttree", str(out), "--format", "json"])
    assert report.exit_code == 0, report.output
    data = json.loads(report.output)
    assert same_to_printed_digits(data["probability"], REF["chinese"]["probability"])
    assert data["cut_set_count"] == REF["chinese"]["products"]
    exported = cli.invoke(app, ["faulttree", "export", str(out), "--tree", "chinese"])
    assert exported.exit_code == 0 and "<define-fault-tree" in exported.output


def test_cli_names_the_trees_a_spec_has_when_tree_is_wrong(cli, tmp_path):
    spec = ROOT / "examples" / "recommendation.yaml"
    for args in (["faulttree", str(spec)], ["faulttree", "export", str(spec)]):
        res = cli.invoke(app, [*args, "--tree", "nope"])
        assert res.exit_code == 2
        assert "no fault tree 'nope'" in res.output and "the spec has: ranker-unavailable" in res.output
    bare = tmp_path / "bare.yaml"
    bare.write_text(
        "apiVersion: archkit/v1\nmetadata: {name: x}\ndataflow: {stages: [{id: a, kind: model}], edges: []}\n",
        encoding="utf-8",
    )
    for args in (["faulttree", str(bare), "--tree", "nope"], ["faulttree", "export", str(bare)]):
        res = cli.invoke(app, args)
        assert res.exit_code == 2 and "declares no fault trees" in res.output, res.output


def test_cli_text_report_names_the_longest_part(cli):
    res = cli.invoke(app, ["faulttree", str(ARALIA / "das9202.xml"), "--order", "3"])
    assert res.exit_code == 0, res.output
    assert "top event probability: 0.01011538" in res.output
    assert "[order <= 3]" in res.output and "longest:" in res.output
    assert "Fussell-Vesely" in res.output


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_trees())
def test_every_variable_order_heuristic_gives_the_same_answer(tree):
    """`choose_order` picks one of six (formula, order) candidates by a static score; each
    must be exact on its own, coalescing included, since a different tree picks another.
    The default pick is held to enumeration by the test above."""
    from archkit import faulttree
    from archkit.faulttree.model import compile_tree, order_candidates

    base = analyse(tree)
    names = [c[0] for c in order_candidates(compile_tree(tree))]
    assert len(names) == 6 and base.variable_order in names
    for i in range(6):

        def pick(f, i=i):
            name, form, order = order_candidates(f)[i]
            return form, order, name

        faulttree.clear_memo()  # analyse remembers the tree; each order must run
        with mock.patch.object(faulttree, "choose_order", pick):
            a = analyse(tree)
        assert a.variable_order == names[i]
        assert a.probability == pytest.approx(base.probability, rel=1e-12, abs=1e-15)
        assert a.cut_sets == base.cut_sets
        assert a.birnbaum == pytest.approx(base.birnbaum, rel=1e-9, abs=1e-12)


def test_coalescing_merges_only_a_same_type_child_with_one_parent():
    from archkit.faulttree.model import coalesced, compile_tree

    tree = FaultTree(
        id="t",
        top="top",
        gates=[
            Gate(id="top", type="or", inputs=["o1", "a1", "shared", "x"]),
            Gate(id="o1", type="or", inputs=["a", "o2"]),  # OR under OR, one parent: merged
            Gate(id="o2", type="or", inputs=["b", "c"]),  # ... and its own OR child too
            Gate(id="a1", type="and", inputs=["d", "shared"]),  # AND under OR: kept
            Gate(id="shared", type="or", inputs=["e", "f"]),  # two parents: kept
            Gate(id="x", type="and", inputs=["a2", "g"]),
            Gate(id="a2", type="and", inputs=["h", "i"]),  # AND under AND: merged
        ],
        events=[BasicEvent(id=e, probability=0.1) for e in "abcdefghi"],
    )
    got = {g: (t.value, ins) for g, (t, ins, _k) in coalesced(compile_tree(tree)).gates.items()}
    assert got == {
        "top": ("or", ["a", "b", "c", "a1", "shared", "x"]),
        "a1": ("and", ["d", "shared"]),
        "shared": ("or", ["e", "f"]),
        "x": ("and", ["h", "i", "g"]),
    }


def test_heaviest_first_order_and_cut_width_on_a_hand_tree():
    """top = OR(light, heavy, z) with light = AND(a, b) and heavy = OR(c, d, AND(e, f, g)).

    SCRAM's topological order visits child gates in document order (light's events first);
    heaviest first takes heavy's subtree first, and the top's own event z comes last either
    way. The cut width is the most gates open across one point of the order."""
    from archkit.faulttree.model import compile_tree, cut_width, span_sum, topological_order

    tree = FaultTree(
        id="t",
        top="top",
        gates=[
            Gate(id="top", type="or", inputs=["light", "heavy", "z"]),
            Gate(id="light", type="and", inputs=["a", "b"]),
            Gate(id="heavy", type="or", inputs=["c", "d", "inner"]),
            Gate(id="inner", type="and", inputs=["e", "f", "g"]),
        ],
        events=[BasicEvent(id=e, probability=0.1) for e in "abcdefgz"],
    )
    f = compile_tree(tree)
    assert topological_order(f) == list("abefgcdz")
    assert topological_order(f, heaviest_first=True) == list("efgcdabz")
    # a b e f g c d z: top spans 0–7, light 0–1, heavy 2–6, inner 2–4; between e and f
    # (and f and g) top, heavy and inner are open: 3
    assert cut_width(f, list("abefgcdz")) == 3
    assert span_sum(f, list("abefgcdz")) == 7 + 1 + 4 + 2
    # interleaving light's events with heavy's keeps light open across heavy's: 4
    assert cut_width(f, list("aefgcdbz")) == 4


@settings(max_examples=200, deadline=None)
@given(random_trees())
def test_cut_width_and_span_sum_bound_each_other(tree):
    """The span sum counts, over every point of the order, the gates open across it; the cut
    width is the largest of those counts. So width ≤ sum ≤ width × (points), and neither
    exceeds what the gates allow; every candidate order is a permutation of the tree's events."""
    from archkit.faulttree.model import compile_tree, cut_width, order_candidates, span_sum

    f = compile_tree(tree)
    for _name, form, order in order_candidates(f):
        assert sorted(order) == sorted(form.variables)
        w, s = cut_width(form, order), span_sum(form, order)
        assert 0 <= w <= len(form.gates)
        assert w <= s <= w * max(len(order) - 1, 0)


def _diagram(bdd, root: int) -> list[tuple[int, int, int]]:
    """`root`'s diagram numbered in depth-first post-order (low child first): a reduced ordered
    BDD is canonical, so two diagrams of one function over one order give the same list,
    whatever ids their nodes had."""
    label = {0: 0, 1: 1}
    out: list[tuple[int, int, int]] = []
    stack = [root]
    while stack:
        n = stack[-1]
        if n in label:
            stack.pop()
            continue
        kids = [c for c in (int(bdd.lo[n]), int(bdd.hi[n])) if c not in label]
        if kids:
            stack.extend(reversed(kids))
            continue
        stack.pop()
        label[n] = len(out) + 2
        out.append((int(bdd.var[n]), label[int(bdd.lo[n])], label[int(bdd.hi[n])]))
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_trees(), st.sampled_from([(1, 1, 10**9), (2, 3, 10**9), (16, None, 10**9), (1, 2, 1)]))
def test_compiled_kernel_builds_the_same_diagrams_as_python(tree, sizes):
    """ft_kernel runs the Python diagram's algorithm in numba: the same operations in the same
    order make the same nodes, so the diagrams must be identical whatever the start capacity
    (2 nodes, 8, 65,536: every growth path), frame stack (1 row, 3), and garbage collection
    (never, or after every gate: `COLLECT_AT` = 1). A finished compiled diagram keeps only its
    root's nodes, and collection renumbers them, so the diagrams are compared in a canonical
    numbering."""
    from archkit.faulttree import compiled as ft_compiled
    from archkit.faulttree import engine as ft_engine
    from archkit.faulttree.engine import Engine
    from archkit.faulttree.model import choose_order, compile_tree

    bits, rows, collect_at = sizes
    f, order, _ = choose_order(compile_tree(tree))
    py = Engine(f, order, 100_000, kernel="python")

    real = ft_compiled.CompiledBdd

    def small(nvars, max_nodes):
        return real(nvars, max_nodes, cache_bits=4, capacity_bits=bits, stack_rows=rows)

    with (
        mock.patch.object(ft_compiled, "CompiledBdd", small),
        mock.patch.object(ft_engine, "COLLECT_AT", collect_at),
    ):
        nb = Engine(f, order, 100_000, kernel="compiled")
    assert nb.kernel == "compiled" and py.kernel == "python"
    if collect_at > 1:
        assert nb.node_count == py.node_count  # the same work, node for node
    for g, m in py.modules.items():
        n = nb.modules[g]
        assert _diagram(n.bdd, n.root) == _diagram(m.bdd, m.root)
        assert list(n.nodes) == list(range(2, n.root + 1))  # nothing but the root's diagram
    p = {e: f.probabilities[e] for e in order}
    top_py, vals_py, local_py = py.probability(p)
    top_nb, vals_nb, local_nb = nb.probability(p)
    assert top_nb == pytest.approx(top_py, rel=1e-12, abs=1e-15)
    assert nb.gradient(vals_nb, local_nb) == pytest.approx(
        py.gradient(vals_py, local_py), rel=1e-9, abs=1e-12
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_trees(), st.sampled_from([None, 0, 1, 2, 3]), st.sampled_from([(1, 1), (2, 3), (16, None)]))
def test_compiled_minimal_solutions_equal_the_python_ones(tree, order, sizes):
    """`ft_compiled.minimal_solutions` is `Zbdd.minsol` on arrays: over the same compiled diagram
    both give the same family of sets, for every order limit, whatever the start capacity (2
    nodes: every growth path) and frame stacks (1 row: every deepening)."""
    from archkit.faulttree import compiled as ft_compiled
    from archkit.faulttree.bdd import Zbdd
    from archkit.faulttree.engine import Engine
    from archkit.faulttree.model import choose_order, compile_tree

    bits, rows = sizes
    f, order_vars, _ = choose_order(compile_tree(tree))
    eng = Engine(f, order_vars, 100_000, modular=False, kernel="compiled")
    m = eng.top
    if m.root < 2:
        return
    out = ft_compiled.minimal_solutions(m.bdd, m.root, order, 10**6, capacity_bits=bits, stack_rows=rows)
    assert out is not None
    z = Zbdd()
    compiled = {tuple(s) for s, _p in z.sets(ft_compiled.into_zbdd(z, out))}
    if out[3] > 1:  # a node past the terminals is over a budget of one
        with pytest.raises(DiagramLimitError):
            ft_compiled.minimal_solutions(m.bdd, m.root, order, 1)
    m.bdd.lists()
    zp = Zbdd()
    python = {tuple(s) for s, _p in zp.sets(zp.minsol(m.bdd, m.root, order, {}))}
    assert compiled == python


@pytest.mark.parametrize(
    ("files", "order"),
    [
        ((SCRAM / "baobab2.xml", SCRAM / "baobab2-basic-events.xml"), None),
        ((ARALIA / "baobab1.xml",), None),
        ((ARALIA / "jbd9601.xml",), 3),
        ((ARALIA / "das9205.xml",), None),
    ],
    ids=["baobab2", "aralia-baobab1", "jbd9601-order3", "das9205"],
)
def test_compiled_minimal_solutions_on_benchmark_trees(files, order):
    """Random trees are small; these share events across many gates, so `without` meets
    families with the same top variable at every depth. Both passes must give the same sets."""
    from archkit.faulttree import compiled as ft_compiled
    from archkit.faulttree.bdd import Zbdd
    from archkit.faulttree.engine import Engine
    from archkit.faulttree.model import choose_order, compile_tree

    f, order_vars, _ = choose_order(compile_tree(mef(*files)))
    eng = Engine(f, order_vars, 4_000_000, modular=False, kernel="compiled")
    m = eng.top
    out = ft_compiled.minimal_solutions(m.bdd, m.root, order, 10**7)
    assert out is not None
    z = Zbdd(10**7)
    root = ft_compiled.into_zbdd(z, out)
    m.bdd.lists()
    zp = Zbdd(10**7)
    python = zp.minsol(m.bdd, m.root, order, {})
    assert z.count_by_order(root) == zp.count_by_order(python)
    assert {tuple(s) for s, _ in z.sets(root)} == {tuple(s) for s, _ in zp.sets(python)}


def test_collection_frees_garbage_and_keeps_the_roots_functions():
    """`CompiledBdd.collect` keeps exactly what the roots reach and renumbers it; the node budget
    still counts every node made, freed ones included (it bounds the work)."""
    from archkit.faulttree import compiled as ft_compiled
    from archkit.faulttree.bdd import Bdd, DiagramLimitError

    def build(bdd):
        x = [bdd.variable(2 * i + 1) for i in range(8)]
        keep = bdd.disj(bdd.conj(x[0], x[3]), bdd.conj(x[5], x[7]))
        bdd.xor(bdd.disj(x[1], x[2]), bdd.conj(x[4], x[6]))  # garbage
        return keep, bdd.neg(keep)

    py, nb = Bdd(8), ft_compiled.CompiledBdd(8, 100)
    keep_py, neg_py = build(py)
    keep, neg = build(nb)
    made = len(nb)
    keep, neg = nb.collect([keep, neg])
    assert len(nb) < made and nb.created == made
    assert _diagram(nb, keep) == _diagram(py, keep_py) and _diagram(nb, neg) == _diagram(py, neg_py)
    live = set(py.reachable(keep_py)) | set(py.reachable(neg_py))
    assert len(nb) == 2 + len(live)
    assert nb.conj(keep, neg) == 0  # the cache was cleared and answers afresh
    assert nb.mk(int(nb.var[keep]), int(nb.lo[keep]), int(nb.hi[keep])) == keep  # the table was rebuilt
    assert len(nb) == 2 + len(live)
    with pytest.raises(DiagramLimitError, match="more than 100 nodes"):
        for i in range(100):
            nb.xor(nb.variable(2 * (i % 8) + 1), nb.conj(keep, nb.variable(2 * ((i + 3) % 8) + 1)))
            keep = nb.collect([keep])[0]


def test_compiled_kernel_refuses_past_the_node_limit():
    from archkit.faulttree.bdd import DiagramLimitError
    from archkit.faulttree.engine import Engine
    from archkit.faulttree.model import choose_order, compile_tree

    path = ARALIA / "das9601.xml"
    f, order, _ = choose_order(compile_tree(import_mef([(str(path), path.read_bytes())])[0]))
    with pytest.raises(DiagramLimitError, match="more than 50,000 nodes"):
        Engine(f, order, 50_000, kernel="compiled")
    assert Engine(f, order, 4_000_000, kernel="compiled").node_count == 201_783


def test_auto_kernel_switches_to_compiled_for_a_large_module():
    """The "auto" kernel starts every module in Python and rebuilds one that outgrows SWITCH_AT
    nodes with the compiled kernel: same nodes, same answer, and the report says which ran."""
    from archkit import faulttree
    from archkit.faulttree import engine as ft_engine

    path = ARALIA / "baobab2.xml"
    tree = import_mef([(str(path), path.read_bytes())])[0]
    small = analyse(tree, cut_sets=False)
    assert small.bdd_kernel == "python"
    faulttree.clear_memo()  # the patched kernel must run, not the remembered answer
    with mock.patch.object(ft_engine, "SWITCH_AT", 200):
        big = analyse(tree)
    assert big.bdd_kernel == "compiled"
    assert (big.probability, big.bdd_nodes) == (small.probability, small.bdd_nodes)
    assert big.probability == pytest.approx(REF["baobab2"]["probability"], rel=1e-5)


@settings(max_examples=300, deadline=None)
@given(
    ids=st.lists(st.text(min_size=1, max_size=4), max_size=25, unique=True),
    picks=st.lists(st.lists(st.integers(0, 24), max_size=7), max_size=40),
    gap=st.integers(1, 3),
)
def test_cut_sets_are_listed_by_size_then_by_their_sorted_ids(ids, picks, gap):
    """The numpy ordering of listed cut sets is Python's sort by (size, the sorted event ids)
    for any ids, diagram variables numbered unlike the ids' order and with gaps, and the
    empty set (a top event that is always true, even in a tree with no events)."""
    from archkit.faulttree import _in_report_order

    names = {gap * i + 1: name for i, name in enumerate(reversed(ids))}
    variables = sorted(names)
    seen: set[frozenset[int]] = set()
    sets = []
    for pick in picks:
        vs = frozenset(variables[i % len(variables)] for i in pick) if variables else frozenset()
        if vs not in seen:  # a family of sets holds each set once
            seen.add(vs)
            sets.append(sorted(vs))
    expected = sorted((frozenset(names[v] for v in vs) for vs in sets), key=lambda c: (len(c), sorted(c)))
    assert _in_report_order(sets, names) == expected
