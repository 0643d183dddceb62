"""Connection pools (seed 004 §1): the clients a service holds to a store, cache or queue.

Two of the seed's three launches failed within three days with "GPU OOM and the Redis
connection pool exhausted" in their logs when concurrency jumped. A pooled client (redis-py's
`BlockingConnectionPool`, a JDBC pool, a Kafka producer's in-flight slots) lets at most `size`
calls hold a connection at once per client replica; a call that finds none free waits up to
`checkout_timeout_ms` and then fails. `archkit.perf.pools` sizes each pool against the
concurrency the design rate drives into it (Little's law; rule AK234); AK235 asks for a
checkout timeout shorter than the call's own; `metric` gives a saturation alert.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from archkit.spec.base import Id, Ms, Node
from archkit.spec.refs import IdOf, RefTo

__all__ = ["ConnectionPool", "PoolMetric"]


class PoolMetric(Node):
    """The gauge of connections in use (per client replica), for the pool's saturation alert."""

    metric: str = Field(
        min_length=1,
        max_length=256,
        description="connections checked out, e.g. redis_pool_connections_in_use (a gauge per replica)",
    )
    labels: dict[str, str] = Field(default_factory=dict)
    alert_ratio: Annotated[float, Field(gt=0, le=1)] = Field(
        0.9, description="alert when the busiest replica's in-use connections reach this share of `size`"
    )


class ConnectionPool(Node):
    """A pool of connections each replica of `client` holds to the stage `target` (seed 004 §1)."""

    id: Annotated[Id, IdOf("connection pool")]
    client: Annotated[Id, RefTo("service")] = Field(
        description="the service whose replicas each hold one such pool"
    )
    target: Annotated[Id, RefTo("stage")] = Field(
        description="the stage reached through it (a Redis cache, a database, a queue)"
    )
    size: Annotated[int, Field(ge=1, le=1_000_000)] = Field(
        description="connections per client replica (redis-py max_connections)"
    )
    checkout_timeout_ms: Ms | None = Field(
        None,
        description="how long a call waits for a free connection before failing (redis-py "
        "BlockingConnectionPool timeout; unset: waits without bound, AK235)",
    )
    hold_ms: Ms | None = Field(
        None,
        description="mean time one call holds a connection; unset: the target's P99 (conservative)",
    )
    calls_per_visit: Annotated[float, Field(gt=0, le=10_000)] = Field(
        1.0, description="calls through the pool per request that visits the target"
    )
    in_use: PoolMetric | None = Field(
        None, description="the in-use gauge: a `ConnectionPoolSaturated<Id>` alert is generated from it"
    )
