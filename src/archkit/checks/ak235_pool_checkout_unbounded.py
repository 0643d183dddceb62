"""AK235: a connection pool's checkout wait is unbounded or outlasts the call it serves."""

from __future__ import annotations

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity


@register
class PoolCheckoutUnbounded(Rule):
    """A pool without `checkout_timeout_ms`, or with one no shorter than the timeout of the calls through it."""

    code = "AK235"
    name = "pool-checkout-unbounded"
    severity = Severity.WARNING
    source = "seed 004 §1 (launches answered 502 within three days: the Redis connection pool exhausted)"
    rationale = """
When a pool is exhausted (AK234), what the caller sees depends on how long a call waits for a
connection. A blocking pool with no checkout timeout (redis-py's `BlockingConnectionPool`
with `timeout=None`) holds the request until the caller above gives up: the seed's 502s,
with the request's worker tied up meanwhile. A checkout timeout no shorter than the timeout
of the control-flow calls to the pool's target (or the target stage's own `timeout_ms`)
never fires first, so the fallback those calls declare is reached only by their timeout.
Set `checkout_timeout_ms` below the call's timeout, so that an exhausted pool fails fast
into the call's `on_failure` path.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        spec = ctx.spec
        for cp in spec.connection_pools:
            st = spec.stage(cp.target)
            bounds = [
                (c.timeout_ms, f"call '{c.id}'")
                for c in spec.controlflow.calls
                if c.target == cp.target and c.timeout_ms is not None
            ]
            if st is not None and st.timeout_ms is not None:
                bounds.append((st.timeout_ms, f"stage '{st.id}'"))
            if cp.checkout_timeout_ms is None:
                yield ctx.at(
                    cp,
                    "id",
                    f"pool '{cp.id}' has no checkout_timeout_ms: once its {cp.size} connection(s) are "
                    "busy a call waits for one without bound",
                    hint="checkout_timeout_ms: a few times the target's P99, below the call's timeout",
                )
                continue
            if not bounds:
                continue
            limit, who = min(bounds)
            if cp.checkout_timeout_ms >= limit:
                yield ctx.at(
                    cp,
                    "checkout_timeout_ms",
                    f"pool '{cp.id}' waits {cp.checkout_timeout_ms:g} ms for a connection, not less than "
                    f"the timeout of {who} ({limit:g} ms): an exhausted pool never fails first",
                )
