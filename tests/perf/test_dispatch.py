"""A decision that dispatches between two stages (seed 004 §2.1: precise OCR 2 s or fast OCR 0.3 s by
image quality): its branch shares reach the demand model and the simulated latency mix.

Hand-computed: 80 % of requests run the fast model (300 ms of the one GPU), 20 % the precise one
(2000 ms): 0.8 × 300 + 0.2 × 2000 = 640 GPU-ms per request, a ceiling of 1000 / 640 = 1.5625 req/s.
At a rate far below it requests rarely overlap, so latency is the mix itself: P50 = gate 1 ms + 300 ms,
P99 = 1 + 2000 ms (the slowest 20 % are all precise), mean 0.8 × 301 + 0.2 × 2001 = 641 ms.
"""

from __future__ import annotations

import math

import pytest

from archkit.perf.pipeline import predict
from archkit.perf.pipesim import compile_steps, simulate_pipeline
from archkit.perf.pipesim_routes import enumerate_routes
from archkit.perf.resources import load_model, reach
from archkit.spec import load_text

SPEC = """\
apiVersion: archkit/v1
metadata: {name: ocr-dispatch}
budgets: {throughput_rps: 1}
dataflow:
  stages:
    - {id: gate, kind: preprocess, p50_ms: 1, service_distribution: deterministic}
    - id: fast
      kind: model
      service: ocr
      model:
        name: ocr-fast
        batching: {max_batch_size: 1}
        service_time: [{batch_size: 1, compute_ms: 300}]
    - id: precise
      kind: model
      service: ocr
      model:
        name: ocr-precise
        batching: {max_batch_size: 1}
        service_time: [{batch_size: 1, compute_ms: 2000}]
  edges:
    - {from: gate, to: fast, condition: "quality >= 0.7", weight: 0.8, decision: pick}
    - {from: gate, to: precise, condition: "quality < 0.7", weight: 0.2, decision: pick}
controlflow:
  start: pick
  decisions:
    - {id: pick, criterion: "quality score >= 0.7", source: gate, branches: [{when: fast, next: call-fast}, {when: precise, next: call-precise}]}
  calls:
    - {id: call-fast, target: fast, next: done}
    - {id: call-precise, target: precise, next: done}
  terminals:
    - {id: done, outcome: success}
topology:
  node_pools: [{id: gpu, gpu: {model: L4, count: 1, memory_gb: 24}}]
  services:
    - {id: ocr, pool: gpu, replicas: 1, resources: {limits: {gpu: 1}, requests: {gpu: 1}}}
"""


def _spec(text: str = SPEC):
    res = load_text(text, "dispatch.yaml")
    assert res.spec is not None, [d.text() for d in res.diagnostics]
    return res.spec


def test_branch_shares_set_each_stage_reach_and_the_gpu_demand():
    spec = _spec()
    assert reach(spec) == {"gate": 1.0, "fast": 0.8, "precise": 0.2}
    pred = predict(spec, requests=2000)
    (gpu,) = pred.resources
    assert gpu.id == "ocr:gpu" and gpu.stages == ("fast", "precise")
    assert gpu.demand_ms_per_request == pytest.approx(640.0, abs=1e-9)
    assert pred.knee_rps == pytest.approx(1000 / 640, abs=1e-12) and pred.bottleneck == "resource ocr:gpu"


def test_exclusive_branches_route_each_request_through_one_model():
    spec = _spec()
    steps, _, _ = compile_steps(spec, load_model(spec))
    routes, probs = enumerate_routes(spec, steps)
    assert routes == [["gate", "fast"], ["gate", "precise"]]
    assert probs == pytest.approx([0.8, 0.2], abs=1e-12)
    # the same weights without the decision are independent edges: a request may run both
    # models (0.8 × 0.2) or neither (0.2 × 0.8), which is not what a dispatch does
    independent = _spec(SPEC.replace(", decision: pick}", "}"))
    routes, probs = enumerate_routes(independent, steps)
    assert dict(zip(map(tuple, routes), probs, strict=True)) == pytest.approx(
        {
            ("gate", "fast"): 0.64,
            ("gate", "precise", "fast"): 0.16,
            ("gate",): 0.16,
            ("gate", "precise"): 0.04,
        },
        abs=1e-12,
    )


def test_the_simulated_latency_is_the_branch_mix():
    spec = _spec()
    n = 4000
    sim = simulate_pipeline(spec, load_model(spec), 0.002, requests=n)
    assert sim.stable and sim.completed == n
    assert sim.p50_ms == pytest.approx(301.0, abs=0.01)
    assert sim.p99_ms == pytest.approx(2001.0, abs=0.01)
    # the mean moves with the drawn share of precise requests: 3 standard errors of a binomial share
    se = math.sqrt(0.2 * 0.8 / n) * (2001 - 301)
    assert sim.mean_ms == pytest.approx(641.0, abs=3 * se)
