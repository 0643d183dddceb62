"""OpenSLO v1: a spec's SLOs as OpenSLO documents, and OpenSLO documents as a spec's `slos` section.

Export writes, per spec, one `Service`; per SLO one `SLI` (a `ratioMetric` of Prometheus
counters: `bad` or `good` over `total`, each a selector), one `SLO` (`indicatorRef`, a rolling
`timeWindow`, `budgetingMethod: Occurrences`, one objective with its `target`) and one
`AlertPolicy` per burn tier (a `burnrate` condition: threshold, `lookbackWindow` and
`alertAfter` = the short window). Where the stage and latency threshold go is kept in
`archkit.dev/...` annotations so that import gives back the same `slos` entries.

Import reads `SLO`, `SLI` and `AlertPolicy` documents (inline `indicator` or `indicatorRef`,
`target` or `targetPercent`, windows in days or weeks) and returns `slos` entries; a Prometheus
query is a selector, optionally inside `sum(rate(...[window]))`. archkit alerts on the Workbook's
four tiers whatever the AlertPolicies say; import reports policies that differ.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from archkit.errors import InputError
from archkit.plans.alerts.model import fmt_number
from archkit.plans.slo import TIERS, PlannedSlo, Selector, slo_plan, tier_factor
from archkit.spec.model import Slo, Spec

API = "openslo/v1"
ANN = "archkit.dev/"


class OpenSloError(InputError):
    """An OpenSLO document archkit cannot read (one line: file, document, field)."""


def _query(sel: Selector) -> dict[str, Any]:
    return {"metricSource": {"type": "Prometheus", "spec": {"query": str(sel)}}}


def export_documents(spec: Spec) -> list[dict[str, Any]]:
    """The OpenSLO v1 documents of the spec's SLOs (derived ones too), in a stable order."""
    plan = slo_plan(spec)
    docs: list[dict[str, Any]] = [
        {
            "apiVersion": API,
            "kind": "Service",
            "metadata": {"name": plan.service, "displayName": spec.metadata.title or plan.service},
            "spec": {"description": spec.metadata.description or f"archkit spec {plan.service}"},
        }
    ]
    for s in plan.slos:
        docs += _slo_documents(s)
    return docs


def _slo_documents(s: PlannedSlo) -> list[dict[str, Any]]:
    ratio: dict[str, Any] = {"counter": True}
    for key, sel in (("good", s.good), ("bad", s.bad), ("total", s.total)):
        if sel is not None:
            ratio[key] = _query(sel)
    ann = {ANN + "kind": s.kind}
    if s.stage:
        ann[ANN + "stage"] = s.stage
    if s.threshold_ms is not None:
        ann[ANN + "threshold-ms"] = fmt_number(s.threshold_ms)
    if s.kind == "latency" and not (s.slo is not None and s.slo.good and s.slo.total):
        ann[ANN + "events"] = "stage-histogram"  # import reads the stage's histogram again
    sli: dict[str, Any] = {"apiVersion": API, "kind": "SLI", "metadata": {"name": f"{s.service}-{s.name}-sli"},
           "spec": {"ratioMetric": ratio}}  # fmt: skip
    policies: list[dict[str, Any]] = []
    for tier, share, long_w, short_w, severity in TIERS:
        policies.append(
            {
                "apiVersion": API,
                "kind": "AlertPolicy",
                "metadata": {"name": f"{s.service}-{s.name}-burn-{tier.lower()}"},
                "spec": {
                    "description": f"{fmt_number(share * 100)} % of the budget in {long_w} ({severity})",
                    "alertWhenBreaching": True,
                    "conditions": [
                        {
                            "kind": "AlertCondition",
                            "metadata": {"name": f"{s.service}-{s.name}-burn-{tier.lower()}-condition"},
                            "spec": {
                                "severity": severity,
                                "condition": {
                                    "kind": "burnrate",
                                    "op": "gte",
                                    "threshold": float(fmt_number(tier_factor(share, long_w, s.window_days))),
                                    "lookbackWindow": long_w,
                                    "alertAfter": short_w,
                                },
                            },
                        }
                    ],
                },
            }
        )
    slo = {
        "apiVersion": API,
        "kind": "SLO",
        "metadata": {"name": f"{s.service}-{s.name}", "displayName": s.name, "annotations": ann},
        "spec": {
            "description": s.description or f"{s.kind} SLO {s.name}",
            "service": s.service,
            "indicatorRef": sli["metadata"]["name"],
            "timeWindow": [{"duration": s.window, "isRolling": True}],
            "budgetingMethod": "Occurrences",
            "objectives": [{"displayName": s.name, "target": s.objective}],
            "alertPolicies": [p["metadata"]["name"] for p in policies],
        },
    }
    return [sli, slo, *policies]


