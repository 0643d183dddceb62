"""The `runbooks` generator: a runbook per fault tree, the alert index, the pre-launch checklist, onboarding pages.

Files (under `runbooks/`):
- `<tree-id>.md`: the tree's checks ordered by importance per second of check (see
  `archkit.faulttree.ranked_events`), each with its command, expected output, what a
  mismatch means and the remedy; minimal cut sets, single points of failure, escalation.
  Every check has a stable anchor `check-<event-id>` (seed 000 §3.4: root cause in five
  minutes by walking checks in order).
- `alerts.md`: one section per generated Prometheus alert, anchor `alert-<name>`; every
  alert's `runbook_url` points here, and each section leads on to the tree to walk.
- `checklist.md`: the pre-launch checklist (seed 000 §6: every pitfall of seed 000 §5 as a
  line, plus seed 004 §4's lessons), pre-filled from `archkit check` findings.
- `onboarding/<service>.md`: deploy, roll back, verify after rollback (seed 000 §5.12),
  metrics, log keywords and the load-test command of one service (seed 000 §6).

Anchors are explicit `<a id="..."></a>` tags, so links do not depend on a Markdown
renderer's heading slugs.
"""

from __future__ import annotations

import html
import os
import re
import shlex
from dataclasses import dataclass
from typing import Any

from archkit import engines
from archkit.checks.registry import selected_codes
from archkit.diagnostics import Diagnostic, Severity
from archkit.generators.gen_dataflow import stage_homes
from archkit.generators.governance_text import governance
from archkit.generators.jinja import md_text, render
from archkit.generators.registry import RenderContext, register
from archkit.generators.runbook_causes import cause_text, check_anchor, cut_sets_by_event
from archkit.plans.alerts import ALERTS_RUNBOOK, Alert
from archkit.plans.runbook import RunbookOrder, runbook_order
from archkit.runbook.terminal import shown
from archkit.spec.model import BasicEvent, FaultTree, Service, Spec

# --------------------------------------------------------------------------- Markdown helpers


