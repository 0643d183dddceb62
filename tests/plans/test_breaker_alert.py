"""The confidence breaker (seed 004 §3.2) alerted and drawn: its expression by hand, the real promtool
over its generated tests, and the dotted arrow to its fallback on the data-flow diagram."""

from __future__ import annotations

import subprocess

from archkit import api
from archkit.plans.alerts import plan
from archkit.spec import load_text
from tests.plans.promtool_check import assert_tests_pass_and_catch, needs_promtool

# seed 004 §3.2: the ViT's mean confidence below 0.7 moves its traffic to the ResNet
SPEC = """\
apiVersion: archkit/v1
metadata: {name: vision}
dataflow:
  stages:
    - id: vit
      kind: model
      service: triton
      owner: vision-algorithms
      model:
        name: vit
        contract: {outputs: [{name: label}, {name: pred_confidence, type: float32}]}
        confidence_breaker:
          output: pred_confidence
          min_mean: %s
          window_s: 300
          fallback: resnet
          metric: vit_pred_confidence
          labels: {job: triton}
    - {id: resnet, kind: model, service: triton, model: {name: resnet}}
topology:
  node_pools: [{id: p}]
  services: [{id: triton, pool: p, owner: vision-platform}]
observability:
  alert_for: 5m
"""


def _spec(min_mean: float = 0.7):
    res = load_text(SPEC % min_mean, "vision.yaml")
    assert res.ok, [d.text() for d in res.diagnostics]
    return res.spec


def test_expression_by_hand():
    (a,) = [a for a in plan(_spec())[0] if a.name.startswith("ConfidenceBreaker")]
    s, c = 'vit_pred_confidence_sum{job="triton"}', 'vit_pred_confidence_count{job="triton"}'
    assert a.name == "ConfidenceBreakerVit"
    # the mean over the breaker's 300 s window: Σ rate(_sum) / Σ rate(_count)
    assert a.expr == f"sum(rate({s}[5m])) / sum(rate({c}[5m])) < 0.7"
    assert (a.stage, a.severity, a.threshold) == ("vit", "ticket", 0.7)
    # one answer a second: confidences summing to 0.35 a second fire, 0.85 a second stay quiet
    assert a.fire.series == [(s, "0+21x23"), (c, "0+60x23")]
    assert a.quiet.series == [(s, "0+51x23"), (c, "0+60x23")]


def test_no_metric_no_alert():
    text = (SPEC % 0.7).replace("          metric: vit_pred_confidence\n", "")
    res = load_text(text, "vision.yaml")
    assert res.ok
    assert not [a for a in plan(res.spec)[0] if a.name.startswith("ConfidenceBreaker")]


@needs_promtool
def test_promtool_passes_and_a_lower_floor_fails(tmp_path):
    # rules with a floor of 0.3 miss the 0.35 mean the tests feed: the generated tests can fail
    assert_tests_pass_and_catch(tmp_path, _spec(), _spec(0.3), "vision.yaml", "ConfidenceBreakerVit")


def test_breaker_and_owners_drawn_on_the_data_flow():
    files, _ = api.generate(_spec(), "vision.yaml", only=["dataflow"])
    dot = files["dataflow.dot"]
    assert isinstance(dot, str)
    # the breaker: a dotted red arrow from the ViT (s0) to its fallback (s1) with the trip condition
    (line,) = [x for x in dot.splitlines() if "s0 -> s1" in x]
    assert "style=dotted" in line and 'color="#d62728"' in line
    assert "breaker: mean pred_confidence &lt; 0.7 over 300 s → resnet" in line.replace("<BR/>", " ")
    # owners: the stage's own, else its service's (AK115's owner_of)
    assert "owner: vision-algorithms" in dot and "owner: vision-platform" in dot
    assert "confidence breaker: traffic moves to the fallback" in dot
    subprocess.run(["dot", "-Tsvg"], input=dot, text=True, capture_output=True, check=True)


def test_breaker_and_owners_on_the_onboarding_page():
    files, _ = api.generate(_spec(), "vision.yaml", only=["runbooks"])
    page = files["runbooks/onboarding/triton.md"]
    assert isinstance(page, str)
    assert "`vit`, owner vision-algorithms; `resnet`, owner vision-platform." in page
    assert (
        "Confidence breaker: when the mean of `pred_confidence` over 300 s falls below 0.7, its traffic "
        "moves to stage `resnet` (alert `ConfidenceBreaker…` in the alert index)."
    ) in page