def dump_documents(docs: list[dict[str, Any]]) -> str:
    return yaml.safe_dump_all(docs, sort_keys=False, allow_unicode=True, width=100)


# --------------------------------------------------------------------------- import

_WRAPPED = re.compile(r"^\s*sum\s*\(\s*rate\s*\(\s*(.*?)\s*\[[^\]]+\]\s*\)\s*\)\s*$", re.S)
_SELECTOR = re.compile(r"^\s*([a-zA-Z_:][a-zA-Z0-9_:]*)?\s*(?:\{(.*)\})?\s*$", re.S)
_MATCHER = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)')


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), text)


def parse_selector(query: str) -> tuple[str, list[dict[str, str]]]:
    """(metric, matchers) of a PromQL selector, optionally inside sum(rate(...[w])); ValueError if not one."""
    m = _WRAPPED.match(query)
    text = m.group(1) if m else query
    sm = _SELECTOR.match(text)
    if sm is None:
        raise ValueError(f"not a selector: {query!r}")
    name, body = sm.group(1), sm.group(2) or ""
    matchers: list[dict[str, str]] = []
    pos = 0
    while pos < len(body.strip()):
        mm = _MATCHER.match(body, pos)
        if mm is None:
            raise ValueError(f"cannot read matchers at {body[pos:]!r}")
        label, op, value = mm.group(1), mm.group(2), _unescape(mm.group(3))
        if label == "__name__" and op == "=":
            name = value
        else:
            matchers.append({"label": label, "op": op, "value": value})
        pos = mm.end()
    if not name:
        raise ValueError(f"no metric name in {query!r}")
    return name, matchers


def _days(duration: str) -> int:
    m = re.fullmatch(r"([1-9][0-9]*)([dw])", str(duration).strip())
    if not m:
        raise ValueError(f"window {duration!r} is not a whole number of days or weeks")
    return int(m.group(1)) * (7 if m.group(2) == "w" else 1)


def _where(file: str, i: int, doc: dict[str, Any], field: str) -> str:
    name = (doc.get("metadata") or {}).get("name", "?")
    return f"{file}: document {i + 1} ({doc.get('kind')} {name}): {field}"


def import_documents(text: str, file: str = "<openslo>") -> tuple[list[dict[str, Any]], list[str]]:
    """(`slos` entries, notes) from OpenSLO v1 YAML; OpenSloError names file, document and field."""
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        raise OpenSloError(f"{file}{at}: not YAML: {getattr(exc, 'problem', exc)}") from None
    slis: dict[str, dict[str, Any]] = {}
    for i, d in enumerate(docs):
        if not isinstance(d, dict) or d.get("apiVersion") != API:
            raise OpenSloError(f"{file}: document {i + 1}: apiVersion is not {API}")
        if d.get("kind") == "SLI":
            slis[(d.get("metadata") or {}).get("name", "")] = d.get("spec") or {}
    out: list[dict[str, Any]] = []
    notes: list[str] = []
    for i, d in enumerate(docs):
        if d.get("kind") == "AlertPolicy":
            notes.append(_policy_note(d))
        if d.get("kind") != "SLO":
            continue
        out.append(_slo_entry(d, i, file, slis))
    for entry in out:
        try:
            Slo.model_validate(entry)
        except Exception as exc:  # pydantic's ValidationError: one line per document
            raise OpenSloError(
                f"{file}: SLO {entry.get('name')}: {str(exc).splitlines()[-1].strip()}"
            ) from None
    return out, [n for n in notes if n]


