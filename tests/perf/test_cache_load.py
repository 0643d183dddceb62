"""A cache's hits lower the load on the stages they skip (`archkit.perf.resources.reach`, seed 004 §3.3).

Hand-computed: 5 req/s reach a cache with a hit ratio of 0.6 in front of a model that takes 100 ms of
its one GPU (batch 1, one replica, one instance). A hit never runs the model, so the model sees
5 × (1 − 0.6) = 2 req/s: 0.4 × 100 = 40 GPU-ms per request, ρ = 5 × 0.040 = 0.2 (not 0.5 with every
request), and the ceiling is 1000 / 40 = 25 req/s (not 10). The stage after the model still runs on
a hit (it takes the cached result). In the simulation a hit costs the lookup alone (1 ms, deterministic):
60 % of the requests take 1 ms, so the end-to-end P50 is the lookup's 1 ms (+ the 1 ms reply).
"""

from __future__ import annotations

import pytest

from archkit.perf.capacity import model_capacities
from archkit.perf.pipeline import predict
from archkit.perf.pipesim import compile_steps
from archkit.perf.pipesim_routes import enumerate_routes
from archkit.perf.resources import load_model, reach
from archkit.spec import load_text

SPEC = """\
apiVersion: archkit/v1
metadata: {{name: cached-model}}
budgets: {{throughput_rps: 5}}
dataflow:
  stages:
    - {{id: lookup, kind: cache, p50_ms: 1, service_distribution: deterministic, cache: {{key: sha256(image), hit_p99_ms: 1{cache}}}}}
    - id: ocr
      kind: model
      service: ocr
      model:
        name: ocr
        batching: {{max_batch_size: 1}}
        service_time: [{{batch_size: 1, compute_ms: 100}}]
    - {{id: reply, kind: postprocess, p50_ms: 1, service_distribution: deterministic}}
  edges:
    - {{from: lookup, to: ocr, condition: cache miss}}
    - {{from: ocr, to: reply}}
topology:
  node_pools: [{{id: gpu, gpu: {{model: L4, count: 1, memory_gb: 24}}}}]
  services:
    - {{id: ocr, pool: gpu, replicas: 1, resources: {{limits: {{gpu: 1}}, requests: {{gpu: 1}}}}}}
"""

CACHED = ", hit_ratio: 0.6, skips: [ocr]"


def _spec(cache: str = CACHED):
    res = load_text(SPEC.format(cache=cache), "cache.yaml")
    assert res.spec is not None, [d.text() for d in res.diagnostics]
    return res.spec


def test_hits_lower_the_skipped_stage_load_utilisation_and_ceiling_by_hand():
    spec = _spec()
    assert reach(spec) == pytest.approx({"lookup": 1.0, "ocr": 0.4, "reply": 1.0})
    pred = predict(spec, requests=2000)
    (gpu,) = pred.resources
    assert gpu.demand_ms_per_request == pytest.approx(40.0)
    assert gpu.utilisation == pytest.approx(0.2)
    assert pred.knee_rps == pytest.approx(25.0)
    ocr = pred.stage("ocr")
    assert ocr is not None and ocr.arrival_rps == pytest.approx(2.0)
    assert ocr.utilisation == pytest.approx(0.2) and ocr.ceiling_rps == pytest.approx(25.0)
    (cap,) = model_capacities(spec)
    assert cap.arrival_rps == pytest.approx(2.0)


def test_without_a_hit_ratio_every_request_runs_the_model():
    spec = _spec(", skips: [ocr]")
    assert reach(spec) == {"lookup": 1.0, "ocr": 1.0, "reply": 1.0}
    pred = predict(spec, requests=500)
    assert pred.resources[0].utilisation == pytest.approx(0.5) and pred.knee_rps == pytest.approx(10.0)


def test_the_simulation_routes_hits_past_the_skipped_stage():
    spec = _spec()
    steps, _, _ = compile_steps(spec, load_model(spec))
    routes, probs = enumerate_routes(spec, steps)
    assert routes == [["lookup", "reply"], ["lookup", "ocr", "reply"]]
    assert probs == pytest.approx([0.6, 0.4])
    pred = predict(spec, requests=4000)
    ocr = next(s for s in pred.stages if s.stage == "ocr")
    assert ocr.p50_ms is not None and ocr.p50_ms >= 100  # the model's own time when it runs
    # 60 % of the requests are hits of 1 + 1 ms; the P99 is a miss (lookup + model + reply)
    assert pred.p50_ms == pytest.approx(2.0, abs=1e-6)
    assert pred.p99_ms >= 102


def test_a_cache_that_sees_half_the_requests_spares_only_the_overlap():
    # the cache behind a 0.5 edge, the model fed by the source directly: the overlap is the smaller
    # share (0.5), so the model runs for 1 − 0.6 × 0.5 = 0.7 of the requests
    text = """\
apiVersion: archkit/v1
metadata: {name: t}
dataflow:
  stages:
    - {id: front, kind: preprocess, p50_ms: 1}
    - {id: lookup, kind: cache, p50_ms: 1, cache: {key: k, hit_p99_ms: 1, hit_ratio: 0.6, skips: [ocr]}}
    - {id: ocr, kind: preprocess, p50_ms: 100}
  edges:
    - {from: front, to: lookup, weight: 0.5}
    - {from: front, to: ocr}
"""
    res = load_text(text, "t.yaml")
    assert res.spec is not None
    assert reach(res.spec) == pytest.approx({"front": 1.0, "lookup": 0.5, "ocr": 0.7})
