"""AK617: calls to stores, caches, queues or external services carry no tracing spans."""

from __future__ import annotations

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity
from archkit.spec.model import StageKind

_CALLED = {StageKind.store, StageKind.cache, StageKind.queue, StageKind.external}


@register
class ExternalCallsUntraced(Rule):
    """The data flow calls stores, caches, queues or external services and `tracing` declares no spans on them."""

    code = "AK617"
    name = "external-calls-untraced"
    severity = Severity.WARNING
    source = (
        "seed 000 §4.3 (an OpenTelemetry span on every external call, with db.statement and messaging.system)"
    )
    rationale = """
Seed 000 §4.3 makes three instrumentation points mandatory; the third is an OpenTelemetry
span around every external call (Redis, Kafka) labelled with `db.statement` and
`messaging.system`. Latency histograms say that a request was slow; only a span says which
call made it so. A spec whose data flow calls stores, caches, queues or external services
(stage kinds `store`, `cache`, `queue`, `external`, or stages of an `external` service; a
cache with `backend: memory` lives inside its caller and is not a call) declares `tracing`
with `external_calls: true`.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        spec = ctx.spec
        called = []
        for st in spec.dataflow.stages:
            svc = spec.service(st.service) if st.service else None
            in_process = st.cache is not None and st.cache.backend == "memory"  # an LRU inside the caller
            if (st.kind in _CALLED and not in_process) or (svc is not None and svc.external):
                called.append(st.id)
        if not called:
            return
        names = ", ".join(called[:4]) + (f" and {len(called) - 4} more" if len(called) > 4 else "")
        if spec.tracing is None:
            yield ctx.at(
                spec.dataflow,
                None,
                f"calls to {names} carry no tracing spans: declare tracing (seed 000 §4.3)",
            )
        elif not spec.tracing.external_calls:
            yield ctx.at(
                spec.tracing,
                "external_calls",
                f"tracing leaves the calls to {names} without spans (seed 000 §4.3)",
            )
