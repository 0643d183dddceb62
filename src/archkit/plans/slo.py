"""The SLO plan: a spec's service level objectives, resolved to selectors, and the rules they compile to.

An SLO is availability (bad or good events over total events) or latency (the share of a
stage's histogram at or under a threshold). A spec's `slos` section lists them; without it
they are derived from the budgets: availability from `budgets.availability` (or `error_rate`)
at the first stage whose errors and requests are bound, latency from the P99 budget of the
first stage bound to a histogram ("P99 ≤ 800 ms" = 99 % of requests at or under 800 ms).

Rules follow Sloth's layout: every series is labelled `archkit_service` (the spec's
name) and `archkit_slo`; the SLI (error ratio) is recorded for every alert window plus the
whole SLO window; objective, error budget and remaining budget are recorded; the four
multi-window multi-burn-rate alerts read the recordings. The tiers are the Google SRE
Workbook's, chapter "Alerting on SLOs", table "Recommended time windows and burn rates for
a 99.9 % SLO" (Beyer et al. 2018): 2 % of a 30-day budget in 1 h (14.4×, page),
5 % in 6 h (6×, page), 10 % in 1 d (3×, ticket), 10 % in 3 d (1×, ticket), each long window
paired with a short one of 1/12 its length. For other windows the factors are recomputed so
the shares of the budget consumed stay 2 %, 5 %, 10 % and 10 % (`burn_factor`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from archkit.plans.alerts.model import (
    Alert,
    AlertPlan,
    Case,
    MatrixCase,
    Recording,
    Series,
    _base,
    _camel,
    _fmt,
    _label_name,
    _minutes,
    _unit_seconds,
    burn_factor,
    counts_successes_only,
    promql_label_value,
)
from archkit.slo_math import (
    BucketGap,
    availability_binding,
    bucket_gap,
    fullmatch_re2,
    has_events,
    latency_binding,
    slo_problem,
)
from archkit.spec.model import Slo, SloEvents, Spec

# (tier, share of the budget, long window, short window, severity): SRE Workbook, "Alerting on
# SLOs", recommended windows and burn rates (see the module docstring).
TIERS: tuple[tuple[str, float, str, str, str], ...] = (
    ("Fast", 0.02, "1h", "5m", "page"),
    ("Medium", 0.05, "6h", "30m", "page"),
    ("Slow", 0.10, "1d", "2h", "ticket"),
    ("Steady", 0.10, "3d", "6h", "ticket"),
)
ALERT_WINDOWS: tuple[str, ...] = tuple(sorted({w for t in TIERS for w in (t[2], t[3])}, key=_minutes))
SLI_RECORD = "archkit:slo_sli_error:ratio_rate"
OBJECTIVE_RECORD = "archkit:slo_objective:ratio"
BUDGET_RECORD = "archkit:slo_error_budget:ratio"
REMAINING_RECORD = "archkit:slo_error_budget_remaining:ratio"


# --------------------------------------------------------------------------- selectors


@dataclass(frozen=True)
class Selector:
    """A metric name with matchers (=, !=, =~, !~), rendered as PromQL."""

    name: str
    matchers: tuple[tuple[str, str, str], ...] = ()

    @classmethod
    def of(cls, events: SloEvents) -> Selector:
        out = [(_label_name(m.label), m.op, m.value) for m in events.matchers]
        return cls(events.metric, tuple((k, op, v) for k, op, v in out if k is not None))

    @classmethod
    def equal(cls, name: str, labels: dict[str, str]) -> Selector:
        """Equality matchers on `labels` (names made valid as `Series.of` does; reserved ones dropped)."""
        return cls(name, tuple((k, "=", v) for k, v in Series.of(name, labels).labels))

    def with_(self, label: str, op: str, value: str) -> Selector:
        return Selector(self.name, (*self.matchers, (label, op, value)))

    def __str__(self) -> str:
        body = ", ".join(f'{k}{op}"{promql_label_value(v)}"' for k, op, v in self.matchers)
        if re.match(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$", self.name):
            return f"{self.name}{{{body}}}" if body else self.name
        return "{" + ", ".join(filter(None, [f'__name__="{promql_label_value(self.name)}"', body])) + "}"

    def matches(self, name: str, labels: dict[str, str]) -> bool:
        """Whether a series `name{labels}` is selected (an absent label reads as "", as in Prometheus)."""
        if name != self.name:
            return False
        for k, op, v in self.matchers:
            val = labels.get(k, "")
            hit = val == v if op in ("=", "!=") else _fullmatch(v, val)
            if hit != (op in ("=", "=~")):
                return False
        return True

    def witness(self, **extra: str) -> dict[str, str] | None:
        """Labels of a test series this selector selects (None when no simple one is found)."""
        labels: dict[str, str] = {}
        for k, op, v in self.matchers:
            if k in extra:
                continue
            if op == "=":
                labels[k] = v
            elif op == "=~":
                w = _regex_witness(v)
                if w is None:
                    return None
                labels[k] = w
        labels.update(extra)
        return labels if self.matches(self.name, labels) else None

    def series(self, labels: dict[str, str]) -> str:
        return str(Selector(self.name, tuple((k, "=", v) for k, v in sorted(labels.items()))))


def _fullmatch(pattern: str, text: str) -> bool:
    """RE2 full match (Prometheus anchors matcher regexes); linear time whatever the spec's regex."""
    return fullmatch_re2(pattern, text)