def _policy_note(d: dict[str, Any]) -> str:
    for c in (d.get("spec") or {}).get("conditions") or []:
        cond = (c.get("spec") or {}).get("condition") or {}
        if cond.get("kind") == "burnrate":
            known = {(lw, sw) for _, _, lw, sw, _ in TIERS}
            if (cond.get("lookbackWindow"), cond.get("alertAfter")) not in known:
                name = (d.get("metadata") or {}).get("name")
                return f"AlertPolicy {name}: archkit alerts on the SRE Workbook's four burn tiers instead"
    return ""


def _slo_entry(d: dict[str, Any], i: int, file: str, slis: dict[str, dict[str, Any]]) -> dict[str, Any]:
    spec = d.get("spec") or {}
    meta = d.get("metadata") or {}
    ann = meta.get("annotations") or {}
    if "indicator" in spec:
        sli = (spec["indicator"] or {}).get("spec") or {}
    elif spec.get("indicatorRef") in slis:
        sli = slis[spec["indicatorRef"]]
    else:
        raise OpenSloError(_where(file, i, d, f"spec.indicatorRef {spec.get('indicatorRef')!r} names no SLI"))
    ratio = sli.get("ratioMetric")
    if not isinstance(ratio, dict):
        raise OpenSloError(
            _where(file, i, d, "the SLI has no ratioMetric (threshold metrics are not supported)")
        )
    objectives = spec.get("objectives") or []
    if not objectives:
        raise OpenSloError(_where(file, i, d, "spec.objectives is empty"))
    obj = objectives[0]
    target = obj.get("target")
    if target is None and obj.get("targetPercent") is not None:
        target = float(obj["targetPercent"]) / 100
    windows = spec.get("timeWindow") or [{}]
    try:
        days = _days(windows[0].get("duration", ""))
    except ValueError as exc:
        raise OpenSloError(_where(file, i, d, f"spec.timeWindow[0].duration: {exc}")) from None
    name = obj.get("displayName") or meta.get("displayName") or meta.get("name")
    entry: dict[str, Any] = {"name": re.sub(r"[^A-Za-z0-9_.\-]", "-", str(name)), "objective": target}
    kind = ann.get(ANN + "kind", "availability")
    entry["kind"] = kind
    if ann.get(ANN + "stage"):
        entry["stage"] = ann[ANN + "stage"]
    entry["window"] = f"{days}d"
    if ann.get(ANN + "threshold-ms"):
        entry["threshold_ms"] = float(ann[ANN + "threshold-ms"])
    events: dict[str, Any] = {}
    for key in ("good", "bad", "total"):
        src = ratio.get(key)
        if src is None:
            continue
        query = ((src.get("metricSource") or {}).get("spec") or {}).get("query")
        if not isinstance(query, str):
            raise OpenSloError(_where(file, i, d, f"ratioMetric.{key}.metricSource.spec.query is missing"))
        try:
            metric, matchers = parse_selector(query)
        except ValueError as exc:
            raise OpenSloError(_where(file, i, d, f"ratioMetric.{key}: {exc}")) from None
        events[key] = {"metric": metric, "matchers": matchers} if matchers else {"metric": metric}
    if kind == "latency" and ann.get(ANN + "events") == "stage-histogram" and entry.get("threshold_ms"):
        return entry  # the stage's histogram gives the events back
    if kind == "latency" and "threshold_ms" not in entry:
        le = next(
            (m["value"] for m in events.get("good", {}).get("matchers", []) if m["label"] == "le"), None
        )
        if le is not None:
            entry["threshold_ms"] = float(le.rstrip("0*").replace("\\", "") or 0) * 1000
    entry.update(events)
    return entry


def spec_fragment(entries: list[dict[str, Any]]) -> str:
    """The `slos:` section as YAML, to paste into (or merge with) a spec."""
    return yaml.safe_dump({"slos": entries}, sort_keys=False, allow_unicode=True, width=100)
