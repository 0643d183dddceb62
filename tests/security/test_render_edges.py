"""Render edge cases: a decision without branches draws, one diagram that fails costs no other file,
and every example's generated locustfile imports (the real PlantUML, dot and Python).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from archkit import api
from archkit.cli import _load_commands, app
from tests.conftest import EXAMPLES, REFERENCE_SPECS, ROOT
from tests.security.tools import run, write

JAR = ROOT / ".cache" / "plantuml" / "plantuml-1.2026.8.jar"
needs_plantuml = pytest.mark.skipif(not JAR.exists(), reason="PlantUML jar missing (make setup)")

NO_BRANCHES = """\
apiVersion: archkit/v1
metadata: {name: nb}
budgets: {p50_ms: 10, p99_ms: 100}
dataflow:
  stages:
    - {id: a, kind: ingress, p99_ms: 5}
controlflow:
  start: d
  decisions:
    - id: d
      criterion: x
      branches: []
"""
# two decisions without branches behind one that has: one on the main column, one on a side path
NESTED = NO_BRANCHES.replace(
    "      branches: []\n",
    "      branches: [{when: a, next: e1}, {when: b, next: e2}]\n"
    "    - {id: e1, criterion: y, branches: []}\n"
    "    - {id: e2, criterion: z, branches: []}\n",
)


def _render(spec: Path, out: Path, *extra: str) -> tuple[int, str, str]:
    """Exit code, stdout and everything printed, of `archkit render SPEC -o OUT -f json`."""
    _load_commands()
    res = CliRunner().invoke(app, ["render", str(spec), "-o", str(out), "--format", "json", *extra])
    return res.exit_code, res.stdout, res.output


@needs_plantuml
@pytest.mark.parametrize("text", [NO_BRANCHES, NESTED], ids=["start", "nested"])
def test_a_decision_without_branches_is_drawn_and_reported_by_check(text: str, tmp_path: Path) -> None:
    spec = tmp_path / "nb.yaml"
    spec.write_text(text, encoding="utf-8")
    codes = {d.code for d in api.check([spec]).diagnostics}
    assert codes & {"AK106", "AK107"}, codes
    code, _, output = _render(spec, tmp_path / "out")
    assert code == 1, output  # the check errors, not the drawing
    assert (tmp_path / "out" / "controlflow.svg").is_file(), output
    assert "not rendered" not in output and "kill cannot be used here" not in output, output


@needs_plantuml
def test_one_diagram_that_fails_leaves_every_other_file_written(tmp_path: Path) -> None:
    """A user template that PlantUML and dot refuse: those two are listed as not rendered, the rest is written."""
    templates = write(
        tmp_path / "templates",
        {
            "controlflow/controlflow.puml.j2": "@startuml\nstart\nswitch (x)\ncase (y)\n  detach\nendswitch\n@enduml\n",
            "dataflow/dataflow.dot.j2": "digraph { a -> ; }\n",
        },
    )
    spec = EXAMPLES[0]
    out = tmp_path / "out"
    code, stdout, output = _render(spec, out, "--templates", str(templates))
    assert code == 1, output
    summary = json.loads(stdout)
    not_rendered = summary["not_rendered"]
    assert set(not_rendered) >= {"controlflow.svg", "dataflow.svg"}, not_rendered
    assert "line" in not_rendered["controlflow.svg"], not_rendered
    for rel in (
        "topology.svg",
        "review.html",
        "prometheus/rules.yaml",
        "runbooks/checklist.md",
        "controlflow.puml",
    ):
        assert (out / rel).is_file(), f"{rel} not written: {output}"
    assert not (out / "controlflow.svg").exists() and not (out / "dataflow.svg").exists()
    assert "not rendered" in (out / "review.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("path", EXAMPLES + REFERENCE_SPECS, ids=lambda p: p.stem)
def test_every_generated_locustfile_imports(path: Path, tmp_path: Path) -> None:
    spec = api.load(path).spec
    assert spec is not None
    files, _ = api.generate(spec, path.name, only=["locust"])
    folder = write(tmp_path, files)
    locustfiles = sorted(folder.rglob("locustfile.py"))
    assert locustfiles, sorted(files)
    for lf in locustfiles:
        res = run(sys.executable, "-c", "import locustfile", cwd=lf.parent)
        assert res.returncode == 0, res.stderr[-2000:]


def test_non_finite_numbers_never_reach_a_locustfile(tmp_path: Path) -> None:
    doc = yaml.safe_load(EXAMPLES[0].read_text(encoding="utf-8"))
    text = yaml.safe_dump(doc, sort_keys=False).replace("timeout_ms: ", "timeout_ms: .inf #", 1)
    spec = tmp_path / "inf.yaml"
    spec.write_text(text, encoding="utf-8")
    res = api.load(spec)
    assert res.spec is None and any(d.line for d in res.diagnostics), [d.text() for d in res.diagnostics]
