"""The `prometheus` generator: renders the alert plan as recording rules, alerts and promtool tests.

Writes `prometheus/rules.yaml` and `prometheus/rules.test.yaml` (`promtool test rules`).
What is alerted on, with which expression and thresholds, is the alert plan
(`archkit.plans.alerts`, computed once per run); this module only turns it into YAML.

Every alert carries `severity`, `summary` and a `runbook_url` that points at a section of
the generated `runbooks/alerts.md` (see `archkit.plans.alerts.runbook_url`). YAML is written
by `yaml.safe_dump`.

Each alert comes with two promtool tests: input series that must fire it and series that
must not. Alerts carry no templated annotations, so promtool's exact comparison of
annotations never depends on float formatting.
"""

from __future__ import annotations

from typing import Any

import yaml

from archkit.generators.jinja import prom_literal, render
from archkit.generators.registry import RenderContext, register
from archkit.plans.alerts import ALERTS_RUNBOOK, Alert, AlertPlan, alert_plan, runbook_url
from archkit.spec.model import Spec


def _alert_rule(spec: Spec, a: Alert) -> dict[str, Any]:
    rule: dict[str, Any] = {"alert": a.name, "expr": a.expr}
    if a.for_:
        rule["for"] = a.for_
    # Prometheus expands an alert's labels and annotations as Go templates: spec text in them
    # is made literal (prom_literal); the promtool tests expect the text as written
    rule["labels"] = {k: prom_literal(v) for k, v in {**a.labels, "severity": a.severity}.items()}
    rule["annotations"] = {k: prom_literal(v) for k, v in _annotations(spec, a).items()}
    return rule


def _annotations(spec: Spec, a: Alert) -> dict[str, str]:
    notes = {
        "summary": a.summary,
        "description": a.description,
        "runbook_url": runbook_url(spec, ALERTS_RUNBOOK, a.anchor),
    }
    dashboard = spec.metadata.links.get("dashboard")
    if dashboard:  # the on-call engineer's second click after the runbook (seed 000 §6)
        notes["dashboard"] = dashboard
    return notes


def rules_document(spec: Spec, plan: AlertPlan | None = None) -> dict[str, Any]:
    """The rules.yaml document: the plan's rule groups in file order."""
    plan = plan or alert_plan(spec)
    groups: list[dict[str, Any]] = []
    for g in plan.groups:
        rules = [{"record": r.record, "expr": r.expr, "labels": r.labels} for r in g.recordings]
        rules += [_alert_rule(spec, a) for a in g.alerts]
        groups.append({"name": g.name, "rules": rules})
    return {"groups": groups}


def unit_tests_document(
    spec: Spec, rules_file: str = "rules.yaml", plan: AlertPlan | None = None
) -> dict[str, Any]:
    """The promtool test document: each alert fires on its `fire` case and stays quiet on `quiet`."""
    plan = plan or alert_plan(spec)
    tests = []
    for a in plan.alerts:
        exp = {"exp_labels": {**a.labels, "severity": a.severity}, "exp_annotations": _annotations(spec, a)}
        for case, expect, word in ((a.fire, [exp], "fires"), (a.quiet, [], "stays quiet")):
            if case is None:
                continue
            tests.append(
                {
                    "name": f"{a.name} {word}",
                    "interval": f"{case.interval_min}m",
                    "input_series": [{"series": s, "values": v} for s, v in case.series],
                    "alert_rule_test": [
                        {"eval_time": f"{case.eval_min}m", "alertname": a.name, "exp_alerts": expect}
                    ],
                }
            )
    by_name = {a.name: a for a in plan.alerts}
    for m in plan.matrices:  # the SLO burn tiers at one burn rate: which fire, which stay quiet
        checks = []
        for name, fires in m.expect.items():
            a = by_name[name]
            exp = {
                "exp_labels": {**a.labels, "severity": a.severity},
                "exp_annotations": _annotations(spec, a),
            }
            checks.append(
                {"eval_time": f"{m.case.eval_min}m", "alertname": name, "exp_alerts": [exp] if fires else []}
            )
        tests.append(
            {
                "name": m.name,
                "interval": f"{m.case.interval_min}m",
                "input_series": [{"series": s, "values": v} for s, v in m.case.series],
                "alert_rule_test": checks,
            }
        )
    return {"rule_files": [rules_file], "evaluation_interval": "1m", "tests": tests}


def dump(doc: dict[str, Any]) -> str:
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100, default_flow_style=False)


@register(
    "prometheus",
    order=70,
    source="seed 000 §4.3 (every metric the diagram promises is instrumented and alerted); seed 004 §3.4 (each alert tied to an action)",
)
def generate(ctx: RenderContext) -> dict[str, str]:
    """Prometheus recording and alerting rules with runbook links, plus their promtool unit tests."""
    spec, plan = ctx.spec, ctx.plans.alerts
    header = ctx.header("#")
    rules = render(
        "prometheus/rules.yaml.j2", ctx.templates_dir, header=header, body=dump(rules_document(spec, plan))
    )
    tests = render(
        "prometheus/rules.test.yaml.j2",
        ctx.templates_dir,
        header=header,
        body=dump(unit_tests_document(spec, plan=plan)),
    )
    return {"prometheus/rules.yaml": rules, "prometheus/rules.test.yaml": tests}
