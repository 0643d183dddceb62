"""The alert plan: which recording rules and alerts a spec gets, as typed values, before any YAML.

Rendering is elsewhere (`archkit.generators.gen_prometheus` writes `rules.yaml` and its
promtool tests; `gen_runbooks` writes the alert index); `archkit verify` reads the rule group
names from here. Sloth keeps its SLO alert model apart from output in the same way.

The model (`model`), meant to be extended (SLO rules, dashboards, paging policy build on it):
- `Recording`: one recording rule (`record`, `expr`, `labels`, `group` key).
- `Alert`: one alerting rule: `name`, `group` key, `expr` (PromQL, complete; in pieces as
  `query`, `op`, `threshold` and the rate `windows` it reads), `severity`
  (`page` or `ticket`), `for_`, `labels`, `summary`/`description`, where it points
  (`stage`, `service`, fault `tree`, the `series` it reads, its runbook `anchor`) and two
  promtool `Case`s (`fire`: input series that must fire it, `quiet`: series that must not).
- `AlertPlan`: all of them in a stable order, plus `groups` (the Prometheus rule groups,
  in file order, with their names) and `group_names`.

What gets planned (`planner`; seed 000 §4.3, seed 004 §3.4: every number on the diagram is watched):
- per stage: recording rules for latency, request rate and error ratio, a latency alert from
  the metric the spec binds (`histogram` → histogram_quantile over `_bucket`; Triton's
  cumulative `counter_us` → rate(duration)/rate(count), a mean; `summary` → its quantile
  label), a failure-rate alert and a queue-time alert where declared;
- for the service: multi-window multi-burn-rate error-budget alerts (Google SRE workbook,
  "Alerting on SLOs", table 5-8) with factors recomputed for the spec's SLO window
  (`BURN_WINDOWS`, `burn_factor`);
- golden signals where declared: effective QPS (seed 004 §3.4), cold start, GPU memory, drift.

Expressions use only the series the spec declares; label values pass the `promql` escaping;
metric names that are not valid PromQL identifiers are selected with `{__name__="..."}`.
"""

from __future__ import annotations

from archkit.plans.alerts.model import (
    ALERTS_RUNBOOK,
    BURN_WINDOWS,
    GROUP_ORDER,
    RATE_WINDOW,
    Alert,
    AlertPlan,
    Case,
    Recording,
    RuleGroup,
    Series,
    burn_factor,
    promql_label_value,
    runbook_url,
)
from archkit.plans.alerts.planner import alert_plan, plan

__all__ = [
    "ALERTS_RUNBOOK",
    "BURN_WINDOWS",
    "GROUP_ORDER",
    "RATE_WINDOW",
    "Alert",
    "AlertPlan",
    "Case",
    "Recording",
    "RuleGroup",
    "Series",
    "alert_plan",
    "burn_factor",
    "plan",
    "promql_label_value",
    "runbook_url",
]
