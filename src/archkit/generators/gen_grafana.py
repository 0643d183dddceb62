"""The `grafana` generator: one dashboard per spec, built with grafana-foundation-sdk's typed builders.

Writes `grafana/dashboard.json`: a row of SLOs (burn rate per alert window against the tier
factors, remaining error budget), a row of golden signals (effective QPS, seed 004 §3.4), then
one row per data-flow stage in data-flow order (latency against the stage's P99 budget,
request rate and error ratio, Triton queue vs compute time where bound). Queries read the
recording rules of `prometheus/rules.yaml` (archkit.plans.alerts, archkit.plans.slo), so the
dashboard and the alerts show the same numbers.

Panel ids are stable (assigned in this order); `panel_ids` and `panel_url` tell the diagrams and
runbooks where a stage's or an SLO's panel is when `metadata.links.dashboard` is set (seed 000
§4.3: every diagram node tied to its dashboard panel).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from archkit.generators.registry import RenderContext, register
from archkit.plans.alerts.model import promql_label_value
from archkit.plans.alerts.planner import latency_query
from archkit.plans.slo import ALERT_WINDOWS, SLI_RECORD, TIERS, SloPlan, slo_plan, tier_factor
from archkit.spec.model import Spec, Stage

DATASOURCE_UID = "${datasource}"


@dataclass
class PanelSpec:
    """One planned panel: what it shows, before any builder (ids are stable across runs)."""

    id: int
    title: str
    kind: str  # timeseries | stat
    queries: list[tuple[str, str]]  # (expr, legend)
    unit: str = "short"
    description: str = ""
    thresholds: list[float] = field(default_factory=list)


@dataclass
class RowSpec:
    id: int
    title: str
    key: str  # "slo", "golden" or "stage:<id>"
    panels: list[PanelSpec] = field(default_factory=list)


def _sel(stage: str) -> str:
    return f'{{stage="{promql_label_value(stage)}"}}'


def dashboard_rows(spec: Spec, slos: SloPlan | None = None) -> list[RowSpec]:
    """The dashboard's rows and panels, with their ids (pure)."""
    slos = slos or slo_plan(spec)
    rows: list[RowSpec] = []
    next_id = iter(range(1, 10_000))
    if slos.slos:
        row = RowSpec(next(next_id), "SLOs", "slo")
        for s in slos.slos:
            factors = [tier_factor(share, lw, s.window_days) for _, share, lw, _, _ in TIERS]
            burn = [
                (f"{SLI_RECORD}{w}{s.selector} / {s.budget:.6g}", f"burn {w}")
                for w in ALERT_WINDOWS
                if w in {t[2] for t in TIERS}
            ]
            row.panels.append(
                PanelSpec(next(next_id), f"{s.name}: burn rate", "timeseries", burn, "x",
                          f"error ratio ÷ error budget ({s.objective:.6g} over {s.window})", sorted(factors))
            )  # fmt: skip
            row.panels.append(
                PanelSpec(next(next_id), f"{s.name}: error budget remaining", "stat",
                          [(f"archkit:slo_error_budget_remaining:ratio{s.selector}", s.name)], "percentunit",
                          f"share of the {s.window} budget left")
            )  # fmt: skip
        rows.append(row)
    gs = spec.observability.golden_signals
    if gs.effective_qps is not None:
        row = RowSpec(next(next_id), "Golden signals", "golden")
        q = gs.effective_qps
        from archkit.plans.alerts.model import Series

        expr = f"sum(rate({Series.of(q.metric, q.labels)}[5m]))"
        floor = [q.baseline_qps * q.alert_below_ratio] if q.baseline_qps else []
        row.panels.append(
            PanelSpec(next(next_id), "Effective QPS", "timeseries", [(expr, "effective QPS")], "reqps",
                      f"answers with confidence ≥ {q.confidence_floor:g} per second (seed 004 §3.4)", floor)
        )  # fmt: skip
        rows.append(row)
    bound = {sm.stage: sm for sm in spec.observability.stages}
    for st in spec.dataflow.stages:
        row = RowSpec(next(next_id), f"Stage {st.name or st.id}", f"stage:{st.id}")
        sm = bound.get(st.id)
        lat_q: list[tuple[str, str]] = []
        if sm is not None and sm.latency is not None:
            expr, kind, _, _ = latency_query(sm.latency, 0.99)
            lat_q.append((expr, f"{'P99' if kind == 'p99' else kind} latency"))
        budget = [st.p99_ms / 1000] if st.p99_ms else []
        row.panels.append(
            PanelSpec(next(next_id), f"{st.id}: latency vs budget", "timeseries", lat_q, "s",
                      f"P99 budget {st.p99_ms:g} ms" if st.p99_ms else "no P99 budget", budget)
        )  # fmt: skip
        traffic = [
            (f"archkit:stage_requests:rate5m{_sel(st.id)}", "requests/s"),
            (f"archkit:stage_error_ratio:rate5m{_sel(st.id)}", "error ratio"),
        ]
        row.panels.append(PanelSpec(next(next_id), f"{st.id}: traffic and errors", "timeseries", traffic))
        if sm is not None and (sm.queue is not None or sm.compute is not None):
            qc = []
            for ref, legend in ((sm.queue, "queue"), (sm.compute, "compute")):
                if ref is not None:
                    expr, _, _, _ = latency_query(ref, 0.99)
                    qc.append((expr, legend))
            row.panels.append(
                PanelSpec(next(next_id), f"{st.id}: {'engine' if st.llm else 'Triton'} queue vs compute",
                          "timeseries", qc, "s", "time waiting in the batcher's queue against time computing")
            )  # fmt: skip
        if st.llm is not None:
            row.panels += _llm_panels(st, next_id)
        rows.append(row)
    return rows


