"""Triton's dynamic batcher: instances that take whole requests in arrival order up to a batch.

Analytic: `archkit.perf.batching.predict` (batch fill + M/D/c queueing at the service's routing
+ the batch's service time, from the per-batch table). Simulated: a free instance takes whole
calls in arrival order up to the target batch (largest preferred size, else the maximum, in
whole calls of `items_per_call`); a batch short of it waits until the oldest call has waited
`max_queue_delay_us` or it fills; a queue holding `max_queue_size` calls refuses the next one
(Triton's `default_queue_policy.max_queue_size`). On a GPU only copy + compute occupy the GPU;
the per-batch overhead keeps the instance busy on the host (seed 000 §2.1).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from archkit.perf.service_models import (
    Demand,
    Handler,
    ServiceModel,
    StageLatency,
    Step,
    register,
)
from archkit.spec.model import Spec, Stage


def calls(k_items: int, per: int) -> tuple[int, int, int]:
    """A visit of k items sends ⌈k / items_per_call⌉ calls (the last one may be short)."""
    return (k_items + per - 1) // per, per, k_items


def take(
    head: int,
    c_next: np.ndarray,
    c_items: np.ndarray,
    c_enq: np.ndarray,
    batch: int,
    delay_s: float,
    now: float,
) -> tuple[int, int, int, float]:
    """Whole calls from the head up to `batch` items; a short batch waits for the oldest's delay."""
    c = head
    total = 0
    cnt = 0
    last = -1
    while c >= 0 and total + c_items[c] <= batch:
        total += c_items[c]
        cnt += 1
        last = c
        c = c_next[c]
    if cnt == 0:  # a call larger than the batch goes alone
        last = head
        total = c_items[last]
        cnt = 1
    if total < batch and delay_s > 0:
        deadline = c_enq[head] + delay_s
        if now < deadline:
            return -1, 0, 0, deadline
    return last, cnt, total, -1.0


def work(s: int, total: int, first: int, batch_s: np.ndarray, c_work: np.ndarray) -> float:
    """The table's processor time for a batch of `total` items (linear beyond the table)."""
    nb = batch_s.shape[1] - 1
    w: float = batch_s[s, total] if total <= nb else batch_s[s, nb] * total / nb
    return w


HANDLER = Handler(1, "batch", calls, take, work)


@register
class DynamicBatcher(ServiceModel):
    """Triton's dynamic batcher over `model.instances` instances per replica."""

    name = "triton-dynamic-batcher"
    handler = HANDLER

    @classmethod
    def applies(cls, stage: Stage) -> bool:
        # an LLM stage that also names its `model` (version, hash) is the continuous batcher's
        return stage.model is not None and stage.llm is None

    def demand(self, spec: Spec, stage: Stage) -> Demand:
        from archkit.perf.resources import busy_table_of, table_of, target_batch

        m = stage.model
        assert m is not None
        table = busy_table_of(stage)
        b = target_batch(stage)
        item_s = (table.ms(b) / b / 1000) if table is not None else (stage.p50_ms or 0.0) / 1000
        whole = table_of(stage)
        hold_s = (whole.ms(b) / b / 1000) if whole is not None else item_s
        return Demand("model", b, m.instances, item_s, hold_s, True)

    def step(self, spec: Spec, stage: Stage, common: dict[str, Any]) -> Step | None:
        from archkit.perf.resources import busy_table_of, table_of, target_batch
        from archkit.perf.service_models.worker_pool import WorkerPool

        m = stage.model
        table = table_of(stage)
        busy = busy_table_of(stage)
        if m is None or table is None or busy is None:
            return WorkerPool().step(spec, stage, common)  # no table: a delay of its P50
        b = target_batch(stage)
        bt = m.batching
        return Step(
            handler=HANDLER.slot,
            batch=b,
            delay_s=(bt.max_queue_delay_us if bt else 0) / 1e6,
            max_queue=(bt.max_queue_size or 0) if bt else 0,
            batch_s=[0.0] + [busy.ms(n) / 1000 for n in range(1, b + 1)],
            over_s=[0.0] + [max(0.0, table.ms(n) - busy.ms(n)) / 1000 for n in range(1, b + 1)],
            **common,
        )

    def predict(self, spec: Spec, stage: Stage, arrival_rps: float, replicas: int) -> StageLatency | None:
        from archkit.perf.batching import predict
        from archkit.perf.resources import table_of, target_batch

        m = stage.model
        table = table_of(stage)
        if m is None or table is None:
            return None
        svc = spec.service(stage.service) if stage.service else None
        bt = m.batching
        p = predict(
            table,
            arrival_rps,
            target_batch(stage),
            bt.max_queue_delay_us if bt else 0,
            m.instances,
            replicas,
            svc.routing if svc is not None else "random",
        )
        return StageLatency(
            arrival_rps, replicas * m.instances, p.rho, p.wait_mean_ms, p.wait_p99_ms, p.p50_ms, p.p99_ms
        )