def fence(text: str, lang: str = "") -> str:
    """A fenced code block that no backtick run inside `text` can close."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    body = text.replace("\r", "")
    return f"{ticks}{lang}\n{body}\n{ticks}"


def code(text: str) -> str:
    """An inline code span for any single-line text."""
    s = str(text).replace("\r", "").replace("\n", " ")
    longest = max((len(m) for m in re.findall(r"`+", s)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") or not s.strip() else ""
    return f"{ticks}{pad}{s}{pad}{ticks}"


def anchor(name: str) -> str:
    return f'<a id="{html.escape(name, quote=True)}"></a>'


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x * 100:.4g} %"


def _num(x: float | None) -> str:
    return "—" if x is None else f"{x:.6g}"


# --------------------------------------------------------------------------- the checklist table


@dataclass(frozen=True)
class ChecklistLine:
    """One pre-launch item: the pitfall it guards against, where it comes from, the rules that check it."""

    key: str
    title: str
    source: str
    codes: tuple[str, ...]


# seed 000 §6: "write an architecture self-check list containing every one of the 12 pitfalls
# above and tick it line by line before each launch"; seed 004 §4 adds its lessons.
CHECKLIST: tuple[ChecklistLine, ...] = (
    ChecklistLine(
        "model-versions",
        "Model versions are pinned (versioned path + sha256), `latest` is only a pointer, "
        "two versions stay loaded",
        "seed 000 §5.1",
        ("AK311", "AK312"),
    ),
    ChecklistLine(
        "log-levels",
        "Log levels are set (INFO in production; ERROR only for unrecoverable faults)",
        "seed 000 §5.2",
        ("AK611",),
    ),
    ChecklistLine(
        "clock-sync",
        "Clocks are synchronised (NTP enabled, drift < 10 ms)",
        "seed 000 §5.3",
        ("AK605", "AK614"),
    ),
    ChecklistLine(
        "memory-leak",
        "Long-running workers release GPU memory (DataLoader workers, empty_cache)",
        "seed 000 §5.4",
        ("AK616",),
    ),
    ChecklistLine(
        "mtu",
        "GPU/RDMA network MTU is large (65520 on InfiniBand), not the 1500 default",
        "seed 000 §5.5",
        ("AK308",),
    ),
    ChecklistLine(
        "file-handles",
        "File-handle limit covers the connections (ulimit -n 65536, not 1024)",
        "seed 000 §5.6",
        ("AK309",),
    ),
    ChecklistLine(
        "dns",
        "DNS resolution is fast and fails over (timeout:1 attempts:2 rotate; lookups < 50 ms)",
        "seed 000 §5.7",
        ("AK323",),
    ),
    ChecklistLine(
        "cuda-context",
        "CPU-only work does not hold a GPU or its CUDA context",
        "seed 000 §5.8",
        ("AK303", "AK304"),
    ),
    ChecklistLine(
        "os-tuning",
        "OS parameters are set (somaxconn 65535, swappiness 1, file-max)",
        "seed 000 §5.9",
        ("AK310", "AK322"),
    ),
    ChecklistLine(
        "quantization",
        "Quantisation is declared per model with its measured accuracy drop",
        "seed 000 §5.10",
        ("AK612",),
    ),
    ChecklistLine(
        "security-groups",
        "Inference ports are not reachable from the internet; public ingress needs authentication",
        "seed 000 §5.11",
        ("AK504", "AK505"),
    ),
    ChecklistLine(
        "rollback",
        "Rollback is verified: models loaded, golden-set outputs unchanged",
        "seed 000 §5.12",
        ("AK313",),
    ),
    ChecklistLine(
        "model-artifacts",
        "Model artifacts come from a versioned bucket and are checked against their SHA256 before loading",
        "seed 004 §4.1",
        ("AK311",),
    ),
    ChecklistLine(
        "no-raw-payload-logs",
        "No raw payloads (image Base64, audio) in logs: log MD5 and size",
        "seed 004 §4.2",
        ("AK506",),
    ),
    ChecklistLine(
        "training-data",
        "Sensitive and training data are encrypted; KMS keys rotate within 90 days",
        "seed 004 §4.3",
        ("AK501", "AK507"),
    ),
    ChecklistLine(
        "gpu-concurrency",
        "GPU work is bounded (bounded queues, utilisation below 0.8)",
        "seed 004 §4.4",
        ("AK211", "AK204"),
    ),
    ChecklistLine(
        "latency-capacity",
        "Latency budgets and capacity hold at the design rate (predicted P99, utilisation, batch queue)",
        "seed 000 §2.1",
        ("AK201", "AK202", "AK203", "AK204", "AK205", "AK206", "AK209", "AK210"),
    ),
    ChecklistLine(
        "resilience",
        "Every call has a timeout, bounded retries, a fallback; external calls a breaker",
        "seed 000 §3.2",
        ("AK401", "AK402", "AK403", "AK404", "AK405", "AK406", "AK408", "AK409"),
    ),
    ChecklistLine(
        "observability",
        "Every stage is bound to a latency series; effective QPS, cold start and drift are watched",
        "seed 000 §4.3, seed 004 §3.4",
        ("AK601", "AK602", "AK603", "AK604"),
    ),
    ChecklistLine(
        "fault-trees",
        "Every service's fault tree is well formed and every leaf has a check, an "
        "expectation and a probability",
        "seed 000 §3.4",
        ("AK108", "AK109", "AK110"),
    ),
    ChecklistLine(
        "minimum-viable",
        "Only the components the first scenario needs are in the first release",
        "seed 004 §4.5",
        (),
    ),
)


def checklist_rows(
    spec: Spec, diagnostics: list[Diagnostic], registered: set[str] | None = None
) -> list[dict[str, Any]]:
    """Each checklist line with its status: ✓ (checked, no finding), ✗ (findings) or not checked.

    A code counts as checked when the registry would run it on this spec (its select/ignore);
    `registered` narrows that further (a test's own catalogue).
    """
    run = selected_codes(spec) if registered is None else selected_codes(spec) & registered
    rows = []
    for line in CHECKLIST:
        active = [c for c in line.codes if c in run]
        findings = [d for d in diagnostics if d.code in line.codes and d.severity is not Severity.INFO]
        if findings:
            status = "✗"
        elif active:
            status = "✓"
        else:
            status = "not checked"
        rows.append(
            {
                "line": line,
                "status": status,
                "active": active,
                "findings": sorted(findings, key=lambda d: (d.code, d.line or 0, d.col or 0, d.message)),
            }
        )
    return rows


# --------------------------------------------------------------------------- trees


def _expectation(e: BasicEvent) -> str:
    parts = []
    if e.expect is not None:
        parts.append(f"output contains {code(e.expect)}")
    if e.expect_regex is not None:
        parts.append(f"output matches the regular expression {code(e.expect_regex)}")
    if e.expect_exit_code is not None:
        parts.append(f"exit code {e.expect_exit_code}")
    return "; ".join(parts) if parts else "no expectation declared — judge the output by hand"


def _order(orders: dict[str, RunbookOrder], tree: FaultTree) -> RunbookOrder:
    """The planned order of this very tree (a duplicated tree id, an AK102 error, gets its own)."""
    found = orders.get(tree.id)
    return found if found is not None and found.tree is tree else runbook_order(tree)


SHOWN_CUT_SETS = 50  # the page's cut-set table; the rest are counted


def _tree_page(spec: Spec, order: RunbookOrder, alerts: list[Alert]) -> dict[str, Any]:
    tree, events, analysis, error = order.tree, order.events, order.analysis, order.error
    labels: dict[str, str | None] = {}
    for x in tree.events:
        labels.setdefault(x.id, x.label)  # the first of duplicate ids, as before
    by_event = cut_sets_by_event(analysis) if analysis else {}
    checks = []
    for i, e in enumerate(events, 1):
        checks.append(
            {
                "n": i,
                "id": e.id,
                "anchor": anchor(check_anchor(e.id)),
                "check_id": check_anchor(e.id),
                "label": e.label or e.id,
                "command": fence(e.check, "sh") if e.check else None,
                "expect": _expectation(e),
                "timeout": f"{_num(e.timeout_s)} s",
                "cost": f"{_num(e.cost_s)} s" if e.cost_s is not None else "—",
                "probability": _num(analysis.event_probabilities.get(e.id)) if analysis else "—",
                "fv": _pct(analysis.fussell_vesely.get(e.id))
                if analysis and analysis.probability is not None
                else "—",
                "birnbaum": _num(analysis.birnbaum.get(e.id))
                if analysis and analysis.probability is not None
                else "—",
                "mismatch": e.mismatch_means,
                "cause": cause_text(labels, e.id, analysis, by_event),
                # a remedy is prose that may quote commands, not a script: not labelled as shell
                "remedy": fence(e.remedy, "text") if e.remedy else None,
            }
        )
    cut_sets = []
    if analysis:
        for c in analysis.cut_sets[:SHOWN_CUT_SETS]:
            cut_sets.append(
                {
                    "events": ", ".join(code(x) for x in sorted(c)),
                    "links": ", ".join(f"[{md_text(x)}](#{check_anchor(x)})" for x in sorted(c)),
                    "probability": _num(analysis.cut_set_probability(c)),
                }
            )
    owners = ", ".join(md_text(o) for o in spec.metadata.owners)
    return {
        "tree": tree,
        "label": tree.label or tree.id,
        "checks": checks,
        "error": error,
        "analysis": analysis,
        "cut_sets": cut_sets,
        "more_cut_sets": max(0, len(analysis.cut_sets) - SHOWN_CUT_SETS) if analysis else 0,
        "probability": _num(analysis.probability) if analysis else "—",
        "rare_event": _num(analysis.rare_event) if analysis else "—",
        "spofs": [f"[{md_text(x)}](#{check_anchor(x)})" for x in analysis.single_points_of_failure]
        if analysis
        else [],
        "missing": analysis.missing_probability if analysis else [],
        "escalation": tree.escalation,
        "owners": owners,
        "mission": f"{_num(tree.mission_time_h)} h" if tree.mission_time_h else None,
        "alerts": [
            {"name": a.name, "anchor": a.anchor, "severity": a.severity} for a in alerts if a.tree == tree.id
        ],
        "first_check": check_anchor(events[0].id) if events else "escalation",
        # the rendered diagram beside this page in the output tree (runbooks/ and faulttree/)
        "diagram": f"../faulttree/{tree.id}.svg",
    }


# --------------------------------------------------------------------------- onboarding


def _service_page(spec: Spec, svc: Service, alerts: list[Alert], spec_name: str) -> dict[str, Any]:
    stages = [st for st in spec.dataflow.stages if st.service == svc.id]
    stage_ids = {st.id for st in stages}
    metrics = []
    for sm in spec.observability.stages:
        if sm.stage in stage_ids:
            for kind in ("latency", "errors", "requests", "queue", "compute"):
                ref = getattr(sm, kind)
                if ref is not None:
                    labels = ", ".join(f"{k}={v}" for k, v in sorted(ref.labels.items()))
                    metrics.append(
                        {
                            "stage": sm.stage,
                            "kind": kind,
                            "metric": code(ref.metric),
                            "type": ref.type.value,
                            "labels": code(labels) if labels else "",
                        }
                    )
    kube = svc.kubernetes
    # every spec value in a generated command is shell-quoted (names are also checked by AK314)
    kind_name = shlex.quote(f"{kube.kind.lower()}/{kube.name or svc.id}") if kube else None
    ns = f" -n {shlex.quote(kube.namespace)}" if kube else ""
    deploy = svc.deploy_command
    rollback = svc.rollback_command or (f"kubectl rollout undo {kind_name}{ns}" if kube else None)
    status = f"kubectl rollout status {kind_name}{ns} --timeout=5m" if kube else None
    http_port = next((p.port for p in svc.ports if p.purpose == "http"), None)
    verify = []
    for st in stages:
        m = st.model
        if m is None:
            continue
        item = {
            "stage": st.id,
            "model": code(m.name),
            "version": code(m.version) if m.version else "—",
            "sha256": code(m.sha256) if m.sha256 else "—",
            "loaded": None,
            "golden": None,
            "golden_set": code(m.rollback.golden_set) if m.rollback and m.rollback.golden_set else None,
            "expect": code(m.rollback.expect) if m.rollback and m.rollback.expect else None,
        }
        ready = _model_ready_path(m.server, m.name, m.version)
        if ready is not None and http_port:
            path = ready
            item["loaded"] = fence(
                f"curl -sf -o /dev/null -w '%{{http_code}}\\n' "
                f"'http://localhost:{http_port}{_shell_safe_path(path)}'",
                "sh",
            )
        if m.rollback and m.rollback.command:
            item["golden"] = fence(m.rollback.command, "sh")
        verify.append(item)
    lt = spec.loadtest
    loadtest = None
    # the load test enters at its target and drives every stage on the path, so it belongs to
    # the target service and to every service that runs a stage
    if lt is not None and (lt.target.service in (None, svc.id) or svc.public or stages):
        loadtest = [
            fence(f"archkit loadtest {spec_name} --level {shlex.quote(lv.id)}", "sh") for lv in lt.levels
        ]
    trees = [t for t in spec.faulttrees if t.service == svc.id]
    gs = spec.observability.logging
    return {
        "svc": svc,
        "stages": stages,
        # the data-flow diagram's nodes link to these sections (external stages included)
        "linked_stages": [k for k, v in stage_homes(spec).items() if v == svc.id],
        "governance": governance(spec, stages, code),  # owners, failure causes, confidence breakers
        "metrics": metrics,
        "deploy": fence(deploy, "sh") if deploy else None,
        "rollback": fence(rollback, "sh") if rollback else None,
        "rollback_declared": svc.rollback_command is not None,
        "status": fence(status, "sh") if status else None,
        "verify": verify,
        "loadtest": loadtest,
        "loadtest_target": code(lt.target.host) if lt is not None else None,
        "keywords": [code(k) for k in svc.log_keywords],
        "never_log": [code(k) for k in (gs.never_log if gs else [])],
        "required_fields": [code(k) for k in (gs.required_fields if gs else [])],
        "log_level": gs.level if gs else None,
        "trees": [{"id": t.id, "label": t.label or t.id} for t in trees],
        "alerts": [
            {"name": a.name, "anchor": a.anchor, "severity": a.severity, "stage": a.stage}
            for a in alerts
            if a.stage in stage_ids or (a.service == svc.id and a.stage is None)
        ],
        "ports": [{"name": p.name, "port": p.port, "purpose": p.purpose} for p in svc.ports],
    }


def _model_ready_path(server: str | None, model: str, version: str | None) -> str | None:
    """The serving engine's "this model (and version) is loaded and ready" path, when its adapter
    has one (Triton's KServe v2 API answers 200); None for an engine without it."""
    name = (server or "").lower()
    if name not in engines.names():
        return None
    ep = engines.adapter(name).endpoints
    # model versions are integers there; a release label such as "1.2.0" is not one
    if version is not None and version.isdigit() and ep.model_version_ready:
        return ep.model_version_ready.format(model=model, version=version)
    return ep.model_ready.format(model=model) if ep.model_ready else None


def _shell_safe_path(path: str) -> str:
    """A URL path safe inside single quotes: quotes percent-encoded."""
    return path.replace("'", "%27").replace("\n", "%0A")


# --------------------------------------------------------------------------- the generator


def _alert_pages(spec: Spec, alerts: list[Alert], orders: dict[str, RunbookOrder]) -> list[dict[str, Any]]:
    trees = {t.id: t for t in spec.faulttrees}
    # a tree whose analysis fails has no trustworthy first check: the alert leads to escalation
    first = {
        tid: check_anchor(o.first.id) if o.first is not None and o.error is None else "escalation"
        for tid, o in orders.items()
    }
    out = []
    ids = _dashboard_panels(spec)
    for a in alerts:
        out.append(
            {
                "name": a.name,
                "anchor": anchor(a.anchor),
                "severity": a.severity,
                "summary": md_text(a.summary),
                "description": md_text(a.description),
                "expr": fence(a.expr, "promql"),
                "for": a.for_,
                "stage": a.stage,
                "service": a.service,
                "tree": a.tree,
                "tree_label": md_text((trees[a.tree].label or a.tree) if a.tree else ""),
                "first_check": first.get(a.tree or "", "escalation"),
                "series": [code(s) for s in a.series],
                "dashboard": _panel_link(spec, a, ids),
            }
        )
    return out


def _dashboard_panels(spec: Spec) -> dict[str, int]:
    """The dashboard's panel ids, planned once per page set (none without a dashboard link)."""
    from archkit.generators.gen_grafana import panel_ids

    return panel_ids(spec) if spec.metadata.links.get("dashboard") else {}


def _panel_link(spec: Spec, a: Alert, ids: dict[str, int]) -> str | None:
    """The alert's Grafana panel (its SLO's or its stage's) when `metadata.links.dashboard` is set."""
    from urllib.parse import quote

    from archkit.generators.gen_grafana import panel_url

    slo = a.labels.get("archkit_slo")
    key = f"slo:{slo}" if slo else f"stage:{a.stage}" if a.stage else None
    url = panel_url(spec, key, ids) if key else None
    return quote(url, safe=":/?#@!$&'*+,;=%-._~") if url else None


@register(
    "runbooks",
    order=65,
    source="seed 000 §3.4 (walk the fault tree), §6 (pre-release checklist and onboarding pages)",
)
def generate(ctx: RenderContext) -> dict[str, str]:
    """Runbooks from the fault trees, the alert index, the pre-launch checklist and onboarding pages."""

    spec = ctx.spec
    header = ctx.header("<!--") + " -->"
    # commands name the spec as the user gave it (relative to where they run archkit), or by
    # file name when the path is absolute: generated files must not depend on the machine
    spec_ref = shlex.quote(
        ctx.spec_path if not os.path.isabs(ctx.spec_path) and ctx.spec_path != "<spec>" else ctx.spec_name
    )
    alerts, orders = ctx.plans.alerts.alerts, ctx.plans.runbooks

    def page(template: str, **values: Any) -> str:
        text = render(
            f"runbooks/{template}", ctx.templates_dir, header=header, spec=spec, spec_name=spec_ref, **values
        )
        # control, bidi and invisible characters from the spec are shown escaped, as the terminal
        # shows them (archkit.runbook.terminal): an ESC sequence or U+202E in a label or a command
        # must not recolour or reorder what the on-call engineer reads in a viewer or `cat`
        return shown(text, keep="\n\t")

    files: dict[str, str] = {}
    for tree in spec.faulttrees:
        files[f"runbooks/{tree.id}.md"] = page(
            "tree.md.j2", page=_tree_page(spec, _order(orders, tree), alerts), md=md_text, code=code
        )
    files[f"runbooks/{ALERTS_RUNBOOK}"] = page("alerts.md.j2", alerts=_alert_pages(spec, alerts, orders))
    rows = checklist_rows(spec, ctx.diagnostics)
    files["runbooks/checklist.md"] = page("checklist.md.j2", rows=rows, md=md_text, code=code)
    for svc in spec.topology.services:
        files[f"runbooks/onboarding/{svc.id}.md"] = page(
            "onboarding.md.j2", page=_service_page(spec, svc, alerts, spec_ref), md=md_text, code=code
        )
    return files