def _llm_panels(st: Stage, next_id: Iterator[int]) -> list[PanelSpec]:
    """An LLM stage's TTFT/ITL against its budgets and its KV cache, queue and preemptions."""
    from archkit.engines import adapter
    from archkit.plans.alerts.model import Series

    llm = st.llm
    assert llm is not None
    eng, ver = adapter(llm.engine.name.value), llm.engine.version
    labels = {eng.model_label: llm.model.name} if eng.model_label and llm.model.name else {}
    tok = [
        (f"{rec}{_sel(st.id)}", legend)
        for measure, rec, legend in (
            ("ttft_seconds", "archkit:llm_ttft_seconds:p99_rate5m", "TTFT P99"),
            ("itl_seconds", "archkit:llm_itl_seconds:p99_rate5m", "ITL P99"),
        )
        if eng.has(measure)
    ]
    b = llm.budgets
    budgets = sorted(x / 1000 for x in (b.ttft_p99_ms, b.itl_p99_ms) if x is not None)
    load = []
    for measure, legend, fn in (
        ("kv_cache_usage", "KV cache used (ratio)", "max({})"),
        ("running_requests", "running", "sum({})"),
        ("waiting_requests", "waiting", "sum({})"),
        ("preemptions", "preemptions/s", "sum(rate({}[5m]))"),
    ):
        if eng.has(measure) and (measure != "preemptions" or eng.metric(measure, ver).kind == "counter"):
            load.append((fn.format(Series.of(eng.metric(measure, ver).name, labels)), legend))
    return [
        PanelSpec(next(next_id), f"{st.id}: TTFT and ITL vs budget", "timeseries", tok, "s",
                  f"{eng.title}: P99 time to first token and inter-token latency (docs/llm.md)", budgets),
        PanelSpec(next(next_id), f"{st.id}: KV cache, queue and preemptions", "timeseries", load, "short",
                  f"max_num_seqs {llm.engine.max_num_seqs}; a full KV cache preempts (AK702)"),
    ]  # fmt: skip


