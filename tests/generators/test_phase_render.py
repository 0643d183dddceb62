"""`archkit render --phase mva` (seed 004 §4.5): the loan example's minimum viable architecture drawn on
its own, compared with goldens, byte-identical twice, and only the diagram generators."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.conftest import ROOT
from typer.testing import CliRunner

from archkit import api
from archkit.cli import _load_commands, app

LOAN = ROOT / "examples" / "loan-preapproval.yaml"
GOLDEN = ROOT / "tests" / "golden" / "phase" / "loan-preapproval-mva"
MVA = ["frontend-check", "ocr-cache", "ocr", "ocr-precise", "extract", "risk-score", "assemble"]


def _sources(out: Path) -> dict[str, str | bytes]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(out.glob("*.dot"))}


def test_mva_render_matches_golden_and_is_deterministic(tmp_path, golden):
    first = api.render(LOAN, tmp_path / "a", phase="mva", formats=())
    api.render(LOAN, tmp_path / "b", phase="mva", formats=())
    a, b = _sources(tmp_path / "a"), _sources(tmp_path / "b")
    assert a == b and set(a) == {"dataflow.dot", "topology.dot"}
    assert set(first.files) == {"dataflow.dot", "topology.dot"}
    golden.check_tree(GOLDEN, a)


def test_mva_holds_the_marked_stages_and_their_edges_only(tmp_path):
    api.render(LOAN, tmp_path, phase="mva", formats=(), only=["dataflow"])
    dot = (tmp_path / "dataflow.dot").read_text(encoding="utf-8")
    assert "minimum viable architecture (phase: mva)" in dot
    # the later phase's stages (registry check, review queue, policy store) are not drawn
    for later in ("registry-verify", "review-queue", "policy-store"):
        assert f"{later} ·" not in dot
    for sid in MVA:
        assert f"{sid} ·" in dot
    # AK116's path: 7 stages, 10 edges among them (the full design has 14): the fast and the
    # precise OCR (seed 004 §2.1) each take the photo and give text to the cache and to extraction
    assert dot.count(" -> ") == 10


def test_phase_refuses_other_generators(tmp_path):
    _load_commands()
    res = CliRunner().invoke(
        app, ["render", str(LOAN), "-o", str(tmp_path), "--phase", "mva", "--only", "prometheus"]
    )
    assert res.exit_code == 2
    assert "--phase draws only dataflow, topology; not prometheus" in res.output
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("phase", ["MVA", "first"])
def test_unknown_phase_is_a_usage_error(tmp_path, phase):
    _load_commands()
    res = CliRunner().invoke(app, ["render", str(LOAN), "-o", str(tmp_path), "--phase", phase])
    assert res.exit_code == 2
