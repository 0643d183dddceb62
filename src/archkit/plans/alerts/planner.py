"""The alert planner: from a spec's observability bindings, budgets and golden signals to an AlertPlan."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from archkit.plans.alerts.model import (
    RATE_WINDOW,
    Alert,
    AlertPlan,
    Case,
    Recording,
    Series,
    base_metric,
    camel,
    counts_successes_only,
    duration_minutes,
    fmt_number,
    metric_unit_seconds,
)
from archkit.spec.model import MetricRef, MetricType, Spec, Stage, StageMetrics

if TYPE_CHECKING:
    from archkit.plans.slo import SloRules


def _tree_for(spec: Spec, service: str | None) -> str | None:
    for t in spec.faulttrees:
        if service is not None and t.service == service:
            return t.id
    return None


def ratio_expr(err: Series, req: Series, window: str, success_only: bool) -> str:
    e = f"sum(rate({err}[{window}]))"
    r = f"sum(rate({req}[{window}]))"
    if success_only:  # the counter counts successes only (its engine adapter says so)
        r = f"({r} + {e})"
    return f"({e} / {r})"


def latency_query(ref: MetricRef, q: float) -> tuple[str, str, float, str]:
    """How a bound latency series reads as seconds at quantile `q`: (PromQL, kind, seconds per
    unit, metric read); the alerts and the dashboard panels use the same query."""
    sel = Series.of(ref.metric, ref.labels)
    if ref.type is MetricType.histogram:
        base = base_metric(ref.metric, "_bucket")
        unit = metric_unit_seconds(base)
        bucket = sel.renamed(base + "_bucket")
        expr = f"histogram_quantile({fmt_number(q)}, sum by (le) (rate({bucket}[{RATE_WINDOW}])))"
        return _scale(expr, unit), "p99", unit, base + "_bucket"
    if ref.type is MetricType.summary:
        unit = metric_unit_seconds(ref.metric)
        expr = f"max({sel.with_(quantile=fmt_number(q))})"
        return _scale(expr, unit), "p99", unit, ref.metric
    if ref.type is MetricType.counter_us or ref.count_metric:
        unit = 1e-6 if ref.type is MetricType.counter_us else metric_unit_seconds(ref.metric)
        cnt = Series.of(ref.count_metric or ref.metric + "_count", ref.labels)
        expr = f"(sum(rate({sel}[{RATE_WINDOW}])) / sum(rate({cnt}[{RATE_WINDOW}])))"
        return _scale(expr, unit), "mean", unit, ref.metric
    # a gauge holding the current latency
    unit = metric_unit_seconds(ref.metric)
    return _scale(f"max({sel})", unit), "gauge", unit, ref.metric


def _scale(expr: str, unit: float) -> str:
    return expr if unit == 1.0 else f"({expr} * {fmt_number(unit)})"


class Planner:
    """Builds the alert and recording plan of one spec."""

    def __init__(self, spec: Spec):
        self.spec = spec
        self.alerts: list[Alert] = []
        self.records: list[Recording] = []
        self.obs = spec.observability
        self.for_ = self.obs.alert_for
        self.for_min = duration_minutes(self.for_)
        self._names: set[str] = set()

    # ---- helpers
    def name(self, base: str) -> str:
        name, i = base, 2
        while name in self._names:
            name, i = f"{base}{i}", i + 1
        self._names.add(name)
        return name

    def steady(self, minutes: int) -> int:
        """Evaluation time of a test: the 5m rate window filled, then the `for` duration, plus margin."""
        return minutes + 8

    @staticmethod
    def counter(inc: float, samples: int) -> str:
        return f"0+{fmt_number(inc)}x{samples}"

    @staticmethod
    def gauge(value: float, samples: int) -> str:
        return f"{fmt_number(value)}x{samples}"

    def add(self, alert: Alert) -> None:
        self.alerts.append(alert)

    # ---- per stage
    def stage(self, sm: StageMetrics) -> None:
        st: Stage | None = self.spec.stage(sm.stage)
        if st is None:
            return
        service = st.service
        tree = _tree_for(self.spec, service)
        common = {"stage": st.id}
        if service:
            common["service"] = service
        title = st.name or st.id
        if sm.latency is not None:
            self.latency(st, sm.latency, common, title, tree)
        if sm.errors is not None and sm.requests is not None:
            self.errors(st, sm.errors, sm.requests, common, title, tree)
        elif sm.requests is not None:
            req = Series.of(sm.requests.metric, sm.requests.labels)
            self.records.append(
                Recording(
                    "archkit:stage_requests:rate5m",
                    f"sum(rate({req}[{RATE_WINDOW}]))",
                    dict(common),
                    "stages",
                )
            )
        if sm.queue is not None:
            self.queue(st, sm.queue, common, title, tree)

    def latency_case(self, ref: MetricRef, kind: str, unit: float, value_s: float, minutes: int) -> Case:
        """Series whose latency reads about `value_s` seconds."""
        samples = minutes + 5
        v = value_s / unit  # in the metric's own unit
        sel = Series.of(ref.metric, ref.labels)
        if ref.type is MetricType.histogram:
            bucket = sel.renamed(base_metric(ref.metric, "_bucket") + "_bucket")
            # every observation falls in (v/2, v]: the interpolated p99 is ~0.99·v, above v/2
            lo, hi = v / 2, v
            return Case(
                [
                    (str(bucket.with_(le=fmt_number(lo))), self.counter(0, samples)),
                    (str(bucket.with_(le=fmt_number(hi))), self.counter(10, samples)),
                    (str(bucket.with_(le="+Inf")), self.counter(10, samples)),
                ],
                minutes,
            )
        if ref.type is MetricType.summary:
            return Case([(str(sel.with_(quantile=fmt_number(0.99))), self.gauge(v, samples))], minutes)
        if kind == "mean":
            cnt = Series.of(ref.count_metric or ref.metric + "_count", ref.labels)
            return Case(
                [(str(sel), self.counter(10 * v, samples)), (str(cnt), self.counter(10, samples))], minutes
            )
        return Case([(str(sel), self.gauge(v, samples))], minutes)

    def latency(
        self, st: Stage, ref: MetricRef, common: dict[str, str], title: str, tree: str | None
    ) -> None:
        expr, kind, unit, read = latency_query(ref, 0.99)
        rec = (
            "archkit:stage_latency_seconds:p99_rate5m"
            if kind == "p99"
            else "archkit:stage_latency_seconds:mean_rate5m"
            if kind == "mean"
            else "archkit:stage_latency_seconds"
        )
        self.records.append(Recording(rec, expr, dict(common), "stages"))
        if st.p99_ms is None:
            return
        budget_s = st.p99_ms / 1000
        what = {"p99": "P99 latency", "mean": "mean latency", "gauge": "latency"}[kind]
        why = (
            "Triton's cumulative duration counters give only the mean; a mean above the P99 "
            "budget means the P99 is certainly above it."
            if kind == "mean"
            else f"The {what} over {RATE_WINDOW} is above the stage's P99 budget."
        )
        self.add(
            self.above(
                ref,
                (expr, kind, unit, read),
                budget_s,
                fire_at_zero=False,
                name=self.name(f"{camel(st.id)}LatencyAboveBudget"),
                group="latency",
                severity=st.budget_alert,
                summary=f"{title}: {what} above the {fmt_number(st.p99_ms)} ms P99 budget",
                description=why,
                for_=self.for_,
                labels=dict(common),
                stage=st.id,
                service=common.get("service"),
                tree=tree,
            )
        )

    def above(
        self,
        ref: MetricRef,
        query: tuple[str, str, float, str],
        threshold_s: float,
        *,
        pad_s: float = 0.0,
        fire_at_zero: bool = True,
        **fields: Any,
    ) -> Alert:
        """An alert on a latency-like series above `threshold_s`, with its two promtool cases."""
        expr, kind, unit, read = query
        minutes = self.steady(self.for_min)
        # histogram: the test's observations sit in (v/2, v], so fire with v = 2b, stay quiet with v = b/2
        fire_v, quiet_v = (
            (2.2 * threshold_s, 0.4 * threshold_s)
            if kind == "p99"
            else (2 * threshold_s + pad_s, threshold_s / 2)
        )
        return Alert(
            expr=f"{expr} > {fmt_number(threshold_s)}",
            query=expr,
            threshold=threshold_s,
            windows=(RATE_WINDOW,) if kind != "gauge" else (),
            fire=self.latency_case(ref, kind, unit, fire_v, minutes)
            if threshold_s > 0 or fire_at_zero
            else None,
            quiet=self.latency_case(ref, kind, unit, quiet_v, minutes),
            series=[read] + ([ref.count_metric or ref.metric + "_count"] if kind == "mean" else []),
            **fields,
        )

    def errors(
        self, st: Stage, err: MetricRef, req: MetricRef, common: dict[str, str], title: str, tree: str | None
    ) -> None:
        e, r = Series.of(err.metric, err.labels), Series.of(req.metric, req.labels)
        ok_only = counts_successes_only(req.metric)
        ratio = ratio_expr(e, r, RATE_WINDOW, ok_only)
        self.records.append(Recording("archkit:stage_error_ratio:rate5m", ratio, dict(common), "stages"))
        self.records.append(
            Recording(
                "archkit:stage_requests:rate5m", f"sum(rate({r}[{RATE_WINDOW}]))", dict(common), "stages"
            )
        )
        if st.failure_rate is None:
            return
        f = st.failure_rate
        minutes = self.steady(self.for_min)
        self.add(
            Alert(
                name=self.name(f"{camel(st.id)}FailureRateAboveBudget"),
                group="errors",
                expr=f"{ratio} > {fmt_number(f)}",
                query=ratio,
                threshold=f,
                windows=(RATE_WINDOW,),
                severity=st.budget_alert,
                summary=f"{title}: failure rate above its {fmt_number(f * 100)} % budget",
                description=f"Failed / all requests over {RATE_WINDOW} exceed the stage's failure_rate.",
                for_=self.for_,
                labels=dict(common),
                fire=self.ratio_case(e, r, ok_only, (1 + f) / 2, minutes) if f < 1 else None,
                quiet=self.ratio_case(e, r, ok_only, f / 2, minutes),
                stage=st.id,
                service=common.get("service"),
                tree=tree,
                series=[err.metric, req.metric],
            )
        )

    def ratio_case(
        self, e: Series, r: Series, ok_only: bool, ratio: float, minutes: int, interval: int = 1
    ) -> Case:
        samples = minutes // interval + 5
        total = 100.0
        errors = ratio * total
        reqs = total - errors if ok_only else total
        if e == r:  # the same series for both: only a ratio of 1 or NaN is possible
            return Case([(str(r), self.counter(total, samples))], minutes, interval)
        return Case(
            [(str(e), self.counter(errors, samples)), (str(r), self.counter(reqs, samples))],
            minutes,
            interval,
        )

    def queue(self, st: Stage, ref: MetricRef, common: dict[str, str], title: str, tree: str | None) -> None:
        expr, kind, unit, read = latency_query(ref, 0.99)
        self.records.append(
            Recording(
                "archkit:stage_queue_seconds:" + ("p99_rate5m" if kind == "p99" else "mean_rate5m"),
                expr,
                dict(common),
                "stages",
            )
        )
        batching = st.model.batching if st.model else None
        if batching is None or not batching.max_queue_delay_us:
            return
        limit_s = batching.max_queue_delay_us / 1e6
        self.add(
            self.above(
                ref,
                (expr, kind, unit, read),
                limit_s,
                name=self.name(f"{camel(st.id)}QueueTimeHigh"),
                group="latency",
                severity="ticket",
                summary=f"{title}: requests wait longer than max_queue_delay_us ({batching.max_queue_delay_us} µs)",
                description=(
                    "Queue time beyond the batcher's max delay means every instance is busy: "
                    "the stage is saturated (seed 000 §2.1, Little's law)."
                ),
                for_=self.for_,
                labels=dict(common),
                stage=st.id,
                service=common.get("service"),
                tree=tree,
            )
        )

    # ---- service level
    def slo(self) -> SloRules:
        """The SLOs' recordings, burn-rate alerts and tier matrices (archkit.plans.slo)."""
        from archkit.plans.slo import slo_plan, slo_rules  # it builds on this package's model

        rules = slo_rules(self.spec, slo_plan(self.spec), self.name, self.steady(self.for_min))
        self.alerts += rules.alerts
        self.records += rules.recordings
        return rules

    def golden(self) -> None:
        gs = self.obs.golden_signals
        minutes = self.steady(self.for_min)
        samples = minutes + 5
        name = self.spec.metadata.name
        if gs.effective_qps is not None and gs.effective_qps.baseline_qps:
            q, baseline = gs.effective_qps, gs.effective_qps.baseline_qps
            s = Series.of(q.metric, q.labels)
            floor = baseline * q.alert_below_ratio
            self.add(
                Alert(
                    name=self.name("EffectiveQpsLow"),
                    group="golden",
                    expr=f"(sum(rate({s}[{RATE_WINDOW}])) or vector(0)) < {fmt_number(floor)}",
                    query=f"(sum(rate({s}[{RATE_WINDOW}])) or vector(0))",
                    op="<",
                    threshold=floor,
                    windows=(RATE_WINDOW,),
                    severity="page",
                    summary=(
                        f"{name}: effective QPS (answers with confidence >= {fmt_number(q.confidence_floor)}) "
                        f"below {fmt_number(q.alert_below_ratio * 100)} % of the {fmt_number(baseline)} QPS baseline"
                    ),
                    description=(
                        "Requests can succeed with useless answers; effective QPS counts only "
                        "confident ones (seed 004 §3.4)."
                    ),
                    for_=self.for_,
                    labels={},
                    tree=None,
                    fire=Case([(str(s), self.counter(floor / 2 * 60, samples))], minutes)
                    if floor > 0
                    else None,
                    quiet=Case([(str(s), self.counter((floor + 1) * 2 * 60, samples))], minutes),
                    series=[q.metric],
                )
            )
        if gs.cold_start is not None:
            c = gs.cold_start
            # read like a latency series: gauge, histogram or summary, unit from the name's suffix
            ref = MetricRef(metric=c.metric, type=c.type, labels=c.labels)
            self.add(
                self.above(
                    ref,
                    latency_query(ref, 0.99),
                    c.max_ms / 1000,
                    pad_s=1e-3,
                    name=self.name("ColdStartSlow"),
                    group="golden",
                    severity="ticket",
                    summary=f"{name}: model cold start above {fmt_number(c.max_ms)} ms",
                    description=(
                        "A reload or CUDA context rebuild longer than the budget queues requests "
                        "(seed 000 §2.2: 83 ms context rebuild)."
                    ),
                    for_=None,
                    labels={},
                    tree=None,
                )
            )
        if gs.gpu_memory is not None and gs.gpu_memory.total_metric:
            g, total_metric = gs.gpu_memory, gs.gpu_memory.total_metric
            used, total = Series.of(g.metric, g.labels), Series.of(total_metric, g.labels)
            tot = 16e9
            self.add(
                Alert(
                    name=self.name("GpuMemoryHigh"),
                    group="golden",
                    # per GPU (series matched on their labels, e.g. Triton's gpu_uuid): one full GPU
                    # is an OOM even when the fleet's average is low
                    expr=f"max({used} / {total}) > {fmt_number(g.max_ratio)}",
                    query=f"max({used} / {total})",
                    threshold=g.max_ratio,
                    # paging policy: only SLO burn (fast, medium), effective-QPS collapse and
                    # service down wake someone; a filling GPU is worked on in hours, not minutes
                    severity="ticket",
                    summary=f"{name}: a GPU's memory is above {fmt_number(g.max_ratio * 100)} % of its capacity",
                    description=(
                        "Close to OOM: one more model version or a larger batch fails to load "
                        "(seed 000 §2.3, §3.4)."
                    ),
                    for_=self.for_,
                    labels={},
                    tree=_tree_for(self.spec, self._gpu_service()),
                    fire=Case(
                        [
                            (
                                str(used),
                                self.gauge(
                                    tot * min(1.0, (1 + g.max_ratio) / 2) if g.max_ratio < 1 else tot * 1.5,
                                    samples,
                                ),
                            ),
                            (str(total), self.gauge(tot, samples)),
                        ],
                        minutes,
                    ),
                    quiet=Case(
                        [
                            (str(used), self.gauge(tot * g.max_ratio / 2, samples)),
                            (str(total), self.gauge(tot, samples)),
                        ],
                        minutes,
                    ),
                    series=[g.metric, total_metric],
                )
            )
        if gs.drift is not None:
            d = gs.drift
            s = Series.of(d.metric, d.labels)
            self.add(
                Alert(
                    name=self.name("InputDriftDetected"),
                    group="golden",
                    expr=f"min({s}) < {fmt_number(d.p_value_threshold)}",
                    query=f"min({s})",
                    op="<",
                    threshold=d.p_value_threshold,
                    severity="ticket",
                    summary=f"{name}: input drift ({d.method} p-value below {fmt_number(d.p_value_threshold)})",
                    description=(
                        "A drift alert must lead to an action: open a data-quality ticket for "
                        "the data scientists (seed 004 §3.4)."
                    ),
                    for_=self.for_,
                    labels={},
                    tree=None,
                    fire=(
                        Case([(str(s), self.gauge(d.p_value_threshold / 2, samples))], minutes)
                        if d.p_value_threshold > 0
                        else None
                    ),
                    quiet=Case([(str(s), self.gauge((1 + d.p_value_threshold) / 2, samples))], minutes),
                    series=[d.metric],
                )
            )

        from archkit.plans.alerts.memory import memory_growth_alert  # it builds on this module's Planner

        growth = memory_growth_alert(self)
        if growth is not None:
            self.add(growth)

    def _gpu_service(self) -> str | None:
        for st in self.spec.dataflow.stages:
            if st.model is not None and st.model.device.value == "gpu" and st.service:
                return st.service
        return None


