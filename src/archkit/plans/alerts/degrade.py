"""The degrade alert (seed 004 §3.2): a degrade rule's structured condition holds.

Seed 004 §3.2's gateway answers South-East Asian requests "retry later" once their latency is
above 1.2 s. A rule with `when` (archkit.spec.degrade_when) names the latency histogram (its
stage's bound series or a metric), the percentile, the bound, the window and the labels; the
alert is that percentile over the window above the bound, read like the stages' latency alerts
(`latency_query`). An error condition (`error_ratio_above`, seed 004 §2.2's "OCR failure rate
> 5 %") is the stage's failed / all requests over the window, read like its failure-rate alert. It has no `for`: the gateway degrades the moment the condition holds, and the
alert says so at the same moment. Non-histogram bindings have no percentile; AK418 flags them and
nothing is generated. The promtool cases put every observation in (v/2, v] with v = 2.2 × the
bound (the percentile is above it: fires) and v = 0.4 × the bound (quiet); for an error ratio f,
(1 + f) / 2 of the requests fail (fires) and f / 2 (quiet).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from archkit.plans.alerts.model import (
    RATE_WINDOW,
    Alert,
    Case,
    Series,
    camel,
    counts_successes_only,
    fmt_number,
)
from archkit.plans.alerts.planner import latency_query, ratio_expr
from archkit.spec.model import MetricRef, MetricType, Spec

if TYPE_CHECKING:
    from archkit.plans.alerts.planner import Planner
    from archkit.spec.model import DegradeRule


def degrade_series(spec: Spec, rule: DegradeRule) -> MetricRef | None:
    """The histogram a rule's structured condition reads, its labels added; None when it has none."""
    w = rule.when
    if w is None or w.above_ms is None:
        return None
    if w.metric is not None:
        return MetricRef(metric=w.metric, type=MetricType.histogram, labels=dict(w.labels))
    bound = next((sm.latency for sm in spec.observability.stages if sm.stage == w.stage), None)
    if bound is None or bound.type is not MetricType.histogram:
        return None
    return bound.model_copy(update={"labels": {**bound.labels, **w.labels}})


def _error_condition(p: Planner, r: DegradeRule) -> tuple[str, float, Case | None, Case, list[str]] | None:
    """(ratio query, bound, firing case, quiet case, series) of an error condition on a stage's bindings."""
    w = r.when
    if w is None or w.error_ratio_above is None or w.stage is None:
        return None
    sm = next((m for m in p.spec.observability.stages if m.stage == w.stage), None)
    if sm is None or sm.errors is None or sm.requests is None:
        return None
    e = Series.of(sm.errors.metric, {**sm.errors.labels, **w.labels})
    q = Series.of(sm.requests.metric, {**sm.requests.labels, **w.labels})
    ok_only = counts_successes_only(sm.requests.metric)
    query = ratio_expr(e, q, w.window, ok_only)
    f, minutes = w.error_ratio_above, p.steady(0) + w.window_minutes
    fire = p.ratio_case(e, q, ok_only, (1 + f) / 2, minutes) if f < 1 else None
    return (
        query,
        f,
        fire,
        p.ratio_case(e, q, ok_only, f / 2, minutes),
        [sm.errors.metric, sm.requests.metric],
    )


def degrade_alerts(p: Planner) -> None:
    """`Degrade<Rule>` for each degrade rule whose condition is structured."""
    for r in p.spec.policies.degrade:
        w = r.when
        if w is None:
            continue
        ref, errors = degrade_series(p.spec, r), _error_condition(p, r)
        if ref is not None and w.above_ms is not None:
            expr, kind, unit, read = latency_query(ref, w.percentile)
            expr = expr.replace(f"[{RATE_WINDOW}]", f"[{w.window}]")
            threshold = w.above_ms / 1000
            minutes = p.steady(0) + w.window_minutes
            fire: Case | None = p.latency_case(ref, kind, unit, 2.2 * threshold, minutes)
            quiet = p.latency_case(ref, kind, unit, 0.4 * threshold, minutes)
            series = [read]
            what = f"P{fmt_number(w.percentile * 100)} of {w.stage or w.metric}"
            bound = f"{fmt_number(w.above_ms)} ms"
        elif errors is not None:
            expr, threshold, fire, quiet, series = errors
            what, bound = f"failure ratio of {w.stage}", f"{fmt_number(threshold * 100)} %"
        else:
            continue
        where = ", ".join(f"{k}={v}" for k, v in sorted(w.labels.items()))
        to = f" → {r.fallback}" if r.fallback else ""
        st = p.spec.stage(w.stage) if w.stage else None
        p.add(
            Alert(
                name=p.name(f"Degrade{camel(r.id)}"),
                group="latency" if errors is None else "errors",
                expr=f"{expr} > {fmt_number(threshold)}",
                query=expr,
                threshold=threshold,
                windows=(w.window,),
                severity="ticket",
                summary=(
                    f"{p.spec.metadata.name}: {what}"
                    + (f" ({where})" if where else "")
                    + f" above {bound} over {w.window}: degrade rule {r.id} ({r.action}{to}) is in force"
                ),
                description=(
                    f"The degrade rule's condition holds (seed 004 §2.2 policy plane): {r.condition}. The gateway "
                    "degrades these requests; the stage's own latency and failure alerts say why."
                ),
                for_=None,
                labels={},
                stage=w.stage,
                service=st.service if st is not None else None,
                fire=fire,
                quiet=quiet,
                series=series,
            )
        )
