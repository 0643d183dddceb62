"""AK236: a cache's hit is not faster than the lookup and the stages it skips."""

from __future__ import annotations

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity


@register
class CacheHitNotFaster(Rule):
    """A cache's `hit_p99_ms` is no lower than a miss's P99 (the lookup and the stages a hit `skips`)."""

    code = "AK236"
    name = "cache-hit-not-faster"
    severity = Severity.WARNING
    source = "seed 004 §3.3 (a repeated upload skips the GPU inference: 1200 ms → 35 ms)"
    rationale = """
Seed 004 §3.3's cache pays because a hit skips the GPU inference: a repeated upload answers in
35 ms instead of 1200 ms. A cache whose hit takes as long as a miss (its lookup plus the
stages a hit skips, summed at P99 along their heaviest chain; `archkit.perf.cache`) adds a
lookup and an invalidation problem and saves nothing: the figures are wrong, or the cache
covers the wrong stages. `archkit capacity` prints each cache's hit, miss and mixed latency
at its `hit_ratio`.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        from archkit.perf.cache import cache_mixes

        for m in cache_mixes(ctx.spec):
            if m.hit_ms < m.miss_p99_ms:
                continue
            st = ctx.spec.stage(m.stage)
            assert st is not None and st.cache is not None
            yield ctx.at(
                st.cache,
                "hit_p99_ms",
                f"stage '{m.stage}' answers a hit in {m.hit_ms:g} ms, no faster than a miss's P99 of "
                f"{m.miss_p99_ms:g} ms (the lookup and {', '.join(m.skips)}): the cache saves nothing",
            )
