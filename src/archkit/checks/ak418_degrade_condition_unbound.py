"""AK418: a degrade rule's structured condition reads no real series."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic
from archkit.spec.model import MetricType


@register
class DegradeConditionUnbound(Rule):
    """A degrade rule's `when` names no series or no bound, or a stage without the series its bound reads."""

    code = "AK418"
    name = "degrade-condition-unbound"
    source = "seed 004 §3.2 (regional degradation: South-East Asian requests over 1.2 s get 'retry later')"
    rationale = """
A structured degrade condition (`policies.degrade[].when`) is either a latency percentile
(`above_ms`) of one histogram, a stage's bound latency series (`observability.stages[].latency`)
or a metric named directly, not both; or a stage's failed share of requests
(`error_ratio_above`, read from its bound `errors` and `requests` series). A stage without those
bindings, or one whose latency series has no buckets (a gauge, a summary, Triton's duration
counters), has nothing to compare: the prometheus generator could not alert on it and the
gateway's condition is untested. A free-text `condition` alone stays accepted. Undefined stage
ids are reported by AK103.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        bound = {sm.stage: sm for sm in ctx.spec.observability.stages}
        stages = {st.id for st in ctx.spec.dataflow.stages}
        for r in ctx.spec.policies.degrade:
            w = r.when
            if w is None:
                continue
            if (w.above_ms is None) == (w.error_ratio_above is None):
                yield ctx.at(
                    r, "when", f"degrade rule '{r.id}': `when` needs one of above_ms and error_ratio_above"
                )
            elif w.stage is None and w.metric is None:
                yield ctx.at(r, "when", f"degrade rule '{r.id}': `when` names neither a stage nor a metric")
            elif w.stage is not None and w.metric is not None:
                yield ctx.at(
                    w, "metric", f"degrade rule '{r.id}': `when` names both stage '{w.stage}' and a metric"
                )
            elif w.error_ratio_above is not None:
                sm = bound.get(w.stage) if w.stage is not None else None
                if w.stage is None or (w.stage in stages and (sm is None or not (sm.errors and sm.requests))):
                    yield ctx.at(
                        w,
                        "error_ratio_above",
                        f"degrade rule '{r.id}': an error ratio needs a stage with errors and requests "
                        "series in observability.stages",
                    )
            elif w.stage is not None and w.stage in stages:
                sm = bound.get(w.stage)
                ref = sm.latency if sm is not None else None
                if ref is None:
                    yield ctx.at(
                        w,
                        "stage",
                        f"degrade rule '{r.id}': stage '{w.stage}' has no latency series in observability.stages",
                    )
                elif ref.type is not MetricType.histogram:
                    yield ctx.at(
                        w,
                        "stage",
                        f"degrade rule '{r.id}': stage '{w.stage}''s latency series {ref.metric} is a "
                        f"{ref.type.value}, which has no P{w.percentile * 100:g}",
                    )
