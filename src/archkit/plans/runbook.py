"""The runbook order: for each fault tree, its leaf checks in the order on-call walks them.

One definition for the generated runbook pages (`gen_runbooks`), the alert index's "first
check" links and `archkit runbook` (`archkit.runbook.walk.plan`). The order itself is
`archkit.faulttree.ranked_events` (importance per second of check; seed 000 §3.4:
root cause in five minutes by walking checks in order). A tree whose analysis fails keeps
its checks in document order and says why (`error`).
"""

from __future__ import annotations

from dataclasses import dataclass

from archkit.faulttree import FaultTreeAnalysis, FaultTreeError, analyse, ranked_events
from archkit.spec.model import BasicEvent, FaultTree, Spec


@dataclass(frozen=True)
class RunbookOrder:
    """One tree's checks in walking order, with the analysis they were ranked by (None if it failed)."""

    tree: FaultTree
    events: tuple[BasicEvent, ...]
    analysis: FaultTreeAnalysis | None
    error: str | None = None  # why the analysis failed; the events are then in document order

    @property
    def first(self) -> BasicEvent | None:
        return self.events[0] if self.events else None


def runbook_order(tree: FaultTree) -> RunbookOrder:
    """The walking order of one tree (pure)."""
    try:
        analysis = analyse(tree)
        return RunbookOrder(tree, tuple(ranked_events(tree, analysis)), analysis)
    except FaultTreeError as exc:
        return RunbookOrder(tree, tuple(tree.events), None, str(exc))


def runbook_orders(spec: Spec) -> dict[str, RunbookOrder]:
    """tree id -> its walking order, for every fault tree of the spec (first of a duplicated id wins)."""
    out: dict[str, RunbookOrder] = {}
    for tree in spec.faulttrees:
        out.setdefault(tree.id, runbook_order(tree))
    return out
