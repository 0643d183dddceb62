"""AK298: a decision dispatches requests to different stages without saying what share takes each."""

from __future__ import annotations

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity
from archkit.spec.model import Call, Decision


@register
class DispatchWithoutShares(Rule):
    """A dispatch decision's branches lead to different stages, but the data-flow edges into them
    carry no share of the traffic for that decision (`weight` with `decision`)."""

    code = "AK298"
    name = "dispatch-without-shares"
    severity = Severity.WARNING
    source = "seed 004 §2.1 (OCR dispatch: precise OCR 2 s or fast OCR 0.3 s by image quality)"
    rationale = """
Seed 004 §2.1's scenario flow picks the precise OCR (2 s) or the fast one (0.3 s) by the image's
quality. Which share of the requests takes each branch decides the latency mix (a P50 near 0.3 s
and a P99 near 2 s, or worse) and the GPU demand (0.8 × 0.3 s + 0.2 × 2 s per request differs
from either alone). The capacity model reads the shares from the data-flow edges into the
branches' stages: each edge names the decision (`decision`) and its share (`weight`), and edges
from one stage naming the same decision are exclusive — a request takes one of them. Without
them every branch is counted as taking every request, and a request as running both models.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        spec = ctx.spec
        for d in spec.controlflow.decisions:
            targets: list[str] = []
            for br in d.branches:
                node = spec.control_node(br.next)
                if isinstance(node, Call) and node.target not in targets:
                    targets.append(node.target)
            if len(targets) < 2:
                continue
            unshared = [
                t
                for t in targets
                if not any(
                    e.to == t and e.decision == d.id and e.weight is not None for e in spec.dataflow.edges
                )
            ]
            if unshared:
                yield ctx.at(
                    d,
                    "branches",
                    f"decision '{d.id}' dispatches to stages {', '.join(repr(t) for t in targets)} but no "
                    f"data-flow edge into {', '.join(repr(t) for t in unshared)} declares its share "
                    f"(weight, with decision: {d.id}): capacity counts each branch as taking every request",
                )
        totals: dict[tuple[str, str], float] = {}
        for e in spec.dataflow.edges:
            if e.decision is None:
                continue
            node = spec.control_node(e.decision)
            if node is None:
                continue  # a dangling id is AK103's
            if not isinstance(node, Decision):
                yield ctx.at(
                    e,
                    "decision",
                    f"edge {e.from_} -> {e.to} names '{e.decision}' as its decision, which is not one",
                )
                continue
            key = (e.from_, e.decision)
            totals[key] = totals.get(key, 0.0) + (e.weight or 0.0)
            if totals[key] > 1 + 1e-9:
                yield ctx.at(
                    e,
                    "weight",
                    f"the edges from '{e.from_}' that decision '{e.decision}' picks between share "
                    f"{totals[key]:.3g} of its traffic: exclusive branches add up to at most 1",
                )
