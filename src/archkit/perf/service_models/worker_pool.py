"""A pool of workers: each replica's `concurrency` workers serve one visit at a time, FIFO.

Analytic: M/M/c with the stage's P50 standing in for the mean service time (Erlang C,
`archkit.perf.queueing`). Simulated: a visit's work is drawn per request (log-normal with
median `cpu_ms`, else the P50, and the spread of its P50 → P99; or exponential, or fixed, by
`service_distribution`); a free worker takes the oldest waiting visit. Without `concurrency`
every visit starts at once (a delay, or work on the shared cores when `cpu_ms` is declared).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from archkit.perf import queueing as q
from archkit.perf.service_models import (
    Demand,
    Handler,
    ServiceModel,
    StageLatency,
    Step,
    finite_ms,
    register,
)
from archkit.spec.model import Spec, Stage


def calls(k_items: int, per: int) -> tuple[int, int, int]:
    """A visit is one call of one item."""
    return 1, 1, 1


def take(
    head: int,
    c_next: np.ndarray,
    c_items: np.ndarray,
    c_enq: np.ndarray,
    batch: int,
    delay_s: float,
    now: float,
) -> tuple[int, int, int, float]:
    """The oldest waiting visit."""
    return head, 1, c_items[head], -1.0


def work(s: int, total: int, first: int, batch_s: np.ndarray, c_work: np.ndarray) -> float:
    """The visit's drawn work."""
    w: float = c_work[first]
    return w


HANDLER = Handler(0, "one", calls, take, work)


@register
class WorkerPool(ServiceModel):
    """Workers (or unbounded concurrency) that serve one visit each."""

    name = "worker-pool"
    handler = HANDLER

    @classmethod
    def applies(cls, stage: Stage) -> bool:
        return stage.model is None and stage.llm is None

    def demand(self, spec: Spec, stage: Stage) -> Demand:
        from archkit.perf.resources import service_mean_ms

        svc = spec.service(stage.service) if stage.service else None
        item_s = service_mean_ms(stage) / 1000
        on_cores = stage.cpu_ms is not None and svc is not None and not svc.external
        kind = "worker" if on_cores or stage.concurrency else "delay"
        per_replica = stage.concurrency if svc is not None else None
        return Demand(kind, 1, per_replica, item_s, item_s, stage.cpu_ms is not None)

    def step(self, spec: Spec, stage: Stage, common: dict[str, Any]) -> Step | None:
        from archkit.perf.resources import service_median_ms, service_sigma

        if service_median_ms(stage) <= 0:
            return None
        return Step(
            handler=HANDLER.slot,
            batch=1,
            delay_s=0.0,
            max_queue=0,
            p50_s=service_median_ms(stage) / 1000,
            sigma=service_sigma(stage),
            dist=stage.service_distribution,
            **common,
        )

    def predict(self, spec: Spec, stage: Stage, arrival_rps: float, replicas: int) -> StageLatency | None:
        if stage.concurrency is None or stage.p50_ms is None:
            return None
        c = stage.concurrency * replicas
        s = stage.p50_ms / 1000  # the P50 stands in for the mean service time
        rho = q.utilisation(arrival_rps, s, c)
        w = q.mmc_wait(arrival_rps, s, c)
        w99 = q.mmc_wait_quantile(arrival_rps, s, c)
        p99 = finite_ms(w99) + stage.p50_ms if math.isfinite(w99) else math.inf
        return StageLatency(arrival_rps, c, rho, finite_ms(w), finite_ms(w99), stage.p50_ms, p99)
