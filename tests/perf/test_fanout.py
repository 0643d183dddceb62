"""A stage that fans out (line crops of a page) sees items_per_request × the request rate."""

from __future__ import annotations

from archkit.perf.capacity import stage_capacity, worker_capacities
from archkit.spec import load_text

SPEC = """\
apiVersion: archkit/v1
metadata: {name: fanout}
budgets: {p99_ms: 3000, throughput_rps: 0.5}
dataflow:
  stages:
    - id: crop
      kind: preprocess
      concurrency: 2
      p50_ms: 10
      items_per_request: {k}
    - id: recognise
      kind: model
      items_per_request: {k}
      model:
        name: rec
        device: cpu
        instances: 2
        service_time: [{batch_size: 1, compute_ms: 92}]
"""


def _spec(k):
    res = load_text(SPEC.replace("{k}", str(k)))
    assert res.ok, res.diagnostics
    return res.spec


def test_model_stage_rate_and_utilisation_scale_with_items_per_request():
    one, eight = (stage_capacity(s, s.stage("recognise")) for s in (_spec(1), _spec(8.1)))
    assert one.arrival_rps == 0.5 and eight.arrival_rps == 0.5 * 8.1
    assert abs(eight.declared.rho - 8.1 * one.declared.rho) < 1e-9


def test_worker_stage_rate_scales_with_items_per_request():
    (one,), (eight,) = worker_capacities(_spec(1)), worker_capacities(_spec(8.1))
    assert eight.arrival_rps == 0.5 * 8.1 and abs(eight.rho - 8.1 * one.rho) < 1e-9
