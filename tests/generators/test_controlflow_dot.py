"""The control flow's Graphviz stand-in (drawn when no JVM can run PlantUML): golden per spec, drawn by the
real `dot`, and carrying what the PlantUML diagram carries — each workflow step's workflow line and each
degrade rule's condition under the node it acts on (seed 004 §2.2, §3.2).

Golden files: `tests/generators/controlflow_dot/<spec stem>.dot`; update with
`.venv/bin/pytest tests/generators/test_controlflow_dot.py --update-golden` and read the diff.
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from tests.conftest import EXAMPLES, REFERENCE_SPECS, ROOT
from tests.generators.diagram_helpers import context, load

from archkit.generators.controlflow_dot import controlflow_dot
from archkit.generators.gen_controlflow import controlflow_view

SPECS = EXAMPLES + REFERENCE_SPECS
GOLDEN = ROOT / "tests" / "generators" / "controlflow_dot"
LOAN = ROOT / "examples" / "loan-preapproval.yaml"
needs_dot = pytest.mark.skipif(
    not shutil.which("dot"), reason="needs Graphviz's dot (apt-get install graphviz)"
)


def dot_of(spec_file: Path) -> str:
    return controlflow_dot(context(load(spec_file), spec_file.name))


def labels(dot: str) -> dict[str, str]:
    """Node label text by the node's bold first line (HTML tags dropped, line breaks as spaces)."""
    out: dict[str, str] = {}
    for m in re.finditer(r"^  n\d+ \[label=<(.*)>, shape=", dot, re.M):
        text = m.group(1).replace("<BR/>", " ")
        head = re.match(r"<B>(.*?)</B>", text)
        assert head is not None, text
        out[head.group(1)] = re.sub(r"<[^>]+>", "", text)
    return out


@pytest.mark.parametrize("spec_file", SPECS, ids=[p.stem for p in SPECS])
def test_golden(spec_file, golden):
    golden.check(GOLDEN / f"{spec_file.stem}.dot", dot_of(spec_file))


@needs_dot
@pytest.mark.parametrize("spec_file", SPECS, ids=[p.stem for p in SPECS])
def test_dot_draws_it_without_a_warning(spec_file):
    proc = subprocess.run(
        ["dot", "-Tsvg"], input=dot_of(spec_file), capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert "<svg" in proc.stdout


def test_the_loan_workflow_and_degrade_rules_sit_under_their_nodes():
    """Hand-read from examples/loan-preapproval.yaml: every call is a step of workflow `preapproval`
    (temporal, state in workflow-db, a retries-exhausted counter); `sea-retry-later` acts on the
    decision `pick-ocr` and `fast-ocr-when-failing` on the call `call-ocr`."""
    nodes = labels(dot_of(LOAN))
    wf = "workflow Pre-approval (temporal) · state in workflow-db · alert when retries run out"
    calls = [k for k in nodes if k.startswith("call ")]
    assert len(calls) == 8
    for head in calls:
        assert wf in nodes[head], head
    sea = (
        "degrade sea-retry-later: P99 of loan_request_duration_seconds region=sea &gt; 1200 ms over 5m "
        "→ default_response → retry-later"
    )
    assert sea in nodes["Precise or fast OCR?"]
    assert wf not in nodes["Precise or fast OCR?"]  # a decision is no workflow step
    fail = "degrade fast-ocr-when-failing: failure ratio of ocr &gt; 5 % over 1d → route → pick-ocr"
    assert nodes["call Fast OCR"].endswith(f"{wf} {fail}")  # the workflow first, then the rule
    assert sum(sea in t or fail in t for t in nodes.values()) == 2  # each rule drawn once


@pytest.mark.parametrize("spec_file", SPECS, ids=[p.stem for p in SPECS])
def test_it_carries_every_annotation_the_plantuml_diagram_carries(spec_file):
    """Count the italic annotation lines' starts in both: the stand-in loses none."""
    ctx = context(load(spec_file), spec_file.name)
    puml = "\n".join(controlflow_view(ctx)["lines"])
    dot = controlflow_dot(ctx)
    for word in ("workflow", "degrade"):
        assert dot.count(f"<I>{word} ") == puml.count(f"//{word} "), word


@needs_dot
def test_the_drawn_loan_svg_shows_the_degrade_condition():
    proc = subprocess.run(
        ["dot", "-Tsvg"], input=dot_of(LOAN), capture_output=True, text=True, timeout=120, check=True
    )
    italic = [
        html.unescape(t)
        for t in re.findall(r'<text [^>]*font-style="italic"[^>]*>([^<]*)</text>', proc.stdout)
    ]
    assert "degrade sea-retry-later: P99 of" in italic
    assert "loan_request_duration_seconds region=sea > 1200 ms over 5m →" in italic
