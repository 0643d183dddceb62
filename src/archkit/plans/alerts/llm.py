"""LLM stages' alerts: TTFT and ITL over budget, KV-cache exhaustion, preemptions, queue growth.

Series names come from the stage's engine adapter (`archkit.engines`), at the engine version the
spec declares, so one spec's rules read `vllm:time_to_first_token_seconds` and another's
`sglang:...`; a measure the engine does not export (TGI has no TTFT histogram) gets no alert.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from archkit.engines import adapter
from archkit.plans.alerts.model import RATE_WINDOW, Alert, Case, Recording, Series, camel, fmt_number
from archkit.plans.alerts.planner import latency_query
from archkit.spec.model import MetricRef, MetricType, Stage

if TYPE_CHECKING:
    from archkit.plans.alerts.planner import Planner

KV_USAGE_MAX = 0.95  # above this share of KV blocks the next long prompt preempts (vLLM recompute)


def llm_alerts(p: Planner, st: Stage, tree: str | None) -> None:
    """Recordings and alerts of one LLM stage."""
    llm = st.llm
    assert llm is not None
    eng = adapter(llm.engine.name.value)
    ver = llm.engine.version
    labels: dict[str, str] = {}
    if eng.model_label and llm.model.name:
        labels[eng.model_label] = llm.model.name
    common = {"stage": st.id, **({"service": st.service} if st.service else {})}
    title = st.name or st.id
    b = llm.budgets
    for measure, budget_ms, what, rec in (
        ("ttft_seconds", b.ttft_p99_ms, "TTFT", "archkit:llm_ttft_seconds:p99_rate5m"),
        ("itl_seconds", b.itl_p99_ms, "ITL", "archkit:llm_itl_seconds:p99_rate5m"),
    ):
        if not eng.has(measure):
            continue
        ref = MetricRef(metric=eng.metric(measure, ver).name, type=MetricType.histogram, labels=labels)
        query = latency_query(ref, 0.99)
        p.records.append(Recording(rec, query[0], dict(common), "stages"))
        if budget_ms is None:
            continue
        p.add(
            p.above(
                ref,
                query,
                budget_ms / 1000,
                fire_at_zero=False,
                name=p.name(f"{camel(st.id)}{what.title()}AboveBudget"),
                group="latency",
                severity=st.budget_alert,
                summary=f"{title}: {what} P99 above the {fmt_number(budget_ms)} ms budget",
                description=(
                    f"The {what} P99 over {RATE_WINDOW} from the engine's own histogram "
                    f"({eng.title}) is above the stage's llm budget (docs/llm.md)."
                ),
                for_=p.for_,
                labels=dict(common),
                stage=st.id,
                service=st.service,
                tree=tree,
            )
        )
    minutes = p.steady(p.for_min)
    samples = minutes + 5
    if eng.has("kv_cache_usage"):
        s = Series.of(eng.metric("kv_cache_usage", ver).name, labels)
        p.add(
            Alert(
                name=p.name(f"{camel(st.id)}KvCacheNearlyFull"),
                group="golden",
                expr=f"max({s}) > {fmt_number(KV_USAGE_MAX)}",
                query=f"max({s})",
                threshold=KV_USAGE_MAX,
                severity="ticket",
                summary=f"{title}: KV cache above {fmt_number(KV_USAGE_MAX * 100)} % of its blocks",
                description=(
                    "A full KV cache preempts running sequences (recomputed later) and queues new ones: "
                    "add replicas, lower max_num_seqs or shorten prompts (AK702)."
                ),
                for_=p.for_,
                labels=dict(common),
                stage=st.id,
                service=st.service,
                tree=tree,
                fire=Case([(str(s), p.gauge(0.99, samples))], minutes),
                quiet=Case([(str(s), p.gauge(0.5, samples))], minutes),
                series=[s.name],
            )
        )
    if eng.has("preemptions") and eng.metric("preemptions", ver).kind == "counter":
        s = Series.of(eng.metric("preemptions", ver).name, labels)
        p.add(
            Alert(
                name=p.name(f"{camel(st.id)}PreemptionStorm"),
                group="golden",
                expr=f"sum(rate({s}[{RATE_WINDOW}])) > 1",
                query=f"sum(rate({s}[{RATE_WINDOW}]))",
                threshold=1.0,
                windows=(RATE_WINDOW,),
                severity="ticket",
                summary=f"{title}: more than one preemption per second",
                description=(
                    "Each preemption throws away a sequence's KV cache and recomputes its prefill: "
                    "a storm multiplies prefill work exactly when the cache is short (docs/llm.md)."
                ),
                for_=p.for_,
                labels=dict(common),
                stage=st.id,
                service=st.service,
                tree=tree,
                fire=Case([(str(s), p.counter(600, samples))], minutes),
                quiet=Case([(str(s), p.counter(0, samples))], minutes),
                series=[s.name],
            )
        )
    if eng.has("waiting_requests"):
        s = Series.of(eng.metric("waiting_requests", ver).name, labels)
        limit = llm.engine.max_num_seqs
        p.add(
            Alert(
                name=p.name(f"{camel(st.id)}QueueGrowing"),
                group="golden",
                expr=f"max({s}) > {limit}",
                query=f"max({s})",
                threshold=float(limit),
                severity="ticket",
                summary=f"{title}: more requests waiting than max_num_seqs ({limit}) can run",
                description=(
                    "A waiting queue longer than a full batch means arrivals outpace the engine: "
                    "TTFT grows with it (docs/llm.md, the knee of archkit capacity)."
                ),
                for_=p.for_,
                labels=dict(common),
                stage=st.id,
                service=st.service,
                tree=tree,
                fire=Case([(str(s), p.gauge(2 * limit + 1, samples))], minutes),
                quiet=Case([(str(s), p.gauge(0, samples))], minutes),
                series=[s.name],
            )
        )
