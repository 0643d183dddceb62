"""AK115: a cache, or any stage once owners are named, has no owner."""

from __future__ import annotations

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity
from archkit.spec.model import Spec, Stage, StageKind


def owner_of(spec: Spec, st: Stage) -> str | None:
    """The stage's own owner, else its service's."""
    if st.owner:
        return st.owner
    svc = spec.service(st.service) if st.service else None
    return svc.owner if svc is not None else None


@register
class StageWithoutOwner(Rule):
    """A cache stage has no owner, or owners are named for some stages and not for this one."""

    code = "AK115"
    name = "stage-without-owner"
    severity = Severity.WARNING
    source = "seed 004 §1 (algorithm and back-end engineers argued over who owns the cache strategy)"
    rationale = """
Seed 004 §1 names, among the reasons AI services fail in production, teams where the
algorithm and back-end engineers argue over who is responsible for the caching strategy.
A cache sits between the model's owners and the service's: give it an `owner` (on the
stage, or on the service that runs it). Once a spec names owners for some stages or
services, a stage left without one (neither its own nor its service's) is the gap nobody
is paged for; the owner is the stage's `owner`, else its service's `owner`.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        spec = ctx.spec
        stages = spec.dataflow.stages
        named = any(s.owner for s in stages) or any(s.owner for s in spec.topology.services)
        for st in stages:
            if owner_of(spec, st):
                continue
            if st.kind == StageKind.cache or st.cache is not None:
                yield ctx.at(
                    st,
                    "id",
                    f"cache stage '{st.id}' has no owner (stage or service owner): seed 004 §1's teams "
                    "argued over who owns the cache",
                )
            elif named:
                yield ctx.at(
                    st,
                    "id",
                    f"stage '{st.id}' has no owner while others do (set its owner or its service's)",
                )
