"""The workflow section (archkit.spec.workflow, seed 004 §2.2): references, the alert and the drawing."""

from __future__ import annotations

from archkit.checks import run_rules
from archkit.generators.gen_controlflow import controlflow_source
from archkit.generators.registry import RenderContext
from archkit.plans.alerts import alert_plan
from archkit.spec import load_text

SPEC = """\
apiVersion: archkit/v1
metadata: {{name: t}}
dataflow:
  stages: [{{id: ocr, kind: external, p99_ms: 300}}]
controlflow:
  start: call-ocr
  calls:
    - {{id: call-ocr, target: ocr, timeout_ms: 500, retry: {{attempts: 3, backoff_ms: 100}}, next: done, on_failure: manual}}
  terminals: [{{id: done}}, {{id: manual, outcome: degraded}}]
topology:
  storage: [{{id: pg, type: database}}]
workflows:
  - {{id: ocr-flow, steps: [{steps}], state: {{store: {store}}}, retries_exhausted: {{metric: wf_exhausted_total, labels: {{wf: ocr}}}}}}
"""


def _load(steps: str = "call-ocr", store: str = "pg"):
    res = load_text(SPEC.format(steps=steps, store=store), "t.yaml")
    assert res.ok and res.spec is not None, [d.text() for d in res.diagnostics]
    return res.spec


def test_dangling_step_and_store_are_ak103():
    spec = _load("call-nowhere", "mysql")
    found = sorted(d.message.split("'")[1] for d in run_rules(spec, select=["AK103"]))
    assert found == ["call-nowhere", "mysql"]


def test_an_empty_workflow_is_refused_at_its_line():
    res = load_text(SPEC.format(steps="", store="pg"), "t.yaml")
    assert not res.ok
    assert any(d.text().startswith("t.yaml:13:") and "steps" in d.text() for d in res.diagnostics)


def test_retries_exhausted_alert_fires_on_any_increase():
    (a,) = [a for a in alert_plan(_load()).alerts if a.name.startswith("Workflow")]
    assert a.name == "WorkflowRetriesExhaustedOcrFlow"
    assert a.expr == 'sum(increase(wf_exhausted_total{wf="ocr"}[5m])) > 0'
    assert a.for_ is None and "call-ocr ×3" in a.summary
    assert a.fire is not None and a.fire.series[0][1].startswith("0+1x")
    assert a.quiet.series[0][1].startswith("0+0x")


def test_controlflow_diagram_names_the_workflow():
    src = controlflow_source(RenderContext(_load()))
    (line,) = [ln for ln in src.splitlines() if "call&#45;ocr**" in ln]
    assert line.endswith(
        "\\n//workflow ocr&#45;flow &#40;temporal&#41; · state in pg · alert when//\\n//retries run out//;"
    )