def alert_plan(spec: Spec) -> AlertPlan:
    """The alerting and recording rules of a spec, in a stable order (pure: same spec, same plan)."""
    p = Planner(spec)
    order = {st.id: i for i, st in enumerate(spec.dataflow.stages)}
    for sm in sorted(spec.observability.stages, key=lambda m: (order.get(m.stage, 10**6), m.stage)):
        p.stage(sm)
    from archkit.plans.alerts.llm import llm_alerts

    for st in spec.dataflow.stages:
        if st.llm is not None:
            llm_alerts(p, st, _tree_for(spec, st.service))
    rules = p.slo()
    p.golden()
    from archkit.plans.alerts.breaker import breaker_alerts

    breaker_alerts(p)
    from archkit.plans.alerts.pool import pool_alerts

    pool_alerts(p)
    from archkit.plans.alerts.workflow import workflow_alerts

    workflow_alerts(p)
    from archkit.plans.alerts.degrade import degrade_alerts

    degrade_alerts(p)
    return AlertPlan(spec.metadata.name, p.alerts, p.records, rules.matrices)


def plan(spec: Spec) -> tuple[list[Alert], list[Recording]]:
    """(alerts, recording rules) of a spec: `alert_plan` as a pair."""
    ap = alert_plan(spec)
    return ap.alerts, ap.recordings
