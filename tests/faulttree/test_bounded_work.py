"""Issue 28's reproducers: work on a fault tree is bounded by work budgets, never by recursion depth.

Budgets count work (nodes, steps, sets listed), not seconds, so results stay byte-identical on
any machine; docs/benchmarks.md records what they cost on this one.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import yaml

from archkit import api
from archkit.faulttree import analyse, clear_memo
from archkit.spec import load_file
from tests.conftest import ROOT

INDUSTRIAL = ROOT / "examples" / "industrial-inspection.yaml"


def _with_tree(tmp_path: Path, tree: dict) -> Path:
    doc = yaml.safe_load(INDUSTRIAL.read_text(encoding="utf-8"))
    doc["faulttrees"].append(tree)
    out = tmp_path / "spec.yaml"
    out.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return out


def and_of_ors(ors: int = 10, width: int = 4) -> dict:
    """An AND of `ors` OR gates of `width` events: width**ors minimal cut sets (4**10 = 1,048,576)."""
    gates = [{"id": "top", "type": "and", "inputs": [f"g{i}" for i in range(ors)]}]
    events = []
    for i in range(ors):
        gates.append({"id": f"g{i}", "type": "or", "inputs": [f"e{i}-{j}" for j in range(width)]})
        events += [{"id": f"e{i}-{j}", "label": f"e{i}-{j}", "probability": 0.01} for j in range(width)]
    return {"id": "wide", "top": "top", "gates": gates, "events": events}


def chain(n: int = 1000, cycle: bool = False) -> dict:
    """OR gates c0 -> c1 -> ... -> c{n-1}, each with one event; with `cycle` the last feeds c0."""
    gates = [{"id": f"c{i}", "type": "or", "inputs": [f"c{i + 1}", f"x{i}"]} for i in range(n - 1)]
    gates.append({"id": f"c{n - 1}", "type": "or", "inputs": [f"x{n - 1}"] + (["c0"] if cycle else [])})
    events = [{"id": f"x{i}", "label": f"x{i}", "probability": 0.001} for i in range(n)]
    return {"id": "chain", "top": "c0", "gates": gates, "events": events}


def test_a_million_cut_sets_are_counted_exactly_and_listed_within_the_budget(tmp_path) -> None:
    spec_file = _with_tree(tmp_path, and_of_ors())
    tree = load_file(spec_file).spec.faulttrees[-1]
    a = analyse(tree)
    assert a.cut_set_count == 4**10 and a.counts_by_order[10] == 4**10
    assert len(a.cut_sets) == tree.limits.max_cut_sets == 10_000
    assert a.probability is not None and abs(a.probability - (1 - 0.99**4) ** 10) < 1e-15
    report = api.check([spec_file], select=["AK111"])
    found = [d for d in report.diagnostics if d.code == "AK111"]
    assert len(found) == 1 and found[0].severity.value == "info"
    assert "limits.max_cut_sets" in found[0].message and "1,048,576" in found[0].message
    assert found[0].line > 1  # located at the tree


def test_the_schema_caps_every_limit(tmp_path) -> None:
    tree = copy.deepcopy(and_of_ors(2, 2))
    tree["limits"] = {"max_bdd_nodes": 10**15, "max_zbdd_nodes": 10**15, "max_cut_sets": 10**15}
    res = load_file(_with_tree(tmp_path, tree))
    assert res.spec is None
    paths = {d.path.rsplit(".", 1)[-1] for d in res.diagnostics if d.code == "AK101"}
    assert paths == {"max_bdd_nodes", "max_zbdd_nodes", "max_cut_sets"}


def test_a_chain_of_a_thousand_gates_is_checked_not_a_recursion_error(tmp_path) -> None:
    report = api.check([_with_tree(tmp_path, chain())], select=["AK108", "AK111", "AK199"])
    assert [d.text() for d in report.diagnostics] == []
    cyclic = api.check([_with_tree(tmp_path, chain(cycle=True))], select=["AK108", "AK199"])
    codes = [d.code for d in cyclic.diagnostics]
    assert codes == ["AK108"], [d.text() for d in cyclic.diagnostics]
    assert "fault tree cycle: c0 -> c1 -> c2" in cyclic.diagnostics[0].message
    assert cyclic.diagnostics[0].message.endswith("c998 -> c999 -> c0")


def test_a_chain_of_a_thousand_gates_is_drawn_and_walked(tmp_path) -> None:
    """Found by the schema-valid fuzzer: the diagram's single-point walk recursed per gate."""
    spec = load_file(_with_tree(tmp_path, chain(1500))).spec
    analyse(spec.faulttrees[-1])  # remembered: the generator's own call then raises no limit
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)  # the BDD raises it for its own recursion only; nor must the drawing
    try:
        files, _ = api.generate(spec, "spec.yaml", only=["faulttree", "runbooks"], formats=())
    finally:
        sys.setrecursionlimit(limit)
    assert "faulttree/chain.dot" in files or any(k.startswith("faulttree/chain") for k in files)
    assert "runbooks/chain.md" in files


def test_the_analysis_puts_the_recursion_limit_back(tmp_path) -> None:
    """CI failed on this: a 1,500-gate tree's analysis left the limit at ~8,000 for the rest of
    the process, so a later JSON reader's nesting bound (a RecursionError at Python's default
    limit) no longer fired and 3,000 nested lists parsed instead of being refused."""
    spec = load_file(_with_tree(tmp_path, chain(1500))).spec
    before = sys.getrecursionlimit()
    clear_memo()
    result = analyse(spec.faulttrees[-1])
    assert result.probability is not None
    assert sys.getrecursionlimit() == before
