"""Distributed tracing (seed 000 §4.3): spans on every external call."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from archkit.spec.base import Fraction, Node

__all__ = ["Tracing"]


class Tracing(Node):
    """How requests are traced: seed 000 §4.3 opens an OpenTelemetry span on each call to Redis or Kafka."""

    exporter: Literal["otlp", "jaeger", "zipkin", "other"] = "otlp"
    sample_ratio: Fraction = Field(1.0, description="share of requests traced")
    external_calls: bool = Field(
        True,
        description="a span on every call to a store, cache, queue or external service, with "
        "db.statement / messaging.system (AK617)",
    )
