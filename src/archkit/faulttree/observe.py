"""What a walk of a fault tree's checks has established, and what to check next.

After some checks ran, each observed event is known to have failed (true) or to be healthy
(false). A minimal cut set whose events have all failed explains the top event; one with a
single event left unobserved is "one event short"; one with a healthy event is ruled out.
The remaining checks are ranked again on the tree conditioned on the observations (observed
events get probability 1 or 0): diagnosis importance P(e | top, observations) per second of
check, as `ranked_events` does before the walk.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from archkit.faulttree import DEFAULT_CHECK_COST_S, FaultTreeAnalysis, analyse
from archkit.spec.model import FaultTree

__all__ = ["Observation", "observe"]


@dataclass
class Observation:
    """Observed events, the cut sets they complete or nearly complete, and the next checks."""

    failed: list[str]
    healthy: list[str]
    complete: list[list[str]] = field(default_factory=list)  # cut sets fully observed failed
    one_short: list[dict[str, Any]] = field(default_factory=list)  # {"cut_set", "missing"}
    ruled_out: int = 0
    remaining: int = 0  # cut sets neither complete nor ruled out
    probability: float | None = None  # P(top | observations)
    next_checks: list[str] = field(default_factory=list)
    note: str | None = None

    @property
    def explained(self) -> bool:
        return bool(self.complete)

    def to_dict(self) -> dict[str, Any]:
        return {
            "failed": self.failed,
            "healthy": self.healthy,
            "complete_cut_sets": self.complete,
            "one_event_short": self.one_short,
            "ruled_out_cut_sets": self.ruled_out,
            "remaining_cut_sets": self.remaining,
            "probability_given_observations": self.probability,
            "next_checks": self.next_checks,
            "note": self.note,
        }


def observe(
    tree: FaultTree, observed: dict[str, bool], analysis: FaultTreeAnalysis | None = None
) -> Observation:
    """The walk's findings so far; `observed` maps event id -> failed (True) or healthy (False)."""
    a = analysis or analyse(tree)
    failed = {e for e, v in observed.items() if v}
    healthy = {e for e, v in observed.items() if not v}
    obs = Observation(sorted(failed), sorted(healthy))
    shortest: dict[str, int] = {}
    for cs in a.cut_sets:
        if cs & healthy:
            obs.ruled_out += 1
            continue
        left = cs - failed
        if not left:
            obs.complete.append(sorted(cs))
            continue
        obs.remaining += 1
        if len(left) == 1:
            obs.one_short.append({"cut_set": sorted(cs), "missing": next(iter(left))})
        for e in left:
            shortest[e] = min(shortest.get(e, len(left)), len(left))
    if not a.cut_sets_listed_all:
        obs.note = "not every cut set was listed (a limit or cut-off): the counts cover the listed ones"
    unobserved = [e for e in tree.events if e.id not in observed]
    pos = {e.id: i for i, e in enumerate(tree.events)}
    fv: dict[str, float] = {}
    if a.probability is not None:
        cond = tree.model_copy(deep=True)
        for ev in cond.events:
            if ev.id in observed:
                ev.probability = 1.0 if observed[ev.id] else 0.0
                ev.rate_per_hour = None
        ca = analyse(cond, cut_sets=False)
        obs.probability = ca.probability
        fv = ca.fussell_vesely
        if ca.probability == 0:
            obs.note = "the observations rule out every cut set: this tree does not explain the failure"

    def key(e: Any) -> tuple[Any, ...]:
        cost = e.cost_s if e.cost_s is not None else DEFAULT_CHECK_COST_S
        near = shortest.get(e.id, 10**9)
        if fv and obs.probability:
            score = fv.get(e.id, 0.0) / cost if cost > 0 else float("inf")
            return (e.id not in shortest, -round(score, 12), near, pos[e.id])
        return (e.id not in shortest, near, cost, pos[e.id])

    obs.next_checks = [e.id for e in sorted(unobserved, key=key)]
    return obs
