"""No silent failure: a tree the analysis refuses is drawn with the reason, on the diagram and
the review page, and `check` reports it (AK111) with the limit and how to raise it."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from archkit import api
from archkit.render import generate

SPEC = """\
apiVersion: archkit/v1
metadata: {name: over-limit}
faulttrees:
  - id: big
    top: g
    limits: {max_bdd_nodes: 5}
    gates: [{id: g, type: and, inputs: [a, b, c, d]}]
    events:
      - {id: a, probability: 0.1, check: "true", expect_exit_code: 0}
      - {id: b, probability: 0.1, check: "true", expect_exit_code: 0}
      - {id: c, probability: 0.1, check: "true", expect_exit_code: 0}
      - {id: d, probability: 0.1, check: "true", expect_exit_code: 0}
"""


@pytest.fixture
def spec_file(tmp_path: Path) -> Path:
    path = tmp_path / "over.yaml"
    path.write_text(SPEC, encoding="utf-8")
    return path


def test_check_reports_the_limit(spec_file: Path) -> None:
    found = [d for d in api.check_spec(api.load(spec_file).spec) if d.code == "AK111"]
    assert found and "limits.max_bdd_nodes" in found[0].message
    assert found[0].line == 6


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is installed by `make setup`")
def test_render_draws_the_reason_on_the_diagram_and_review_page(spec_file: Path) -> None:
    spec = api.load(spec_file).spec
    files, _ = generate(spec, str(spec_file), only=["faulttree", "review"], formats=("svg",))
    source = files["faulttree/big.dot"]
    assert "analysis refused" in source and "limits.max_bdd_nodes" in source
    svg = files["faulttree/big.svg"]
    text = re.sub(r"<[^>]+>", " ", svg.decode() if isinstance(svg, bytes) else svg)
    assert "analysis refused" in text and "max_bdd_nodes" in " ".join(text.split())
    review = files["review.html"]
    review = review.decode() if isinstance(review, bytes) else review
    assert "analysis refused" in review


def test_cut_sets_over_their_limit_are_reported_and_drawn_beside_the_probability(tmp_path: Path) -> None:
    """Over `limits.max_zbdd_nodes` the probability still comes from the BDD: `check` reports
    the cut-set limit (AK111) and the diagram shows the probability with the reason."""
    path = tmp_path / "zbdd.yaml"
    path.write_text(SPEC.replace("max_bdd_nodes: 5", "max_zbdd_nodes: 3"), encoding="utf-8")
    spec = api.load(path).spec
    found = [d for d in api.check_spec(spec) if d.code == "AK111"]
    assert found and "limits.max_zbdd_nodes" in found[0].message and found[0].line == 6
    if shutil.which("dot") is None:
        pytest.skip("Graphviz is installed by `make setup`")
    files, _ = generate(spec, str(path), only=["faulttree"], formats=("svg",))
    source = files["faulttree/big.dot"]
    assert "cut sets not found" in source and "max_zbdd_nodes" in source
    assert "analysis refused" not in source and "0.0001" in source  # P(top) = 0.1^4


def test_one_run_analyses_each_tree_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`check` (AK111), the diagram and the runbook plan ask for the same analysis; it is built
    once per tree value, refusals included, and a tree whose value changes is analysed anew."""
    from archkit import faulttree as ft

    built: list[str] = []
    real = ft._engine

    def counting(tree, house, progress, modular=True):
        built.append(tree.id)
        return real(tree, house, progress, modular)

    monkeypatch.setattr(ft, "_engine", counting)
    path = tmp_path / "two.yaml"
    fine = (
        SPEC.split("faulttrees:\n", 1)[1]
        .replace("id: big", "id: fine")
        .replace("    limits: {max_bdd_nodes: 5}\n", "")
    )
    path.write_text(SPEC + fine, encoding="utf-8")
    spec = api.load(path).spec
    assert [d.code for d in api.check_spec(spec) if d.code == "AK111"] == ["AK111"]
    files, _ = generate(spec, str(path), only=["faulttree", "runbooks"], formats=())
    assert "analysis refused" in files["faulttree/big.dot"]
    assert sorted(built) == ["big", "fine"]
    edited = api.load(path).spec
    edited.faulttrees[1].events[0].probability = 0.2
    api.check_spec(edited)
    assert sorted(built) == ["big", "fine", "fine"]


def _wide_tree(gates: int, per_gate: int) -> str:
    events = [f"e{i}_{j}" for i in range(gates) for j in range(per_gate)]
    lines = [
        "apiVersion: archkit/v1",
        "metadata: {name: wide}",
        "faulttrees:",
        "  - id: wide",
        "    top: top",
    ]
    lines.append("    gates:")
    lines.append(f"      - {{id: top, type: or, inputs: [{', '.join(f'a{i}' for i in range(gates))}]}}")
    for i in range(gates):
        ins = ", ".join(f"e{i}_{j}" for j in range(per_gate))
        lines.append(f"      - {{id: a{i}, type: and, inputs: [{ins}]}}")
    lines.append("    events:")
    lines += [f"      - {{id: {e}, probability: 0.1}}" for e in events]
    return "\n".join(lines) + "\n"


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is installed by `make setup`")
def test_a_tree_too_large_to_draw_shows_its_top_and_says_what_it_left_out(tmp_path: Path) -> None:
    """Past MAX_DRAWN gates and events the diagram draws the nodes nearest the top, a dashed
    note per gate for the inputs it leaves out, and says so; the figures cover the whole tree."""
    from archkit.generators import gen_faulttree

    path = tmp_path / "wide.yaml"
    path.write_text(_wide_tree(40, 10), encoding="utf-8")  # 41 gates and 400 events
    spec = api.load(path).spec
    files, _ = generate(spec, str(path), only=["faulttree"], formats=("svg",))
    source = files["faulttree/wide.dot"]
    boxes = re.findall(r"^\s+([gehf]\d+) \[label=", source, re.M)
    drawn = [b for b in boxes if not b.startswith("f")]
    assert len(drawn) == gen_faulttree.MAX_DRAWN
    # breadth-first: the top and its 40 AND gates, then 259 events (25 gates' 10 and 9 of the 26th)
    assert sum(b.startswith("g") for b in drawn) == 41
    notes = re.findall(r'label="(\d+) more inputs? not drawn"', source)
    assert sum(map(int, notes)) == 400 - 259 and len(notes) == 15
    assert "drawn: the 300 gates and events nearest the top of 441" in source
    assert "top event p = " in source  # the probability is the whole tree's
    small = tmp_path / "small.yaml"
    small.write_text(_wide_tree(4, 3), encoding="utf-8")
    files, _ = generate(api.load(small).spec, str(small), only=["faulttree"], formats=())
    assert "not drawn" not in files["faulttree/wide.dot"] and "drawn:" not in files["faulttree/wide.dot"]


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is installed by `make setup`")
def test_a_layout_that_runs_past_its_time_is_a_renderer_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Real dot, a limit it cannot meet: the render gets a RendererError naming the limit (and
    so degrades to "not rendered"), not a TimeoutExpired out of the command."""
    from archkit.generators import renderers

    monkeypatch.setattr(renderers, "DOT_TIMEOUT_S", 1e-6)
    with pytest.raises(renderers.RendererError, match="did not finish within 1e-06 s"):
        renderers.run_dot("digraph { a -> b }", "svg")
