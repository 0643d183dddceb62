"""A degrade rule's structured condition (seed 004 §3.2): a latency percentile above a bound.

Seed 004 §3.2's gateway degrades by region: a South-East Asian request slower than 1.2 s gets
"retry later" instead of waiting for GPU inference. `policies.degrade[].when` says that as data:
the latency series (a stage's bound `observability.stages[].latency`, or a histogram named
directly), the percentile, the bound in ms, the window and the label selector (`region: sea`).
The prometheus generator compiles it into a `Degrade<Rule>` alert (archkit.plans.alerts.degrade),
the control-flow diagram draws it on its target, and AK418 checks that it names a real binding.
The free-text `condition` stays: it is what a person reads.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from archkit.spec.base import MAX_MS, Fraction, Id, Node
from archkit.spec.refs import RefTo

__all__ = ["DegradeWhen"]


class DegradeWhen(Node):
    """When a degrade rule acts: a latency percentile above `above_ms`, or a stage's failed share of
    requests above `error_ratio_above` (seed 004 §2.2: OCR failure rate > 5 %), over `window`."""

    stage: Annotated[Id, RefTo("stage")] | None = Field(
        None, description="the stage whose bound latency series (observability.stages[].latency) is read"
    )
    metric: str | None = Field(
        None, description="a latency histogram read directly (unit from its name), instead of a stage's"
    )
    percentile: Annotated[float, Field(gt=0, lt=1)] = Field(0.99, description="e.g. 0.99 for P99")
    above_ms: Annotated[float, Field(gt=0, le=MAX_MS)] | None = Field(
        None, description="the latency bound, in ms"
    )
    error_ratio_above: Fraction | None = Field(
        None, description="the bound on failed / all requests of the stage's errors and requests series"
    )
    window: str = Field("5m", pattern=r"^[1-9][0-9]{0,2}[mhd]$", description="rate window, e.g. 5m, 1d")
    labels: dict[str, str] = Field(
        default_factory=dict, description="extra label matchers, e.g. {region: sea}, added to the series'"
    )

    @property
    def window_minutes(self) -> int:
        return int(self.window[:-1]) * {"m": 1, "h": 60, "d": 1440}[self.window[-1]]
