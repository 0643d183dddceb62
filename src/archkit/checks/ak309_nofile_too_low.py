"""AK309: the open-file limit is below the connections the throughput implies."""

import math
from collections.abc import Iterator
from typing import Any

from pydantic import Field

from archkit.checks.common import stages_by_service
from archkit.checks.registry import Context, Rule, RuleSettings, register
from archkit.diagnostics import Diagnostic

# clients of these keep a small pool of long-lived connections, whatever the request rate
POOLED = {"redis", "sql", "kafka", "queue", "inproc", "shm"}


@register
class NofileTooLow(Rule):
    """A service's `nofile` limit (default 1024) is below the sockets its share of the rate needs."""

    code = "AK309"
    name = "nofile-too-low"
    source = "seed 000 §5.6 (Triton at 1000 QPS held over 2000 connections against ulimit -n 1024)"
    rationale = """
Every connection is a file descriptor. The seed measured more than 2,000 open connections on
a Triton server at 1,000 QPS — about two sockets per request per second — against the
default limit of 1024, and requests failed. archkit estimates the need per replica as
2 × (peak or design rate) / replicas for services that run a stage reached over
per-request connections (HTTP, gRPC; not pooled Redis/SQL/Kafka clients, whose pools AK234
sizes), and compares it
with `ulimits.nofile` (1024 when unset). Set nofile: 65536.
"""

    class Settings(RuleSettings):
        default_nofile: int = Field(
            1024, ge=1, description="the open-file limit of a service without ulimits.nofile"
        )
        sockets_per_rps: float = Field(
            2.0, gt=0, description="sockets held per request per second (seed 000 §5.6: ~2,000 at 1,000 QPS)"
        )

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        settings = ctx.settings(self.Settings)
        spec = ctx.spec
        rate = max(
            x for x in (spec.budgets.throughput_rps, spec.budgets.peak_throughput_rps, 0) if x is not None
        )
        if rate <= 0:
            return
        by_svc = stages_by_service(ctx)
        inbound: dict[str, set[str]] = {}
        for e in spec.dataflow.edges:
            inbound.setdefault(e.to, set()).add(e.transport.value)
        for svc in spec.topology.services:
            stages = by_svc.get(svc.id)
            if svc.external or not stages:
                continue
            transports = set().union(*(inbound.get(s.id, {"http"}) for s in stages))
            if transports <= POOLED:
                continue
            need = math.ceil(settings.sockets_per_rps * rate / max(1, svc.replicas))
            have = svc.ulimits.get("nofile", settings.default_nofile)
            if have < need:
                at: tuple[Any, ...] = svc.spec_path + (
                    ("ulimits", "nofile") if "nofile" in svc.ulimits else ("id",)
                )
                yield ctx.at(
                    at,
                    None,
                    f"service '{svc.id}' allows {have} open files but ~{need} sockets per "
                    f"replica are implied by {rate:g} req/s over {svc.replicas} replica(s)",
                    hint="ulimits: {nofile: 65536}",
                )
