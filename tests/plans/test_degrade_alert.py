"""A degrade rule's structured condition (seed 004 §3.2) alerted and drawn: its expression by hand,
the real promtool over its generated tests, and the line on its target in the control-flow diagram."""

from __future__ import annotations

from archkit import api
from archkit.plans.alerts import plan
from archkit.spec import load_text
from tests.plans.promtool_check import assert_tests_pass_and_catch, needs_promtool

# seed 004 §3.2: a South-East Asian request slower than 1.2 s is answered "retry later"; here the
# condition reads the gateway stage's bound histogram (its `job` label) plus `region: sea`
SPEC = """\
apiVersion: archkit/v1
metadata: {name: gw}
dataflow:
  stages: [{id: gateway, kind: gateway, service: edge, p99_ms: 1000}]
controlflow:
  start: call-gw
  calls: [{id: call-gw, target: gateway, timeout_ms: 2000, next: done, on_failure: later}]
  terminals: [{id: done}, {id: later, outcome: degraded, status: 503}]
topology:
  node_pools: [{id: p}]
  services: [{id: edge, pool: p}]
observability:
  stages: [{stage: gateway, latency: {metric: %s, type: %s, labels: {job: gw}}}]
policies:
  degrade:
    - id: sea-retry-later
      condition: "SE Asia latency > 1.2 s"
      action: default_response
      target: call-gw
      fallback: later
      when: {stage: gateway, percentile: 0.95, above_ms: %s, window: 10m, labels: {region: sea}}
"""


def _spec(above_ms: float = 1200, metric: str = "gateway_request_duration_seconds", kind: str = "histogram"):
    res = load_text(SPEC % (metric, kind, above_ms), "gw.yaml")
    assert res.ok, [d.text() for d in res.diagnostics]
    return res.spec


def _degrade(spec):
    return [a for a in plan(spec)[0] if a.name.startswith("Degrade")]


def test_expression_by_hand():
    (a,) = _degrade(_spec())
    b = 'gateway_request_duration_seconds_bucket{job="gw", region="sea"}'
    assert a.name == "DegradeSeaRetryLater"
    # P95 over the rule's own 10m window, the stage's labels and the rule's merged, 1200 ms in seconds
    assert a.expr == f"histogram_quantile(0.95, sum by (le) (rate({b}[10m]))) > 1.2"
    assert (a.stage, a.service, a.severity, a.threshold, a.for_, a.windows) == (
        "gateway",
        "edge",
        "ticket",
        1.2,
        None,
        ("10m",),
    )
    # observations in (1.32, 2.64] s fire (P95 ≈ 2.57 s), in (0.24, 0.48] s stay quiet; 8 + 10 minutes
    h = "gateway_request_duration_seconds_bucket"
    assert a.fire.series == [
        (f'{h}{{job="gw", le="1.32", region="sea"}}', "0+0x23"),
        (f'{h}{{job="gw", le="2.64", region="sea"}}', "0+10x23"),
        (f'{h}{{job="gw", le="+Inf", region="sea"}}', "0+10x23"),
    ]
    assert a.fire.eval_min == 18


def test_free_text_and_non_histograms_give_no_alert():
    text = SPEC.replace(
        "      when: {stage: gateway, percentile: 0.95, above_ms: %s, window: 10m, labels: {region: sea}}\n",
        "",
    )
    res = load_text(text % ("gateway_request_duration_seconds", "histogram"), "gw.yaml")
    assert res.ok and not _degrade(res.spec)
    # a summary has only the quantiles it exports; AK418 flags it and nothing is generated
    assert not _degrade(_spec(kind="summary"))


@needs_promtool
def test_promtool_passes_and_a_higher_bound_fails(tmp_path):
    # rules with a 3 s bound miss the ~2.6 s P95 the tests feed: the generated tests can fail
    assert_tests_pass_and_catch(tmp_path, _spec(), _spec(3000), "gw.yaml", "DegradeSeaRetryLater")


def test_drawn_on_its_target_in_the_control_flow():
    files, _ = api.generate(_spec(), "gw.yaml", only=["controlflow"])
    puml = files["controlflow.puml"]
    assert isinstance(puml, str)
    (line,) = [x for x in puml.splitlines() if "call call&#45;gw" in x]
    # under the call's box, wrapped at 60 characters
    assert "//degrade sea&#45;retry&#45;later&#58; P95 of gateway region&#61;sea &#62; 1200 ms//" in line
    assert "//over 10m → default&#95;response → later//" in line


def test_error_ratio_by_hand():
    """Seed 004 §2.2's "daily OCR failure rate > 5 %" on the stage's bound errors and requests."""
    text = """\
apiVersion: archkit/v1
metadata: {name: ocr}
dataflow:
  stages: [{id: ocr, kind: model}, {id: fast-ocr, kind: model}]
observability:
  stages: [{stage: ocr, errors: {metric: ocr_failures_total, type: counter}, requests: {metric: ocr_requests_total, type: counter}}]
policies:
  degrade:
    - {id: fast-ocr-when-failing, condition: "daily OCR failure rate > 5%", action: route, target: ocr,
       fallback: fast-ocr, when: {stage: ocr, error_ratio_above: 0.05, window: 1d}}
"""
    res = load_text(text, "ocr.yaml")
    assert res.ok, [d.text() for d in res.diagnostics]
    (a,) = _degrade(res.spec)
    e, r = "sum(rate(ocr_failures_total[1d]))", "sum(rate(ocr_requests_total[1d]))"
    assert a.expr == f"({e} / {r}) > 0.05"
    assert (a.group, a.windows, a.threshold) == ("errors", ("1d",), 0.05)
    # 52.5 of 100 requests a minute fail (fires), 2.5 (quiet), over a day of samples plus 8 minutes
    assert a.fire.series == [("ocr_failures_total", "0+52.5x1453"), ("ocr_requests_total", "0+100x1453")]
    assert a.quiet.series == [("ocr_failures_total", "0+2.5x1453"), ("ocr_requests_total", "0+100x1453")]
    assert a.fire.eval_min == 1448
