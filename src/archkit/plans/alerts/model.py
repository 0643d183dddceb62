"""The alert plan's model: what an alert, a recording rule and a rule group are; names and selectors.

See the package docstring (archkit.plans.alerts) for what is planned; the planner is `planner`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from archkit import engines
from archkit.slo_math import unit_seconds
from archkit.spec.model import Spec


def promql_label_value(value: object) -> str:
    """A PromQL label value body (inside double quotes); the same escaping as the `promql` filter."""
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


METRIC_RE = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
LABEL_RE = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
RATE_WINDOW = "5m"  # the short window of every per-stage rate (4 × a 1m scrape, the usual minimum)
ALERTS_RUNBOOK = "alerts.md"

# Google SRE workbook, "Alerting on SLOs", multiwindow multi-burn-rate table: for a 30-day
# SLO, page when 2 % of the budget burns in 1 h (factor 14.4) or 5 % in 6 h (factor 6),
# open a ticket when 10 % burns in 3 d (factor 1); each long window is paired with a short
# window of 1/12 its length so the alert resets quickly. factor = share × window ÷ long window.
BURN_WINDOWS = (
    # name, budget share, long window, short window, severity
    ("Fast", 0.02, "1h", "5m", "page"),
    ("Medium", 0.05, "6h", "30m", "page"),
    ("Slow", 0.10, "3d", "6h", "ticket"),
)


def counts_successes_only(metric: str) -> bool:
    """Whether a request counter counts successes only, as its engine adapter declares (Triton's
    request-success counter): an error ratio over it needs successes + failures as denominator."""
    series = engines.series(metric)
    return series is not None and series.success_only


def burn_factor(share: float, long_window_h: float, slo_window_days: int) -> float:
    """Burn rate that spends `share` of the budget within `long_window_h` of a `slo_window_days` SLO."""
    return share * slo_window_days * 24 / long_window_h


# --------------------------------------------------------------------------- names and selectors


def _fmt(x: float) -> str:
    """A stable, exact-enough decimal for expressions and test series."""
    if x == math.inf:
        return "+Inf"
    r = float(f"{x:.6g}")
    return str(int(r)) if r == int(r) and abs(r) < 1e15 else repr(r)


def _label_name(name: str) -> str | None:
    """A valid Prometheus label name for `name` (invalid characters become '_')."""
    if name.startswith("__"):
        return None  # reserved (e.g. __name__): the spec cannot set it
    clean = re.sub(r"[^a-zA-Z0-9_]", "_", name)
    if not clean or clean[0].isdigit():
        clean = "_" + clean
    return clean


@dataclass(frozen=True)
class Series:
    """A metric name with equality matchers, rendered as PromQL or as a promtool series."""

    name: str
    labels: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, name: str, labels: dict[str, str], **extra: str) -> Series:
        out: dict[str, str] = {}
        for k, v in sorted(labels.items()):
            ln = _label_name(str(k))
            if ln is not None:
                out[ln] = str(v)
        out.update(extra)
        return cls(name, tuple(sorted(out.items())))

    def with_(self, **extra: str) -> Series:
        return Series(self.name, tuple(sorted({**dict(self.labels), **extra}.items())))

    def renamed(self, name: str) -> Series:
        return Series(name, self.labels)

    def __str__(self) -> str:
        matchers = [f'{k}="{promql_label_value(v)}"' for k, v in self.labels]
        if METRIC_RE.match(self.name):
            return f"{self.name}{{{', '.join(matchers)}}}" if matchers else self.name
        return "{" + ", ".join([f'__name__="{promql_label_value(self.name)}"'] + matchers) + "}"


def _unit_seconds(metric: str) -> float:
    """Seconds per unit of a latency metric, from its name (archkit.slo_math.unit_seconds)."""
    return unit_seconds(metric)


def _base(metric: str, suffix: str) -> str:
    return metric.removesuffix(suffix)


def _camel(text: str) -> str:
    parts = [p for p in re.split(r"[^A-Za-z0-9]+", text) if p]
    return "".join(p[:1].upper() + p[1:] for p in parts) or "Stage"


def _minutes(duration: str) -> int:
    n, unit = int(duration[:-1]), duration[-1]
    return math.ceil(n * {"s": 1 / 60, "m": 1, "h": 60, "d": 1440}[unit])


# --------------------------------------------------------------------------- the plan


@dataclass
class Case:
    """Input series for one promtool test: (series text, values text) pairs, evaluated at `eval_min`."""

    series: list[tuple[str, str]]
    eval_min: int
    interval_min: int = 1


@dataclass
class Alert:
    """One alerting rule with its meaning, its runbook anchor and its two unit-test cases.

    `group` is the rule group key (`latency`, `errors`, `slo`, `golden`); `severity` is `page`
    or `ticket`; `expr` is complete PromQL (see `query`/`op`/`threshold`/`windows` for its parts).
    """

    name: str
    group: str
    expr: str
    severity: str
    summary: str
    description: str
    for_: str | None
    labels: dict[str, str]
    fire: Case | None
    quiet: Case
    stage: str | None = None
    service: str | None = None
    tree: str | None = None
    series: list[str] = field(default_factory=list)  # metric names the expression reads
    # The expression in pieces, for outputs that draw or reason about it (a dashboard panel plots
    # `query` against `threshold`; a paging policy reads `windows`): `expr` is
    # `query op threshold`, or for a multi-window burn-rate alert the same comparison over each
    # of `windows` joined by `and`, where `query` is the first (long) window's.
    query: str = ""
    op: str = ">"
    threshold: float | None = None
    windows: tuple[str, ...] = ()  # the rate windows the expression reads, long first

    @property
    def anchor(self) -> str:
        return "alert-" + re.sub(r"[^a-z0-9]+", "-", self.name.lower()).strip("-")


@dataclass
class MatrixCase:
    """One promtool test: one input, several alerts, each expected to fire (True) or stay quiet."""

    name: str
    case: Case
    expect: dict[str, bool]


@dataclass
class Recording:
    """One recording rule."""

    record: str
    expr: str
    labels: dict[str, str]
    group: str


def runbook_url(spec: Spec, file: str, anchor: str) -> str:
    """Where an alert's runbook section lives.

    With `metadata.links.runbook_base_url` the URL is absolute, `<base>/runbooks/<file>#<anchor>`,
    the base being where the render output folder is published (so the path is the generated
    tree's); without it, a path relative to the render output folder: `runbooks/<file>#<anchor>`
    (a pager cannot follow that: set the base URL).
    """
    path = f"runbooks/{file}#{anchor}"
    base = spec.metadata.links.get("runbook_base_url")
    if base:
        return f"{base.rstrip('/')}/{path}"
    return path


# Prometheus rule groups, in the order rules.yaml lists them: (group key, title in the group name,
# what it holds). Recording rules first, so alerts can read them.
GROUP_ORDER: tuple[tuple[str, str, str], ...] = (
    ("stages", "recording", "recordings"),
    ("slo", "slo-recording", "recordings"),
    ("latency", "latency", "alerts"),
    ("errors", "errors", "alerts"),
    ("slo", "slo-alerts", "alerts"),
    ("golden", "golden-signals", "alerts"),
)


@dataclass(frozen=True)
class RuleGroup:
    """One Prometheus rule group: its name in rules.yaml and its rules (recordings or alerts)."""

    name: str
    key: str
    recordings: tuple[Recording, ...] = ()
    alerts: tuple[Alert, ...] = ()


@dataclass
class AlertPlan:
    """Every recording rule and alert of one spec, in a stable order; see the module docstring."""

    spec_name: str
    alerts: list[Alert] = field(default_factory=list)
    recordings: list[Recording] = field(default_factory=list)
    matrices: list[MatrixCase] = field(default_factory=list)  # SLO burn tiers at several burn rates

    @property
    def prefix(self) -> str:
        return f"archkit-{self.spec_name}"

    @property
    def groups(self) -> list[RuleGroup]:
        """The non-empty rule groups in file order."""
        out = []
        for key, title, kind in GROUP_ORDER:
            name = f"{self.prefix}-{title}"
            if kind == "recordings":
                recs = tuple(r for r in self.recordings if r.group == key)
                if recs:
                    out.append(RuleGroup(name, key, recordings=recs))
            else:
                alerts = tuple(a for a in self.alerts if a.group == key)
                if alerts:
                    out.append(RuleGroup(name, key, alerts=alerts))
        return out

    @property
    def group_names(self) -> list[str]:
        """What a Prometheus that loaded the generated rules.yaml lists as its rule groups."""
        return [g.name for g in self.groups]

    def for_tree(self, tree_id: str) -> list[Alert]:
        return [a for a in self.alerts if a.tree == tree_id]
