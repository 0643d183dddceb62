"""AK218: a P50 above its P95 or P99 (or a P95 above its P99) on the same object."""

from collections.abc import Iterator

from archkit.checks.common import all_nodes, fields_of
from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic

KEYS = ("p50_ms", "p95_ms", "p99_ms")


@register
class PercentilesOutOfOrder(Rule):
    """P50 ≤ P95 ≤ P99 does not hold: a percentile budget above a higher percentile's."""

    code = "AK218"
    name = "percentiles-out-of-order"
    source = (
        "seed 000 §2.1 (P50/P99 budgets per stage and end to end); a distribution's 50th percentile "
        "is never above its 99th"
    )
    rationale = """
A latency distribution's 50th percentile cannot exceed its 95th or 99th. A budget (end to end,
per stage, per environment or per load-test threshold) that says otherwise is a typo — often
two values swapped — and every check, alert and load-test verdict built on it is meaningless.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for node in all_nodes(ctx):
            keys = fields_of(type(node), KEYS)
            if not keys:
                continue
            given = [(k, getattr(node, k)) for k in keys]
            given = [(k, v) for k, v in given if isinstance(v, (int, float))]
            for (lo_key, lo), (hi_key, hi) in zip(given, given[1:], strict=False):
                if lo > hi:
                    yield ctx.at(
                        node,
                        lo_key,
                        f"{lo_key} {lo:g} ms is above {hi_key} {hi:g} ms",
                        hint=f"a lower percentile cannot exceed a higher one: swap them or fix {lo_key}",
                    )
