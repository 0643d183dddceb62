"""An LLM engine's continuous batcher (a `kind: llm` stage): co-simulated in the whole pipeline.

Iteration-level batching does not fit the event loop's handlers (a free server takes whole calls
and holds them for one service time): sequences join and leave a running batch every iteration,
and a visit's time depends on every other sequence in the KV cache. So the stage is co-simulated
(`ServiceModel.visits`): the pipeline runs once with the stage instantaneous, which gives the time
each visit reaches it; the LLM simulation (`archkit.perf.llm.sim`, one engine per replica behind a
random load balancer, prompt and output lengths drawn from the stage's `llm.workload`) turns those
arrivals into each visit's end-to-end time and TTFT; the pipeline runs again with those times as the
visits' work, so the stages after it see when each answer really leaves, and the TTFT plus the time
before the stage is the user's TTFT (`pipesim.FirstToken`). The stage holds no shared
processor of the pipeline's (its GPUs are its own), and it has no closed-form latency here: the
LLM section of `archkit capacity` (`archkit.perf.llm.analysis`) is its analytic view.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from archkit.perf.service_models import Demand, ServiceModel, StageLatency, Step, Visits, register
from archkit.perf.service_models.worker_pool import HANDLER, WorkerPool
from archkit.spec.model import Spec, Stage


@register
class ContinuousBatcher(ServiceModel):
    """vLLM-style continuous batching of an LLM stage, by the LLM simulation."""

    name = "continuous-batcher"
    handler = HANDLER  # each visit is one call whose work is the co-simulated latency

    @classmethod
    def applies(cls, stage: Stage) -> bool:
        return stage.llm is not None

    def demand(self, spec: Spec, stage: Stage) -> Demand:
        # as a worker-pool stage: the demand model has no GPU-time per item for an LLM stage
        return WorkerPool().demand(spec, stage)

    def step(self, spec: Spec, stage: Stage, common: dict[str, Any]) -> Step | None:
        from archkit.perf.llm.analysis import device_of

        if device_of(spec, stage) is None:
            return None  # no device to size it on (AK701 says so): nothing to simulate
        return Step(
            handler=HANDLER.slot,
            batch=1,
            delay_s=0.0,
            max_queue=0,
            p50_s=0.0,
            dist="deterministic",
            cosim=True,
            **{**common, "servers": 0, "resource": -1},  # its engine queues; no pipeline processor
        )

    def predict(self, spec: Spec, stage: Stage, arrival_rps: float, replicas: int) -> StageLatency | None:
        return None

    def visits(
        self, spec: Spec, stage: Stage, arrival_s: np.ndarray, seed: int, max_work: int | None = None
    ) -> Visits | None:
        from archkit.perf.llm import sim
        from archkit.perf.llm.analysis import WORK_PER_EVENT, device_of
        from archkit.perf.llm.model import replica

        llm, dev = stage.llm, device_of(spec, stage)
        if llm is None or dev is None:
            return None
        svc = spec.service(stage.service) if stage.service else None
        replicas = llm.parallelism.replicas or (svc.replicas if svc and svc.replicas else 1)
        order = np.argsort(arrival_s, kind="stable")
        req = sim.for_arrivals(llm.workload, np.asarray(arrival_s, dtype=np.float64)[order], seed=seed)
        # the engines' work in the pipeline's budget: WORK_PER_EVENT of their units to an event (no
        # budget given: one run's RUN_WORK, as the engines had before the pipeline's budget counted them)
        units = sim.RUN_WORK if max_work is None else max(max_work, 0) * WORK_PER_EVENT
        got = sim.per_request(replica(llm, dev), req, replicas, seed=seed, max_work=units)
        latency, first, answered = (
            np.empty(len(order)),
            np.empty(len(order)),
            np.empty(len(order), dtype=bool),
        )
        latency[order], first[order], answered[order] = got.e2e_s, got.ttft_s, got.answered
        cut = None
        if got.cut:
            cut = (
                f"stage {stage.id!r}'s LLM engines: {got.cut:,} of the {got.replicas:,} replicas that drew a "
                f"visit stopped or never ran, {int((~answered).sum()):,} of {len(order):,} visits unanswered"
            )
        work = -(-got.work // WORK_PER_EVENT)
        return Visits(latency, first, work, None if answered.all() else answered, cut)
