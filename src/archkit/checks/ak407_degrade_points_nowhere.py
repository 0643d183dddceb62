"""AK407: a degrade rule does not say what it acts on or where traffic goes."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic

NEEDS_FALLBACK = {"route", "human_review", "cache_only", "default_response"}


@register
class DegradePointsNowhere(Rule):
    """A degrade policy has no target, no fallback for an action that needs one, or falls back to itself."""

    code = "AK407"
    name = "degrade-points-nowhere"
    source = "seed 004 §2.2 (policy plane: 'OCR failure rate > 5 % → fast OCR' lives in Consul KV)"
    rationale = """
A degrade rule is condition → action on a target → where traffic goes instead. Routing,
default answers, cache-only and human review need a `fallback`; a fallback equal to the
target degrades to the thing that is failing. Undefined ids are reported by AK103.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for r in ctx.spec.policies.degrade:
            if not r.target:
                yield ctx.at(r, "action", f"degrade rule '{r.id}' ({r.action}) has no target")
            if r.action in NEEDS_FALLBACK and not r.fallback:
                yield ctx.at(r, "action", f"degrade rule '{r.id}' ({r.action}) has no fallback")
            elif r.fallback and r.fallback == r.target:
                yield ctx.at(
                    r, "fallback", f"degrade rule '{r.id}' falls back to its own target '{r.target}'"
                )
