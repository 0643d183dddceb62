"""A controlflow call's deadline covers its own stage's visit, not the stages after it.

Found on specs/llm-rag-reference.yaml: a call with a 5 s timeout on `embed` made `archkit capacity`
fail 6.4 % of the requests at 0.1 req/s, all of them during the generation after the embedding.
The cause is in the event loop (src/archkit/perf/pipesim_loop.py): a visit's EV_TIMEOUT event is
keyed by (request, attempt) only, and a finished visit resets `attempt` to 0 for the next stage,
so the first stage's pending deadline still matches while the request is at a later stage and
ends it there. The fix: the event must also fall at the current visit's start + its stage's timeout.
"""

from __future__ import annotations

import pytest

from archkit.perf.pipesim import simulate_pipeline
from archkit.perf.resources import load_model
from archkit.spec import load_text

# `first` takes 50 ms behind a 100 ms call deadline (never late); `then` takes 200 ms after it,
# with no call and no deadline of its own. 8 cores for 1 req/s: no queueing, so every request
# takes exactly 50 + 200 = 250 ms and none fails.
TWO_STAGES = """apiVersion: archkit/v1
metadata: {name: t}
dataflow:
  stages:
    - {id: first, kind: preprocess, service: svc, cpu_ms: 50, p50_ms: 50, service_distribution: deterministic}
    - {id: then, kind: preprocess, service: svc, cpu_ms: 200, p50_ms: 200, service_distribution: deterministic}
  edges:
    - {from: first, to: then}
topology:
  node_pools: [{id: cpu, cpu_cores: 8}]
  services: [{id: svc, pool: cpu, replicas: 1, resources: {limits: {cpu_cores: 8}}}]
controlflow:
  start: call-first
  calls:
    - {id: call-first, target: first, timeout_ms: 100, next: ok, on_failure: failed}
  terminals:
    - {id: ok, outcome: success}
    - {id: failed, outcome: error, status: 503}
"""


def _spec(text: str = TWO_STAGES):
    res = load_text(text, "t.yaml")
    assert res.spec is not None, [d.text() for d in res.diagnostics]
    return res.spec


def test_a_call_deadline_its_stage_meets_is_quiet_when_the_rest_ends_within_it() -> None:
    """The control: `then` at 20 ms ends at 70 ms, before the 100 ms mark, so the bug cannot show."""
    spec = _spec(TWO_STAGES.replace("cpu_ms: 200, p50_ms: 200", "cpu_ms: 20, p50_ms: 20"))
    sim = simulate_pipeline(spec, load_model(spec), 1.0, requests=500, seed=1)
    assert (sim.failed, sim.degraded, sim.completed) == (0, 0, 500)
    assert sim.p50_ms == pytest.approx(70.0, abs=1e-6)


def test_a_call_deadline_its_stage_misses_still_ends_the_request() -> None:
    """The deadline itself works: `first` at 150 ms passes its 100 ms deadline; no fallback answers."""
    spec = _spec(TWO_STAGES.replace("cpu_ms: 50, p50_ms: 50", "cpu_ms: 150, p50_ms: 150"))
    sim = simulate_pipeline(spec, load_model(spec), 1.0, requests=500, seed=1)
    assert (sim.failed, sim.completed) == (500, 0)


@pytest.mark.parametrize("compiled", [True, False])
def test_a_call_deadline_does_not_cover_the_stages_after_its_target(compiled: bool) -> None:
    spec = _spec()
    sim = simulate_pipeline(spec, load_model(spec), 1.0, requests=500, seed=1, compiled=compiled)
    # 50 ms < 100 ms: the call never times out; the 200 ms after it are nobody's deadline
    assert (sim.failed, sim.degraded, sim.completed) == (0, 0, 500)
    assert sim.p50_ms == pytest.approx(250.0, abs=1e-6)
