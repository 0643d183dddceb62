"""AK234: a connection pool is too small for the concurrency the design rate drives into it."""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import Field

from archkit.checks.registry import Context, Rule, RuleSettings, register
from archkit.diagnostics import Diagnostic, Severity


@register
class ConnectionPoolExhausted(Rule):
    """A pool's connections per client replica do not cover rate × hold time at the design rate."""

    code = "AK234"
    name = "connection-pool-exhausted"
    severity = Severity.WARNING
    source = "seed 004 §1 (launches answered 502 within three days: the Redis connection pool exhausted)"
    rationale = """
A pooled client lets at most `size` calls per replica hold a connection; the rest wait for
one and fail at the checkout timeout, which the seed saw as 502s when concurrency jumped. By
Little's law the connections in use per client replica average A = λ × hold (λ: the design
rate, or the peak when declared, × the share of requests that reach the target × calls per
visit / the client's replicas; hold: `hold_ms`, else the target's P99). A ≥ size is an error:
the pool is busy all the time and the queue for it grows without bound. Below that, the share
of calls that find every connection busy is Erlang C(size, A) (M/M/c); above
`Settings.max_wait_probability` (1 %) is a warning. Fix: a larger pool (and the server's
`maxclients` to match), more client replicas, or a shorter hold (pipelining, no blocking
commands). `archkit capacity` prints each pool's load and the request rate it admits.
"""

    class Settings(RuleSettings):
        max_wait_probability: float = Field(
            0.01, gt=0, lt=1, description="share of calls allowed to wait for a connection (Erlang C)"
        )

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        from archkit.perf.pools import pool_loads

        limit = ctx.settings(self.Settings).max_wait_probability
        pools = {cp.id: cp for cp in ctx.spec.connection_pools}
        for pl in pool_loads(ctx.spec):
            if pl.rate_rps <= 0 or pl.offered <= 0:
                continue
            hold = f"{pl.hold_ms:g} ms hold" + ("" if pl.hold_declared else f" ('{pl.target}' P99)")
            load = (
                f"pool '{pl.pool}' of {pl.size} connection(s) per '{pl.client}' replica: "
                f"{pl.per_replica_cps:.3g} calls/s × {hold} = {pl.offered:.3g} in use on average "
                f"at {pl.rate_rps:g} req/s"
            )
            if pl.offered >= pl.size:
                yield ctx.at(
                    pools[pl.pool],
                    "size",
                    f"{load}: exhausted (every call waits, then fails at its checkout timeout); "
                    f"it admits {pl.ceiling_rps:.3g} req/s",
                    severity=Severity.ERROR,
                    hint=f"size: {_covering(pl.offered, limit)}",
                )
            elif pl.wait_probability > limit:
                yield ctx.at(
                    pools[pl.pool],
                    "size",
                    f"{load}: {100 * pl.wait_probability:.1f} % of calls wait for a connection "
                    f"(limit {100 * limit:g} %)",
                    hint=f"size: {_covering(pl.offered, limit)}",
                )


def _covering(offered: float, limit: float) -> int:
    """The smallest pool whose Erlang C wait probability is within the limit."""
    from archkit.perf.queueing import erlang_c

    # the wait probability falls as the pool grows: double past the limit, then halve back (a
    # step at a time from the load took a fuzzed spec's `check` 8 s at ~10^4 offered connections)
    lo = max(1, int(offered) + 1)
    if erlang_c(lo, offered) <= limit:
        return lo
    hi = lo
    while erlang_c(hi, offered) > limit:
        lo, hi = hi, 2 * hi
    while hi - lo > 1:  # erlang_c(lo) > limit >= erlang_c(hi)
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if erlang_c(mid, offered) > limit else (lo, mid)
    return hi
