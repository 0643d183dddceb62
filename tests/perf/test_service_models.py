"""Service models as plug-ins: the registry, the built-in two, and a toy one added through it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from archkit.perf import pipesim_kernel, service_models
from archkit.perf import queueing as q
from archkit.perf.pipeline import prepare
from archkit.perf.pipesim import simulate_pipeline
from archkit.perf.resources import load_model
from archkit.perf.service_models import (
    Demand,
    Handler,
    ServiceModel,
    StageLatency,
    Step,
    model_for,
    register,
)
from archkit.perf.service_models.dynamic_batcher import DynamicBatcher
from archkit.perf.service_models.worker_pool import WorkerPool
from archkit.spec import load_file, load_text
from archkit.spec.model import Spec, Stage
from tests.conftest import ROOT

ONE_STAGE = """apiVersion: archkit/v1
metadata: {name: toy}
budgets: {throughput_rps: 5}
dataflow:
  stages:
    - {id: stamp, kind: postprocess, service: svc, p50_ms: 100, concurrency: 1,
       service_distribution: deterministic}
topology:
  node_pools: [{id: cpu, cpu_cores: 4}]
  services:
    - {id: svc, pool: cpu, replicas: 1}
"""


def test_builtin_models_cover_the_reference_spec():
    spec = load_file(ROOT / "specs" / "ocr-reference.yaml").spec
    assert spec is not None
    kinds = {st.id: type(model_for(st)) for st in spec.dataflow.stages}
    assert {st.id for st in spec.dataflow.stages if st.model is not None} == {
        sid for sid, cls in kinds.items() if cls is DynamicBatcher
    }
    assert all(cls is WorkerPool for sid, cls in kinds.items() if spec.stage(sid).model is None)  # type: ignore[union-attr]


def test_kernel_stamp_matches_the_builtin_handlers():
    """numba caches the event loop by its own file: a change to a built-in handler's body must
    change `pipesim_kernel.HANDLERS_STAMP`, or a stale compiled loop would run."""
    assert service_models.handlers_stamp() == pipesim_kernel.HANDLERS_STAMP


def test_registry_refuses_a_taken_slot_and_a_second_name():
    with pytest.raises(ValueError, match="taken"):
        service_models.register_handler(Handler(0, "other", *(lambda: None,) * 3))
    with pytest.raises(ValueError, match="twice"):

        @register
        class Again(WorkerPool):
            name = "worker-pool"


# ---------------------------------------------------------------- a toy plug-in, end to end


def _calls(k_items: int, per: int) -> tuple[int, int, int]:
    return 1, 1, 1


def _take(
    head: int,
    c_next: np.ndarray,
    c_items: np.ndarray,
    c_enq: np.ndarray,
    batch: int,
    delay_s: float,
    now: float,
) -> tuple[int, int, int, float]:
    return head, 1, 1, -1.0


def _work(s: int, total: int, first: int, batch_s: np.ndarray, c_work: np.ndarray) -> float:
    w: float = batch_s[s, 1]  # the fixed service time the model put in its table
    return w


class FixedServer(ServiceModel):
    """M/D/c: `concurrency` servers per replica, each visit exactly the stage's P50."""

    name = "toy-fixed-server"
    handler = Handler(2, "toy-fixed", _calls, _take, _work)

    @classmethod
    def applies(cls, stage: Stage) -> bool:
        return (
            stage.model is None and stage.service_distribution == "deterministic" and bool(stage.concurrency)
        )

    def demand(self, spec: Spec, stage: Stage) -> Demand:
        s = (stage.p50_ms or 0.0) / 1000
        return Demand("worker", 1, stage.concurrency, s, s, False)

    def step(self, spec: Spec, stage: Stage, common: dict[str, Any]) -> Step | None:
        s = (stage.p50_ms or 0.0) / 1000
        return Step(handler=2, batch=1, delay_s=0.0, max_queue=0, batch_s=[0.0, s], **common)

    def predict(self, spec: Spec, stage: Stage, arrival_rps: float, replicas: int) -> StageLatency | None:
        c = (stage.concurrency or 1) * replicas
        s = (stage.p50_ms or 0.0) / 1000
        w = q.mdc_wait(arrival_rps, s, c)
        return StageLatency(arrival_rps, c, q.utilisation(arrival_rps, s, c), 1000 * w, 0.0, 1000 * s, 0.0)


@pytest.fixture
def toy():
    register(FixedServer)
    try:
        yield FixedServer
    finally:
        service_models.unregister(FixedServer.name)


def test_a_toy_service_model_serves_through_the_registry(toy):
    """By hand: M/D/1 at λ = 5/s, D = 100 ms: ρ = 0.5, mean wait ρD / 2(1 − ρ) = 50 ms, so a
    visit takes 150 ms on average. The toy's own handler (slot 2) runs it in the event loop:
    its step draws no per-visit work, so the worker pool's handler would have served in 0 ms."""
    res = load_text(ONE_STAGE, "toy.yaml")
    assert res.spec is not None
    spec = res.spec
    stage = spec.dataflow.stages[0]
    assert isinstance(model_for(stage), toy)
    lm = load_model(spec)
    assert lm.stages[0].kind == "worker" and lm.ceiling_rps == pytest.approx(10.0)
    pred = model_for(stage).predict(spec, stage, 5.0, 1)
    assert pred is not None and pred.wait_mean_ms == pytest.approx(50.0)
    applied, lm = prepare(spec)
    sim = simulate_pipeline(applied, lm, 5.0, requests=20_000, seed=11, compiled=False)
    assert sim.stages[0].p50_ms >= 100.0 - 1e-9  # never faster than its fixed time
    assert sim.mean_ms == pytest.approx(150.0, rel=0.05)
    assert pipesim_kernel.bound()[2] is toy.handler


def test_without_the_toy_the_worker_pool_serves_it_again(toy):
    service_models.unregister(toy.name)
    res = load_text(ONE_STAGE, "toy.yaml")
    assert res.spec is not None
    assert isinstance(model_for(res.spec.dataflow.stages[0]), WorkerPool)
    register(toy)  # the fixture unregisters it