def _regex_witness(pattern: str) -> str | None:
    """A short text the regex matches, from its alternatives with classes and wildcards filled."""
    for alt in [pattern, *pattern.split("|")]:
        cand = re.sub(r"\\d", "0", alt)
        cand = re.sub(r"\[\^?([^\]\\])[^\]]*\]", r"\1", cand)
        parts = re.split(r"(\\.)", cand)  # escaped characters stand for themselves
        cand = "".join(
            p[1] if p.startswith("\\") else re.sub(r"[()^$+*?]", "", p).replace(".", "0") for p in parts
        )
        if _fullmatch(pattern, cand):
            return cand
    return None


def le_pattern(le: float) -> str:
    """An RE2 that matches the `le` label of boundary `le` however a client formats it ("1", "1.0")."""
    text = _fmt(le)
    return re.escape(text) + ("0*" if "." in text or "e" in text else r"(\.0+)?")


# --------------------------------------------------------------------------- the planned SLOs


@dataclass(frozen=True)
class PlannedSlo:
    """One SLO, resolved: which series count as bad/good/total and what its rules are labelled."""

    name: str
    service: str
    kind: str
    objective: float
    window_days: int
    stage: str | None
    threshold_ms: float | None = None
    bad: Selector | None = None
    good: Selector | None = None
    total: Selector | None = None
    derived: bool = False
    description: str | None = None
    gap: BucketGap | None = None
    slo: Slo | None = None  # the spec's entry (None when derived)
    le: float | None = None  # latency: the bucket boundary the SLI reads, in the metric's unit

    @property
    def budget(self) -> float:
        return 1 - self.objective

    @property
    def window(self) -> str:
        return f"{self.window_days}d"

    @property
    def labels(self) -> dict[str, str]:
        out = {"archkit_service": self.service, "archkit_slo": self.name}
        if self.stage:
            out["stage"] = self.stage
        return out

    @property
    def selector(self) -> str:
        return f'{{archkit_service="{promql_label_value(self.service)}", archkit_slo="{promql_label_value(self.name)}"}}'

    def error_ratio(self, window: str) -> str:
        """The SLI's error ratio over `window`, from the raw counters."""

        def rate(s: Selector) -> str:
            return f"sum(rate({s}[{window}]))"

        if self.bad is not None and self.total is not None:
            return f"({rate(self.bad)} / {rate(self.total)})"
        if self.good is not None and self.total is not None:
            return f"(1 - ({rate(self.good)} / {rate(self.total)}))"
        if self.bad is not None and self.good is not None:  # success-only counters (Triton's)
            return f"({rate(self.bad)} / ({rate(self.bad)} + {rate(self.good)}))"
        raise ValueError(f"SLO {self.name} has no event ratio")

    def case(self, ratio: float, minutes: int) -> Case | None:
        """Input series whose error ratio is `ratio` over any window (None if none can be built)."""
        samples, total = minutes + 5, 100.0
        counts = {"bad": ratio * total, "good": (1 - ratio) * total}
        extra = {"le": _fmt(self.le)} if self.le is not None else {}
        out: list[tuple[str, str]] = []
        inside = 0.0  # events of the bad/good series that the total selector selects too
        for key, sel in (("bad", self.bad), ("good", self.good)):
            if sel is None:
                continue
            labels = sel.witness(**extra)
            if labels is None:
                return None
            out.append((sel.series(labels), f"0+{_fmt(counts[key])}x{samples}"))
            if self.total is not None and self.total.matches(sel.name, labels):
                inside += counts[key]
        if self.total is not None and total - inside > 1e-9:
            labels = self.total.witness(**({"le": "+Inf"} if extra else {}))
            if labels is None:
                return None
            for sel in (self.bad, self.good):
                if sel is not None and sel.matches(self.total.name, labels):
                    return None  # the rest of the total would count as bad or good too
            out.append((self.total.series(labels), f"0+{_fmt(total - inside)}x{samples}"))
        return Case(out, minutes)


