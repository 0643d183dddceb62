"""`# archkit: ignore[CODE] reason` on one object: left out of the failures, counted, in SARIF as suppressed."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from typer.testing import CliRunner

from archkit import api
from archkit.cli import _load_commands, app
from tests.conftest import ROOT

_load_commands()
SCHEMA = json.loads((ROOT / "tests/data/sarif-2.1.0.json").read_text(encoding="utf-8"))
REASON = "the vendor SDK retries 5 times; replaced in Q3"
SPEC = f"""\
apiVersion: archkit/v1
metadata: {{name: t}}
dataflow:
  stages:
    - {{id: features, kind: store, p99_ms: 300}}
controlflow:
  start: a
  timeout_ms: 1500
  calls:
    - id: a  # archkit: ignore[AK402] {REASON}
      target: features
      timeout_ms: 200
      retry: {{attempts: 5, backoff_ms: 10}}
      next: b
      on_failure: default
    - {{id: b, target: features, timeout_ms: 200, retry: {{attempts: 6, backoff_ms: 10}}, next: ok, on_failure: default}}
  terminals: [{{id: ok}}, {{id: default, outcome: degraded}}]
"""


def _spec(tmp_path: Path) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC, encoding="utf-8")
    return path


def test_only_the_commented_object_is_suppressed_and_the_report_counts_it(tmp_path: Path) -> None:
    report = api.check([_spec(tmp_path)], select=["AK402"])
    assert [(d.line, d.message) for d in report.diagnostics] == [
        (16, "call 'b' retries 6 times (more than 3)")
    ]
    assert [(d.line, d.code, d.suppressed) for d in report.suppressed] == [(13, "AK402", REASON)]


def test_text_json_and_sarif_show_the_suppressed_finding(tmp_path: Path) -> None:
    path = _spec(tmp_path)
    runner = CliRunner()
    text = runner.invoke(app, ["check", str(path), "--select", "AK402"])
    assert text.output.splitlines()[-1] == "1 file(s) checked: 0 error(s), 1 warning(s), 0 info, 1 suppressed"
    doc = json.loads(runner.invoke(app, ["check", str(path), "--select", "AK402", "-f", "json"]).output)
    assert [d.get("suppressed", "") for d in doc["diagnostics"]] == ["", REASON]
    sarif = json.loads(runner.invoke(app, ["check", str(path), "--select", "AK402", "-f", "sarif"]).output)
    jsonschema.validate(sarif, SCHEMA)
    results = sarif["runs"][0]["results"]
    assert [r.get("suppressions") for r in results] == [
        None,
        [{"kind": "inSource", "justification": REASON}],
    ]
