"""The confidence-breaker alert (seed 004 §3.2): a model's mean confidence below its breaker's floor.

When a model's answers' mean confidence falls below `min_mean` (the seed's 0.7) the gateway
moves its traffic to the backup model; the alert tells the model's owners that it tripped. The
mean over the breaker's window is Σ rate(`_sum`) / Σ rate(`_count`) of the confidence histogram.
The promtool cases feed one answer a second: confidences summing to half the floor's below it
(fires) and to the midpoint between the floor and 1 (quiet).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from archkit.plans.alerts.model import Alert, Case, Series, camel, fmt_number

if TYPE_CHECKING:
    from archkit.plans.alerts.planner import Planner


def breaker_alerts(p: Planner) -> None:
    """`ConfidenceBreaker<Stage>` for each model whose breaker names its confidence metric."""
    for st in p.spec.dataflow.stages:
        br = st.model.confidence_breaker if st.model is not None else None
        if br is None or br.metric is None:
            continue
        window = f"{max(1, math.ceil(br.window_s / 60))}m"
        total, count = Series.of(br.metric + "_sum", br.labels), Series.of(br.metric + "_count", br.labels)
        query = f"sum(rate({total}[{window}])) / sum(rate({count}[{window}]))"
        minutes = p.steady(p.for_min) + math.ceil(br.window_s / 60)
        samples = minutes + 5
        low, high = br.min_mean / 2, (br.min_mean + 1) / 2
        p.add(
            Alert(
                name=p.name(f"ConfidenceBreaker{camel(st.id)}"),
                group="golden",
                expr=f"{query} < {fmt_number(br.min_mean)}",
                query=query,
                op="<",
                threshold=br.min_mean,
                windows=(window,),
                severity="ticket",
                summary=(
                    f"{p.spec.metadata.name}: {st.id}'s mean {br.output} below {fmt_number(br.min_mean)} over "
                    f"{window}: its traffic moves to {br.fallback}"
                ),
                description=(
                    "The confidence breaker tripped (seed 004 §3.2): the backup model answers. Look for "
                    "a shift in the inputs (a new camera, blurry uploads) or a changed model version."
                ),
                for_=p.for_,
                labels={},
                stage=st.id,
                service=st.service,
                fire=Case(
                    [(str(total), p.counter(60 * low, samples)), (str(count), p.counter(60, samples))],
                    minutes,
                ),
                quiet=Case(
                    [(str(total), p.counter(60 * high, samples)), (str(count), p.counter(60, samples))],
                    minutes,
                ),
                series=[br.metric + "_sum", br.metric + "_count"],
            )
        )