@dataclass
class SloPlan:
    """The spec's SLOs in a stable order (spec order; derived availability before latency)."""

    service: str
    slos: list[PlannedSlo] = field(default_factory=list)
    problems: list[tuple[Slo, str, str]] = field(default_factory=list)  # (entry, field, message)

    def get(self, name: str) -> PlannedSlo | None:
        return next((s for s in self.slos if s.name == name), None)


def _availability(
    spec: Spec, slo: Slo | None, stage: str | None
) -> tuple[dict[str, Selector | None], str | None]:
    if slo is not None and has_events(slo):
        return {
            "bad": Selector.of(slo.bad) if slo.bad else None,
            "good": Selector.of(slo.good) if slo.good else None,
            "total": Selector.of(slo.total) if slo.total else None,
        }, stage
    sm = availability_binding(spec, stage)
    if sm is None or sm.errors is None or sm.requests is None:
        return {}, stage
    bad = Selector.equal(sm.errors.metric, sm.errors.labels)
    req = Selector.equal(sm.requests.metric, sm.requests.labels)
    if counts_successes_only(sm.requests.metric):  # its engine adapter says so
        return {"bad": bad, "good": req, "total": None}, sm.stage
    return {"bad": bad, "good": None, "total": req}, sm.stage


def _latency(
    spec: Spec, stage: str | None, threshold_ms: float
) -> tuple[dict[str, Selector | None], str | None, BucketGap | None, float | None]:
    sm = latency_binding(spec, stage)
    if sm is None or sm.latency is None:
        return {}, stage, None, None
    base = _base(sm.latency.metric, "_bucket")
    unit = _unit_seconds(base)
    thr = threshold_ms / 1000 / unit
    gap = bucket_gap(thr, sm.latency.buckets, unit)
    le = thr if gap is None else (gap.lower if gap.lower is not None else gap.upper)
    le = thr if le is None else le
    bucket = Selector.equal(base + "_bucket", sm.latency.labels)
    good = bucket.with_("le", "=~", le_pattern(le))
    return {"good": good, "total": bucket.with_("le", "=", "+Inf")}, sm.stage, gap, le