def panel_ids(spec: Spec) -> dict[str, int]:
    """'stage:<id>' -> its row's first panel, 'slo:<name>' -> its burn panel, 'golden' -> effective QPS."""
    out: dict[str, int] = {}
    for row in dashboard_rows(spec):
        if row.key == "slo":
            for p in row.panels:
                if p.title.endswith(": burn rate"):
                    out["slo:" + p.title.removesuffix(": burn rate")] = p.id
        elif row.panels:
            out[row.key] = row.panels[0].id
    return out


def panel_url(spec: Spec, key: str, ids: dict[str, int] | None = None) -> str | None:
    """`metadata.links.dashboard` + `?viewPanel=<id>` for a stage ('stage:<id>') or SLO ('slo:<name>').

    `ids` (from `panel_ids`) saves planning the dashboard again for each of many links.
    """
    base = spec.metadata.links.get("dashboard")
    if not base:
        return None
    pid = (ids if ids is not None else panel_ids(spec)).get(key)
    if pid is None:
        return None
    return f"{base}{'&' if '?' in base else '?'}viewPanel={pid}"


def build_dashboard(spec: Spec, slos: SloPlan | None = None) -> Any:
    """The dashboard as grafana-foundation-sdk's `Dashboard` model."""
    from grafana_foundation_sdk.builders import dashboard as gd
    from grafana_foundation_sdk.builders import prometheus as gp
    from grafana_foundation_sdk.builders import stat as gs
    from grafana_foundation_sdk.builders import timeseries as gt
    from grafana_foundation_sdk.models import dashboard as dm

    ds = dm.DataSourceRef(type_val="prometheus", uid=DATASOURCE_UID)
    name = spec.metadata.name
    b = (
        gd.Dashboard(f"{spec.metadata.title or name} (archkit)")
        .uid(f"archkit-{name}"[:40])
        .tags(["archkit", name])
        .time("now-6h", "now")
        .refresh("1m")
        .with_variable(gd.DatasourceVariable("datasource").label("Prometheus").type("prometheus"))
    )
    for row in dashboard_rows(spec, slos):
        b = b.with_row(gd.Row(row.title).id(row.id))
        for p in row.panels:
            panel = (gs.Panel() if p.kind == "stat" else gt.Panel()).id(p.id).title(p.title).unit(p.unit)
            panel = panel.datasource(ds).description(p.description).span(12 if p.kind == "timeseries" else 6)
            for i, (expr, legend) in enumerate(p.queries):
                panel = panel.with_target(gp.Dataquery().expr(expr).legend_format(legend).ref_id(chr(65 + i)))
            if p.thresholds:
                steps = [dm.Threshold(value=None, color="green")]
                colors = ["yellow", "orange", "red", "dark-red"]
                steps += [dm.Threshold(value=v, color=colors[min(i, 3)]) for i, v in enumerate(p.thresholds)]
                panel = panel.thresholds(gd.ThresholdsConfig().mode(dm.ThresholdsMode.ABSOLUTE).steps(steps))
            b = b.with_panel(panel)
    return b.build()


def dashboard_json(spec: Spec, slos: SloPlan | None = None) -> str:
    from grafana_foundation_sdk.cog.encoder import JSONEncoder

    return json.dumps(build_dashboard(spec, slos), cls=JSONEncoder, sort_keys=True, indent=2) + "\n"


@register(
    "grafana",
    order=72,
    source="seed 000 §4.3 (dashboards tied to the diagram's nodes); seed 004 §3.4 (golden signals)",
)
def generate(ctx: RenderContext) -> dict[str, str]:
    """A Grafana dashboard: SLO burn and budget, effective QPS, one row per data-flow stage."""
    try:
        text = dashboard_json(ctx.spec, ctx.plans.slos)
    except ImportError:
        return {
            "grafana/README.txt": "The dashboard needs grafana-foundation-sdk: pip install 'archkit[render]'\n"
        }
    return {"grafana/dashboard.json": text}
