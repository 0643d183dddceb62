"""The degrade alert (seed 004 §3.2): a degrade rule's structured condition holds.

Seed 004 §3.2's gateway answers South-East Asian requests "retry later" once their latency is
above 1.2 s. A rule with `when` (archkit.spec.degrade_when) names the latency histogram (its
stage's bound series or a metric), the percentile, the bound, the window and the labels; the
alert is that percentile over the window above the bound, read like the stages' latency alerts
(`latency_query`). It has no `for`: the gateway degrades the moment the condition holds, and the
alert says so at the same moment. Non-histogram bindings have no percentile; AK418 flags them and
nothing is generated. The promtool cases put every observation in (v/2, v] with v = 2.2 × the
bound (the percentile is above it: fires) and v = 0.4 × the bound (quiet).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from archkit.plans.alerts.model import RATE_WINDOW, Alert, camel, fmt_number
from archkit.plans.alerts.planner import latency_query
from archkit.spec.model import MetricRef, MetricType, Spec

if TYPE_CHECKING:
    from archkit.plans.alerts.planner import Planner
    from archkit.spec.model import DegradeRule


def degrade_series(spec: Spec, rule: DegradeRule) -> MetricRef | None:
    """The histogram a rule's structured condition reads, its labels added; None when it has none."""
    w = rule.when
    if w is None:
        return None
    if w.metric is not None:
        return MetricRef(metric=w.metric, type=MetricType.histogram, labels=dict(w.labels))
    bound = next((sm.latency for sm in spec.observability.stages if sm.stage == w.stage), None)
    if bound is None or bound.type is not MetricType.histogram:
        return None
    return bound.model_copy(update={"labels": {**bound.labels, **w.labels}})


def degrade_alerts(p: Planner) -> None:
    """`Degrade<Rule>` for each degrade rule whose condition is structured."""
    for r in p.spec.policies.degrade:
        w, ref = r.when, degrade_series(p.spec, r)
        if w is None or ref is None:
            continue
        expr, kind, unit, read = latency_query(ref, w.percentile)
        expr = expr.replace(f"[{RATE_WINDOW}]", f"[{w.window}]")
        bound_s = w.above_ms / 1000
        minutes = p.steady(0) + w.window_minutes
        pct = fmt_number(w.percentile * 100)
        where = ", ".join(f"{k}={v}" for k, v in sorted(w.labels.items()))
        to = f" → {r.fallback}" if r.fallback else ""
        st = p.spec.stage(w.stage) if w.stage else None
        p.add(
            Alert(
                name=p.name(f"Degrade{camel(r.id)}"),
                group="latency",
                expr=f"{expr} > {fmt_number(bound_s)}",
                query=expr,
                threshold=bound_s,
                windows=(w.window,),
                severity="ticket",
                summary=(
                    f"{p.spec.metadata.name}: P{pct} of {w.stage or w.metric}"
                    + (f" ({where})" if where else "")
                    + f" above {fmt_number(w.above_ms)} ms over {w.window}: degrade rule {r.id} "
                    f"({r.action}{to}) is in force"
                ),
                description=(
                    f"The degrade rule's condition holds (seed 004 §3.2): {r.condition}. The gateway "
                    "degrades these requests; the stage's own latency alert says why it is slow."
                ),
                for_=None,
                labels={},
                stage=w.stage,
                service=st.service if st is not None else None,
                fire=p._latency_case(ref, kind, unit, 2.2 * bound_s, minutes),
                quiet=p._latency_case(ref, kind, unit, 0.4 * bound_s, minutes),
                series=[read],
            )
        )