def slo_plan(spec: Spec) -> SloPlan:
    """The spec's SLOs, resolved (pure: same spec, same plan)."""
    name = spec.metadata.name
    out = SloPlan(name)
    if spec.slos is not None:
        for slo in spec.slos:
            problem = slo_problem(spec, slo)
            if problem is not None:
                out.problems.append((slo, *problem))
                continue
            gap, le = None, None
            if slo.kind == "latency" and slo.good and slo.total:  # explicit events win
                sel: dict[str, Selector | None] = {
                    "good": Selector.of(slo.good),
                    "total": Selector.of(slo.total),
                }
                stage = slo.stage
            elif slo.kind == "latency":
                sel, stage, gap, le = _latency(spec, slo.stage, slo.threshold_ms or 0.0)
            else:
                sel, stage = _availability(spec, slo, slo.stage)
            out.slos.append(
                PlannedSlo(
                    slo.name, name, slo.kind, slo.objective, slo.window_days, stage, slo.threshold_ms,
                    sel.get("bad"), sel.get("good"), sel.get("total"), False, slo.description, gap, slo, le,
                )
            )  # fmt: skip
        return out
    b = spec.budgets
    target = b.availability if b.availability is not None else (1 - b.error_rate if b.error_rate else None)
    if target is not None and 0 < target < 1:
        sel, stage = _availability(spec, None, None)
        if sel:
            out.slos.append(
                PlannedSlo("availability", name, "availability", target, b.slo_window_days, stage,
                           bad=sel.get("bad"), good=sel.get("good"), total=sel.get("total"), derived=True)
            )  # fmt: skip
    hist = latency_binding(spec, None)
    st = spec.stage(hist.stage) if hist else None
    if st is not None and st.p99_ms:
        sel, stage, gap, le = _latency(spec, st.id, st.p99_ms)
        if sel:
            out.slos.append(
                PlannedSlo("latency", name, "latency", 0.99, b.slo_window_days, stage, st.p99_ms,
                           good=sel.get("good"), total=sel.get("total"), derived=True, gap=gap, le=le)
            )  # fmt: skip
    return out


# --------------------------------------------------------------------------- the rules


@dataclass
class SloRules:
    recordings: list[Recording] = field(default_factory=list)
    alerts: list[Alert] = field(default_factory=list)
    matrices: list[MatrixCase] = field(default_factory=list)


def tier_factor(share: float, long_window: str, window_days: int) -> float:
    return burn_factor(share, _minutes(long_window) / 60, window_days)


