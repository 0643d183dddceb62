"""The memory-growth alert (seed 000 §5.4): its expression by hand, and the real promtool over its tests."""

from __future__ import annotations

from archkit.plans.alerts import plan
from archkit.spec import load_text
from tests.plans.promtool_check import assert_tests_pass_and_catch, needs_promtool

SPEC = """\
apiVersion: archkit/v1
metadata: {name: ocr}
dataflow:
  stages:
    - {id: detect, kind: model, service: triton, model: {name: det}}
topology:
  node_pools: [{id: p}]
  services: [{id: triton, pool: p}]
observability:
  alert_for: 10m
  golden_signals:
    memory_growth: {metric: process_resident_memory_bytes, labels: {job: triton}%s}
"""


def _spec(extra: str = ""):
    res = load_text(SPEC % extra, "ocr.yaml")
    assert res.ok, [d.text() for d in res.diagnostics]
    return res.spec


def test_expression_by_hand():
    alerts, _ = plan(_spec())
    (a,) = [a for a in alerts if a.name == "MemoryGrowth"]
    # 6 MB/h (half the seed's 12 MB/h leak) = 6e6 / 3600 = 1666.67 bytes per second of slope (6 significant digits)
    assert a.expr == 'max(deriv(process_resident_memory_bytes{job="triton"}[6h])) > 1666.67'
    assert (a.severity, a.for_, a.windows) == ("ticket", "10m", ("6h",))
    # the window filled (360 min), the `for` (10 min), two samples of margin; 10-minute samples
    assert (a.fire.eval_min, a.fire.interval_min) == (390, 10)
    # twice the slope: 12 MB/h = 2e6 bytes per 10-minute sample
    assert a.fire.series[0][1] == "2000000000+2000000x44"


def test_no_signal_no_alert():
    text = (SPEC % "").split("  golden_signals:")[0]
    res = load_text(text, "ocr.yaml")
    assert res.ok
    assert not [a for a in plan(res.spec)[0] if a.name == "MemoryGrowth"]


@needs_promtool
def test_promtool_passes_and_a_looser_threshold_fails(tmp_path):
    # rules allowing 4x the slope miss the leak the tests feed (2x the declared slope): the tests can fail
    spec = _spec(", window: 12h, max_mb_per_hour: 12")
    loose = _spec(", window: 12h, max_mb_per_hour: 48")
    assert_tests_pass_and_catch(tmp_path, spec, loose, "ocr.yaml", "alertname: MemoryGrowth")
