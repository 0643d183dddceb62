"""AK112: a request rate of zero where the spec states a design rate."""

from collections.abc import Iterator
from functools import cache

from archkit.checks.common import all_nodes
from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic
from archkit.spec.model import Node


@cache
def _rate_fields(cls: type[Node]) -> tuple[str, ...]:
    return tuple(k for k in cls.model_fields if k.endswith("_rps"))


@register
class RateNotPositive(Rule):
    """A `*_rps` rate is 0: every capacity and queueing check on it passes vacuously."""

    code = "AK112"
    name = "rate-not-positive"
    source = "seed 000 §2.1 (capacity is judged at the design rate: 30 QPS under a 50 ms P99)"
    rationale = """
Utilisation, queue wait and batch fill are all computed at the stated request rate. A rate of
0 requests/s makes every stage idle, so no capacity or latency finding can ever appear: the
spec looks healthy because it describes no traffic. Give the real design rate, or leave the
key out when it is not known.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for node in all_nodes(ctx):
            for key in _rate_fields(type(node)):
                if getattr(node, key) == 0:
                    yield ctx.at(
                        node,
                        key,
                        f"{key} is 0: no traffic, so no capacity or latency check can fail",
                        hint="give the design rate in requests per second, or drop the key",
                    )
