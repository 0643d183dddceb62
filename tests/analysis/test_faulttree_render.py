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
