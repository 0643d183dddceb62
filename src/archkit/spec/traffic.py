"""The `traffic` section: admission limits and rate limits, and what a request over them gets.

Past a service's knee, queues grow without bound unless something refuses work: a gateway's
in-flight cap (the reference service's `admission.max_inflight: 8` answers 429 beyond it), a
rate limiter in front (seed 000 §2.1: Nginx smoothing bursts to a constant 25 QPS in front of a
30 QPS design), per-model limits at the API gateway (seed 004 §3.2: face comparison 1,000 calls
a minute, liveness detection 200, because it costs three times the GPU). The performance model
(`archkit.perf.pipesim`) applies every limit here, so that past the knee it predicts bounded
latency and the share of requests shed instead of an unbounded queue.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from archkit.spec.model import Id, Node, Seconds
from archkit.spec.refs import RefTo

MAX_LIMIT = 1_000_000  # requests in flight or waiting: beyond any one service's connection limit
MAX_LIMIT_RPS = 10_000_000.0  # the spec's MAX_RPS


class Rejection(Node):
    """What a request over a limit gets back."""

    status: Literal[429, 503] = Field(
        429, description="HTTP status of the refusal: 429 Too Many Requests (RFC 6585) or 503"
    )
    retry_after_s: Seconds | None = Field(
        None, description="the Retry-After header the refusal carries, in seconds (RFC 9110 §10.2.3)"
    )


class AdmissionLimit(Node):
    """Requests a service (or one stage) admits at once, and how many more may wait to be admitted."""

    service: Annotated[Id, RefTo("service")] | None = Field(
        None,
        description="the service whose requests it counts: from the first visit to one of its stages until answered",
    )
    stage: Annotated[Id, RefTo("stage")] | None = Field(
        None, description="or one stage: calls waiting in that stage's queue (its queue length)"
    )
    max_inflight: Annotated[int, Field(ge=1, le=MAX_LIMIT)] | None = Field(
        None, description="requests admitted at once (a service's default: its `admission.max_inflight`)"
    )
    max_queue: Annotated[int, Field(ge=0, le=MAX_LIMIT)] = Field(
        0, description="requests that may wait for admission beyond max_inflight (0: refused at once)"
    )
    rejection: Rejection = Field(default_factory=Rejection)

    @model_validator(mode="after")
    def _one_target(self) -> AdmissionLimit:
        if (self.service is None) == (self.stage is None):
            raise ValueError("give exactly one of service or stage")
        return self


class RateLimit(Node):
    """A token bucket: `rate_rps` sustained, `burst` more at once (Nginx `limit_req rate= burst=`)."""

    id: Annotated[Id, Field(description="name of the limit, for findings and reports")]
    scope: Literal["global", "model", "client"] = Field(
        "global",
        description="global: every request; model: requests whose route visits `stage`; "
        "client: each of `clients` clients separately",
    )
    stage: Annotated[Id, RefTo("stage")] | None = Field(
        None, description="scope model: the model stage whose requests it limits"
    )
    clients: Annotated[int, Field(ge=1, le=MAX_LIMIT)] | None = Field(
        None, description="scope client: how many clients share the traffic evenly"
    )
    rate_rps: Annotated[float, Field(gt=0, le=MAX_LIMIT_RPS)] = Field(
        description="sustained rate in requests per second (1,000 a minute: 16.67)"
    )
    burst: Annotated[int, Field(ge=0, le=MAX_LIMIT)] = Field(
        0, description="requests beyond the rate that the bucket holds (Nginx `burst`)"
    )
    delay: bool = Field(
        False,
        description="true: requests within the burst wait for their turn, smoothing bursts to the rate "
        "(Nginx without `nodelay`); false: they pass at once and only the excess is refused",
    )
    rejection: Rejection = Field(default_factory=Rejection)

    @model_validator(mode="after")
    def _scope_fields(self) -> RateLimit:
        if self.scope == "model" and self.stage is None:
            raise ValueError("scope model needs the stage it limits")
        if self.scope != "model" and self.stage is not None:
            raise ValueError("stage is for scope model only")
        if self.scope == "client" and self.clients is None:
            raise ValueError("scope client needs clients (how many share the traffic)")
        if self.scope != "client" and self.clients is not None:
            raise ValueError("clients is for scope client only")
        return self


class Traffic(Node):
    """Admission and rate limits the performance model applies (and the rules check)."""

    admission: list[AdmissionLimit] = Field(default_factory=list, max_length=1000)
    rate_limits: list[RateLimit] = Field(default_factory=list, max_length=1000)
