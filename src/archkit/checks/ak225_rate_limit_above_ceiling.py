"""AK225: a rate limit lets through more than the pipeline can serve, so it protects nothing."""

from __future__ import annotations

import math
from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity


@register
class RateLimitAboveCeiling(Rule):
    """A global or per-client rate limit admits more requests per second than the pipeline's ceiling."""

    code = "AK225"
    name = "rate-limit-above-ceiling"
    severity = Severity.WARNING
    source = (
        "seed 000 §2.1 (Nginx smooths bursts to a constant 25 QPS in front of a 30 QPS design, so the "
        "back end is never overloaded)"
    )
    rationale = """
A rate limiter in front of a pipeline exists to keep it below its knee: requests beyond what
the back end can serve are refused at once (or smoothed) instead of joining a queue that grows
until every request times out. A limit above the pipeline's ceiling (the rate at which its
first shared processor or stage reaches 100 %, `archkit capacity`) lets that overload through.
Set the limit below the ceiling, as the seed's 25 QPS limiter sits below its 30 QPS design;
`archkit capacity SPEC --rate A:B:STEP` shows latency and shed share on both sides of it.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        from archkit.perf.resources import load_model

        rates = [
            (lim, lim.rate_rps * (lim.clients or 1) if lim.scope == "client" else lim.rate_rps)
            for lim in ctx.spec.traffic.rate_limits
            if lim.scope in ("global", "client")
        ]
        if not rates:
            return
        lm = ctx.memo("load-model", lambda: load_model(ctx.spec))
        if not math.isfinite(lm.ceiling_rps):
            return
        for lim, admits in rates:
            if admits > lm.ceiling_rps + 1e-9:
                yield ctx.at(
                    lim,
                    "rate_rps",
                    f"rate limit '{lim.id}' admits {admits:g} req/s, above the pipeline's ceiling "
                    f"{lm.ceiling_rps:.1f} req/s ({lm.bottleneck}): it does not keep the pipeline below its knee",
                    hint=f"limit to at most {lm.ceiling_rps:.1f} req/s, or add capacity to {lm.bottleneck}",
                )
