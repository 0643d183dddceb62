"""Golden error messages for broken specs: every error located, several at once, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from archkit import api
from tests.conftest import ROOT

BROKEN = sorted((Path(__file__).parent / "broken").glob("*.yaml"))


@pytest.mark.parametrize("path", BROKEN, ids=lambda p: p.stem)
def test_broken_spec_messages(path, golden, monkeypatch):
    monkeypatch.chdir(ROOT)
    rel = path.relative_to(ROOT)
    report = api.check([rel], select=["AK1"])  # the loader's and structural findings only
    assert report.failed
    text = "".join(d.text() + "\n" for d in report.diagnostics)
    golden.check(path.with_suffix(".expected.txt"), text)


def test_typo_wrong_unit_and_dangling_reference_are_three_errors_in_one_run(monkeypatch):
    monkeypatch.chdir(ROOT)
    every = api.check(["tests/spec/broken/three-errors.yaml"]).diagnostics
    diags = [d for d in every if d.severity.value == "error"]
    assert [(d.code, d.line, d.col) for d in diags] == [("AK101", 4, 11), ("AK101", 9, 7), ("AK103", 11, 26)]
    # the rule groups that read the budgets are skipped, and say so; the others still ran
    skipped = [d.message for d in every if d.code == "AK100"]
    assert len(skipped) == 3 and all("budgets did not load" in m for m in skipped)
    assert skipped[0].startswith("rule group AK2* (latency and capacity) not run")
    assert any(d.code == "AK601" for d in every)
    assert "did you mean 'p50_ms'" in diags[1].hint
    assert diags[2].path == "dataflow.edges[0].to"
