"""The connection-pool alert (seed 004 §1): a pool's connections nearly all in use.

Seed 004 §1's launches failed with "the Redis connection pool exhausted": once every
connection of a replica's pool is checked out, calls wait and then fail at their checkout
timeout (AK234 sizes the pool, AK235 bounds the wait). The alert watches the in-use gauge the
spec names and fires when the busiest replica holds `alert_ratio` (0.9) of `size` for the
`for` duration. The promtool cases hold the gauge at the whole pool (fires) and at half of
it (quiet).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from archkit.plans.alerts.model import Alert, Case, Series, camel, fmt_number

if TYPE_CHECKING:
    from archkit.plans.alerts.planner import Planner


def pool_alerts(p: Planner) -> None:
    """`ConnectionPoolSaturated<Pool>` for each connection pool that names its in-use gauge."""
    for cp in p.spec.connection_pools:
        m = cp.in_use
        if m is None:
            continue
        s = Series.of(m.metric, m.labels)
        query = f"max({s})"
        threshold = m.alert_ratio * cp.size
        minutes = p.steady(p.for_min)
        samples = minutes + 5
        p.add(
            Alert(
                name=p.name(f"ConnectionPoolSaturated{camel(cp.id)}"),
                group="golden",
                expr=f"{query} >= {fmt_number(threshold)}",
                query=query,
                op=">=",
                threshold=threshold,
                severity="ticket",
                summary=(
                    f"{p.spec.metadata.name}: a replica of '{cp.client}' holds {fmt_number(threshold)} or more "
                    f"of its {cp.size} '{cp.id}' connections to {cp.target}"
                ),
                description=(
                    "The connection pool is close to exhausted (seed 004 §1: 502s with the Redis pool "
                    "exhausted): calls will wait for a connection and fail at the checkout timeout. "
                    "Look for a slow target (its latency holds connections longer) or a traffic jump; "
                    "raise the pool size with the server's client limit, or add client replicas."
                ),
                for_=p.for_,
                labels={},
                stage=cp.target,
                service=cp.client,
                fire=Case([(str(s), p.gauge(cp.size, samples))], minutes),
                quiet=Case([(str(s), p.gauge(cp.size / 2, samples))], minutes),
                series=[m.metric],
            )
        )
