"""AK320: the admitted requests' worst-case memory does not fit the container's memory limit."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic


@register
class InflightMemoryOverLimit(Rule):
    """`base + min(max_inflight × request memory, memory budget)` exceeds `limits.memory_mib`."""

    code = "AK320"
    name = "inflight-memory-over-limit"
    source = (
        "seed 000 §2.3 and §3.3 (a process killed for memory takes its node's work with it); "
        "measured on the reference gateway: eight 16-megapixel pages took it from 303 MB to 1.4 GB"
    )
    rationale = """
An in-flight limit protects latency, not memory: if every admitted request may hold its worst
case at once (a decoded page at the pixel cap, a long audio buffer), the limit times that
worst case plus the idle footprint must fit the container's memory limit, or the kernel's
OOM killer ends the process under exactly the load the limit was meant to absorb. Declare
`admission` on the service (max_inflight, request_memory_mib, base_memory_mib and, when the
service caps request memory itself, memory_budget_mib); archkit compares
`base + min(max_inflight × request_memory_mib, memory_budget_mib)` with `limits.memory_mib`.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for svc in ctx.spec.topology.services:
            adm = svc.admission
            limit = svc.resources.limits.memory_mib
            if adm is None or not limit:
                continue
            held = adm.max_inflight * adm.request_memory_mib
            capped = "" if adm.memory_budget_mib is None else f", capped at {adm.memory_budget_mib:g} MiB"
            if adm.memory_budget_mib is not None:
                held = min(held, adm.memory_budget_mib)
            worst = adm.base_memory_mib + held
            if worst > limit:
                yield ctx.at(
                    svc.spec_path + ("admission",),
                    "max_inflight",
                    f"service '{svc.id}' may hold {worst:g} MiB ({adm.base_memory_mib:g} idle + "
                    f"{adm.max_inflight} × {adm.request_memory_mib:g} MiB per request{capped}) "
                    f"but its memory limit is {limit:g} MiB",
                    hint="lower max_inflight, bound request memory (a decode budget), or raise limits.memory_mib",
                )