def slo_rules(spec: Spec, plan: SloPlan, unique_name: Callable[[str], str], minutes: int) -> SloRules:
    """Recording rules, burn-rate alerts and promtool matrices of every planned SLO.

    `unique_name` makes an alert name unique in the whole alert plan; `minutes` is when the
    promtool tests evaluate (enough samples for the 5 m windows).
    """
    out = SloRules()
    for s in plan.slos:
        lab = s.labels
        windows = list(ALERT_WINDOWS)
        for w in windows:
            out.recordings.append(Recording(SLI_RECORD + w, s.error_ratio(w), dict(lab), "slo"))
        if s.window not in windows:
            five = f"{SLI_RECORD}5m{s.selector}"
            out.recordings.append(
                Recording(
                    SLI_RECORD + s.window,
                    f"sum_over_time({five}[{s.window}]) / count_over_time({five}[{s.window}])",
                    dict(lab),
                    "slo",
                )
            )
        out.recordings += [
            Recording(OBJECTIVE_RECORD, f"vector({_fmt(s.objective)})", dict(lab), "slo"),
            Recording(BUDGET_RECORD, f"vector({_fmt(s.budget)})", dict(lab), "slo"),
            Recording(REMAINING_RECORD, f"1 - ({SLI_RECORD}{s.window}{s.selector} / {_fmt(s.budget)})", dict(lab), "slo"),
        ]  # fmt: skip
        names: dict[str, float] = {}
        for tier, share, long_w, short_w, severity in TIERS:
            factor = tier_factor(share, long_w, s.window_days)
            thr = factor * s.budget
            name = unique_name(f"{_camel(s.name)}ErrorBudgetBurn{tier}")
            names[name] = factor
            what = "latency" if s.kind == "latency" else "error"
            out.alerts.append(
                Alert(
                    name=name,
                    group="slo",
                    expr=(
                        f"({SLI_RECORD}{long_w}{s.selector} > {_fmt(thr)}) and "
                        f"({SLI_RECORD}{short_w}{s.selector} > {_fmt(thr)})"
                    ),
                    severity=severity,
                    summary=(
                        f"{s.service}/{s.name}: {what} budget burning {_fmt(factor)}x too fast "
                        f"({_fmt(share * 100)} % of the {s.window_days}-day budget in {long_w})"
                    ),
                    description=(
                        f"SLI error ratio of SLO {s.name} ({_fmt(s.objective * 100)} %) above "
                        f"{_fmt(factor)} x (1 - objective) over {long_w} and {short_w} (SRE Workbook, "
                        f"multiwindow multi-burn-rate alert; factor {_fmt(share)} x {s.window_days * 24} h "
                        f"/ {_fmt(_minutes(long_w) / 60)} h)."
                    ),
                    for_=None,
                    labels={**lab, "slo_window": s.window, "burn_tier": tier.lower()},
                    fire=s.case(min(1.0, thr * 1.1), minutes) if thr * 1.1 < 1 else None,
                    quiet=s.case(thr * 0.9, minutes) or Case([], minutes),
                    stage=s.stage,
                    service=None,
                    tree=None,
                    series=sorted({x.name for x in (s.bad, s.good, s.total) if x is not None}),
                )
            )
        # the Workbook's table as test inputs: at a burn between two tiers' factors exactly the
        # tiers with a smaller factor fire (healthy traffic, at half the budget, fires none)
        factors = sorted(names.values(), reverse=True)
        levels = [factors[0] * 1.25] + [(a + b) / 2 for a, b in zip(factors, factors[1:], strict=False)]
        levels.append(factors[-1] / 2)
        for level in levels:
            ratio = level * s.budget
            if ratio >= 1:
                continue
            case = s.case(ratio, minutes)
            if case is not None:
                name = f"SLO {s.name} at {_fmt(level)}x burn ({_fmt(ratio * 100)} % errors)"
                out.matrices.append(MatrixCase(name, case, {n: f < level for n, f in names.items()}))
    return out


# --------------------------------------------------------------------------- cost


@dataclass(frozen=True)
class RuleCost:
    """How many rules a plan has and an estimate of the series they create."""

    recordings: int
    alerts: int
    series: int

    def line(self) -> str:
        return (
            f"prometheus: {self.recordings} recording rules, {self.alerts} alerting rules, "
            f"about {self.series} series"
        )


def rule_cost(plan: AlertPlan) -> RuleCost:
    """Every recording aggregates with sum() to one series per label set the spec declares (its
    rule labels); an alert adds ALERTS and ALERTS_FOR_STATE series while pending or firing."""
    rec = {(r.record, tuple(sorted(r.labels.items()))) for r in plan.recordings}
    return RuleCost(len(plan.recordings), len(plan.alerts), len(rec) + 2 * len(plan.alerts))


def rules_file_cost(text: str) -> RuleCost:
    """`rule_cost` of a rendered rules.yaml (what `archkit render` reports)."""
    import yaml

    doc = yaml.safe_load(text) or {}
    rules = [r for g in doc.get("groups") or [] for r in g.get("rules") or []]
    recs = [r for r in rules if "record" in r]
    alerts = [r for r in rules if "alert" in r]
    keys = {(r["record"], tuple(sorted((r.get("labels") or {}).items()))) for r in recs}
    return RuleCost(len(recs), len(alerts), len(keys) + 2 * len(alerts))
