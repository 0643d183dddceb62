"""Data-flow diagram (Graphviz): stages with budgets, volume, failure rate; planes as clusters."""

from __future__ import annotations

import math
import subprocess
from typing import Any

from archkit.checks.ak115_stage_without_owner import owner_of
from archkit.generators.diagram_text import html, html_lines, num, pct, wrap
from archkit.generators.jinja import render
from archkit.generators.measured import Measured, over_budget, read_measured
from archkit.generators.registry import RenderContext, register
from archkit.perf.resources import reach
from archkit.spec.model import Edge, Spec, Stage

# Seed 004 §2.2: the data, control and policy planes are physical boundaries; colours per plane.
PLANE_STYLE = {
    "data": ("data plane", "#eef4fb"),
    "control": ("control plane", "#f3eefb"),
    "policy": ("policy plane", "#fbf5e8"),
}
KIND_FILL = {
    "model": "#dbeafe",
    "ingress": "#e5e7eb",
    "gateway": "#e5e7eb",
    "store": "#fef3c7",
    "cache": "#fef3c7",
    "queue": "#fde68a",
    "external": "#f3f4f6",
    "rules": "#ede9fe",
    "human": "#fce7f3",
    "llm": "#d1fae5",
}
# Beyond this many stages the diagram is folded into rows with edge labels as tooltips only:
# a pipeline of 200 stages laid out by flow depth is 200 ranks long (25,000 px in one column,
# beyond cairo's 32,767 px PNG limit at 1,000), and edge labels start to collide. Each row
# holds the stages of ROW_DEPTHS consecutive flow depths, left to right.
LARGE = 40
ROW_DEPTHS = 8
FAIL_RED = "#d62728"
OVER_FILL = "#fecaca"


def measured_of(ctx: RenderContext) -> Measured | None:
    """The load-test report of this render, parsed once."""
    return ctx.memo("measured", lambda: read_measured(ctx.measured) if ctx.measured else None)


def stage_latency(stage: Stage | None) -> float | None:
    if stage is None:
        return None
    return stage.p99_ms if stage.p99_ms is not None else stage.p50_ms


def _stage_label(
    st: Stage, threshold: float, figures: dict[str, float], over: list[str], owner: str | None = None
) -> str:
    rows = []
    title = st.name or st.id
    rows.append(f'<TR><TD ALIGN="LEFT" BALIGN="LEFT"><B>{html_lines(title, 30, 120)}</B></TD></TR>')
    sub = f"{st.kind.value}"
    if st.name and st.name != st.id:
        sub = f"{st.id} · {sub}"
    rows.append(
        f'<TR><TD ALIGN="LEFT" BALIGN="LEFT"><FONT POINT-SIZE="8" COLOR="#555555">{html_lines(sub, 40, 160)}'
        f"</FONT></TD></TR>"
    )
    budget = " · ".join(
        f"{k} {num(v, 'ms')}" for k, v in (("P50", st.p50_ms), ("P99", st.p99_ms)) if v is not None
    )
    if budget:
        rows.append(f'<TR><TD ALIGN="LEFT" BALIGN="LEFT">budget {html(budget)}</TD></TR>')
    if st.failure_rate is not None:  # volumes are on the arrows; only declared figures here
        colour = FAIL_RED if st.failure_rate > threshold else "#222222"
        fail = f"failure rate {pct(st.failure_rate)}"
        if st.failure_cause:  # seed 000 §3.1 draws the cause beside the rate ("1.2 %, OOM on long audio")
            fail += f": {st.failure_cause}"
        rows.append(
            f'<TR><TD ALIGN="LEFT" BALIGN="LEFT"><FONT COLOR="{colour}">{html_lines(fail, 36, 200)}</FONT></TD></TR>'
        )
    if st.model is not None:
        m = st.model
        desc = m.name + (f" {m.version}" if m.version else "")
        if m.batching is not None:
            desc += f" · batch ≤{m.batching.max_batch_size}"
        rows.append(
            f'<TR><TD ALIGN="LEFT" BALIGN="LEFT"><FONT POINT-SIZE="8">model {html_lines(desc, 36, 120)}'
            f"</FONT></TD></TR>"
        )
    if st.llm is not None:
        rows += _llm_rows(st)
    if owner:  # seed 004 §1: nobody owned the cache; the owner stands on the node (AK115)
        rows.append(
            f'<TR><TD ALIGN="LEFT" BALIGN="LEFT"><FONT POINT-SIZE="8" COLOR="#374151">owner: '
            f"{html_lines(owner, 36, 160)}</FONT></TD></TR>"
        )
    if st.data_classes:
        rows.append(
            f'<TR><TD ALIGN="LEFT" BALIGN="LEFT"><FONT POINT-SIZE="8" COLOR="#b45309">data: '
            f"{html_lines(', '.join(st.data_classes), 36, 160)}</FONT></TD></TR>"
        )
    if st.compliance:
        rows.append(
            f'<TR><TD ALIGN="LEFT" BALIGN="LEFT"><FONT POINT-SIZE="8" COLOR="#1d4ed8">compliance: '
            f"{html_lines(', '.join(st.compliance), 32, 160)}</FONT></TD></TR>"
        )
    if figures:
        shown = " · ".join(
            f"{k[:-3].upper()} {num(figures[k], 'ms')}" for k in ("p50_ms", "p99_ms") if k in figures
        )
        mark = "⚠ measured" if over else "measured"
        colour = FAIL_RED if over else "#15803d"
        rows.append(
            f'<TR><TD ALIGN="LEFT" BALIGN="LEFT"><FONT COLOR="{colour}"><B>{html(mark)}</B> '
            f"{html(shown)}</FONT></TD></TR>"
        )
    return '<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1">' + "".join(rows) + "</TABLE>>"


def _llm_rows(st: Stage) -> list[str]:
    """An LLM stage's engine, model, parallelism and scheduler limits, then its token budgets."""
    llm = st.llm
    assert llm is not None
    e, par = llm.engine, llm.parallelism
    model = llm.model.name or llm.model.preset or "custom model"
    desc = (
        f"{e.name.value}{' ' + e.version if e.version else ''} · {model} · TP{par.tensor}"
        + (f"×PP{par.pipeline}" if par.pipeline > 1 else "")
        + f" · ≤{e.max_num_seqs} seqs · {e.max_num_batched_tokens} tok/iter"
    )
    b = llm.budgets
    budgets = " · ".join(
        f"{k} {num(v, 'ms')}"
        for k, v in (
            ("TTFT P50", b.ttft_p50_ms),
            ("TTFT P99", b.ttft_p99_ms),
            ("ITL P50", b.itl_p50_ms),
            ("ITL P99", b.itl_p99_ms),
            ("TPOT", b.tpot_ms),
        )
        if v is not None
    )
    rows = [
        f'<TR><TD ALIGN="LEFT" BALIGN="LEFT"><FONT POINT-SIZE="8">llm {html_lines(desc, 36, 200)}</FONT></TD></TR>'
    ]
    if budgets:
        rows.append(f'<TR><TD ALIGN="LEFT" BALIGN="LEFT">{html_lines(budgets, 40, 200)}</TD></TR>')
    return rows


def _width(lat: float | None, max_lat: float) -> float:
    """Edge pen width 1..6, logarithmic in latency so a 1 s hop does not dwarf a 1 ms one."""
    if lat is None or max_lat <= 0:
        return 1.0
    return round(1 + 5 * math.log1p(lat) / math.log1p(max_lat), 2)


def stage_homes(spec: Spec) -> dict[str, str]:
    """stage id -> the service whose onboarding page has its section: its own service, else (an
    external store or API) the service of the first stage that sends to it, else that it sends to."""
    homes = {st.id: st.service for st in spec.dataflow.stages if st.service}
    for st in spec.dataflow.stages:
        if st.id in homes:
            continue
        near = [e.from_ for e in spec.dataflow.edges if e.to == st.id]
        near += [e.to for e in spec.dataflow.edges if e.from_ == st.id]
        home = next((homes[x] for x in near if x in homes), None)
        if home is not None and any(svc.id == home for svc in spec.topology.services):
            homes[st.id] = home
    return {k: v for k, v in homes.items() if any(svc.id == v for svc in spec.topology.services)}


def stage_link(service: str, stage_id: str) -> str:
    """Where a stage's node links to: its section of the service's onboarding page (relative to
    the render output folder, where the SVGs and review.html sit)."""
    return f"runbooks/onboarding/{service}.md#stage-{stage_id}"


def _edge_p99(declared: float | None, lat: float | None) -> str:
    if declared is not None:
        return f"P99 {num(declared, 'ms')}"
    if lat is not None:
        return f"P99 {num(lat, 'ms')} (stage)"
    return "P99 not declared"


def _edge_volume(spec: Spec, e: Edge, rate: float | None, share: dict[str, float]) -> str:
    """GB/h on an edge: the source stage's declared volume, else bytes x the rate that reaches it."""
    src = spec.stage(e.from_)
    if src is not None and src.gb_per_hour is not None and e.weight is None:
        return f"{num(src.gb_per_hour)} GB/h"
    if e.bytes is None or rate is None:
        return "GB/h unknown: no bytes or rate"
    rps = rate * share.get(e.from_, 1.0) * (1.0 if e.weight is None else e.weight)
    return f"~{num(e.bytes * rps * 3600 / 1e9)} GB/h est."


def flow_depths(stage_ids: list[str], edges: list[tuple[str, str]]) -> dict[str, int]:
    """Longest-path depth of each stage from the sources (edges closing a cycle are ignored)."""
    succ: dict[str, list[str]] = {s: [] for s in stage_ids}
    indeg = dict.fromkeys(stage_ids, 0)
    for a, b in edges:
        if a in succ and b in succ and a != b:
            succ[a].append(b)
            indeg[b] += 1
    depth = dict.fromkeys(stage_ids, 0)
    ready = [s for s in stage_ids if indeg[s] == 0]
    seen: set[str] = set()
    while True:
        while ready:
            s = ready.pop(0)
            seen.add(s)
            for t in succ[s]:
                depth[t] = max(depth[t], depth[s] + 1)
                indeg[t] -= 1
                if indeg[t] == 0:
                    ready.append(t)
        rest = [s for s in stage_ids if s not in seen]
        if not rest:
            return depth
        indeg[rest[0]] = 0  # break a cycle (AK104 reports it) at its first stage in document order
        ready.append(rest[0])


def breaker_edges(spec: Spec, ids: dict[str, str]) -> list[dict[str, Any]]:
    """A model's confidence breaker as a dotted red arrow to its fallback, labelled with the trip
    condition (seed 004 §3.2: mean confidence below 0.7 moves the traffic to the backup model)."""
    out = []
    for st in spec.dataflow.stages:
        br = st.model.confidence_breaker if st.model is not None else None
        if br is None or st.id not in ids or br.fallback not in ids:
            continue
        text = f"breaker: mean {br.output} < {num(br.min_mean)} over {num(br.window_s)} s → {br.fallback}"
        out.append(
            {
                "src": ids[st.id],
                "dst": ids[br.fallback],
                "penwidth": 1.5,
                "style": "dotted",
                "color": FAIL_RED,
                "label": "<BR/>".join(html(x) for x in wrap(text, 30, 160)),
                "tooltip": text,
                "breaker": True,
            }
        )
    return out


def dataflow_view(ctx: RenderContext) -> dict[str, Any]:
    """What the template draws: nodes, clusters, edges, legend switches."""
    spec = ctx.spec
    stages = spec.dataflow.stages
    threshold = spec.budgets.failure_rate_threshold
    measured = measured_of(ctx)
    ids: dict[str, str] = {}
    for i, st in enumerate(stages):
        ids.setdefault(st.id, f"s{i}")
    large = len(stages) > LARGE
    homes = stage_homes(spec)
    nodes: list[dict[str, Any]] = []
    any_over = any_fail = False
    for i, st in enumerate(stages):
        if ids[st.id] != f"s{i}":
            continue  # a duplicate id (AK102): draw the first only
        figures = measured.stage(st.id) if measured else {}
        over = over_budget(st, figures)
        failing = (st.failure_rate or 0) > threshold
        any_over |= bool(over)
        any_fail |= failing
        style = ["rounded", "filled"]
        attrs = {"fillcolor": OVER_FILL if over else KIND_FILL.get(st.kind.value, "#ffffff")}
        if failing:
            style += ["dashed", "bold"]
            attrs.update(color=FAIL_RED, penwidth="2")
        attrs["style"] = ",".join(style)
        tooltip = f"{st.id}: {st.description}" if st.description else st.id
        if st.id in homes:  # seed 000 §6: each node leads to its metrics, log keywords and load test
            attrs["URL"] = stage_link(homes[st.id], st.id)
            attrs["target"] = "_top"
        nodes.append(
            {
                "id": ids[st.id],
                "plane": st.plane.value,
                "label": _stage_label(st, threshold, figures, over, owner_of(spec, st)),
                "attrs": attrs,
                "tooltip": " ".join(wrap(tooltip, 200, 300)),
            }
        )
    planes = sorted({n["plane"] for n in nodes}, key=list(PLANE_STYLE).index)
    clusters = []
    if len(planes) > 1:
        for p in planes:
            label, colour = PLANE_STYLE[p]
            clusters.append(
                {"id": p, "label": label, "colour": colour, "nodes": [n for n in nodes if n["plane"] == p]}
            )
    missing: list[dict[str, str]] = []
    edges = []
    lats = []
    for e in spec.dataflow.edges:
        lat = e.p99_ms if e.p99_ms is not None else stage_latency(spec.stage(e.to))
        lats.append(lat)
    max_lat = max([x for x in lats if x is not None], default=0.0)
    rate = spec.budgets.throughput_rps
    share = reach(spec)
    for e, lat in zip(spec.dataflow.edges, lats, strict=True):
        for end in (e.from_, e.to):
            if end not in ids:
                ids[end] = f"x{len(missing)}"
                missing.append({"id": ids[end], "label": f"unknown stage {end}"})
        bits = [e.transport.value]
        if e.label:
            bits.append(e.label)
        if e.payload:
            bits.append(e.payload)
        if e.bytes is not None:
            bits.append(f"{num(e.bytes)} B")
        if e.condition:
            bits.append(f"if {e.condition}")
        edge_figures = [_edge_p99(e.p99_ms, lat), _edge_volume(spec, e, rate, share)]
        text = " · ".join(bits + edge_figures)
        edges.append(
            {
                "src": ids[e.from_],
                "dst": ids[e.to],
                "penwidth": _width(lat, max_lat),
                "style": "dashed" if e.mode == "async" else "solid",
                "label": ""
                if large
                else "<BR/>".join(
                    [html(x) for x in wrap(" · ".join(bits), 30, 160)]
                    + [f"<B>{html(x)}</B>" for x in edge_figures]
                ),
                "tooltip": " ".join(wrap(text, 300, 300)),
            }
        )
    edges += breaker_edges(spec, ids)
    rows: list[list[str]] = []
    if large:
        firsts = [st.id for i, st in enumerate(stages) if ids[st.id] == f"s{i}"]
        depth = flow_depths(firsts, [(e.from_, e.to) for e in spec.dataflow.edges])
        by_row: dict[int, list[str]] = {}
        for sid in firsts:
            by_row.setdefault(depth[sid] // ROW_DEPTHS, []).append(ids[sid])
        rows = [by_row[r] for r in sorted(by_row)]
    b = spec.budgets
    title = spec.metadata.title or spec.metadata.name
    e2e = " · ".join(
        x
        for x in (
            f"P50 {num(b.p50_ms, 'ms')}" if b.p50_ms is not None else "",
            f"P95 {num(b.p95_ms, 'ms')}" if b.p95_ms is not None else "",
            f"P99 {num(b.p99_ms, 'ms')}" if b.p99_ms is not None else "",
            f"{num(b.throughput_rps)} rps" if b.throughput_rps is not None else "",
            f"errors ≤ {pct(b.error_rate)}" if b.error_rate is not None else "",
        )
        if x
    )
    return {
        "header": ctx.header("//"),
        "title": html_lines(f"{title} — data flow", 80, 200),
        "budget": html(f"end-to-end budget: {e2e}" if e2e else "no end-to-end budget"),
        "rankdir": "TB" if large else "LR",
        "rows": rows,
        "large": large,
        "nodes": nodes,
        "clusters": clusters,
        "missing": missing,
        "edges": edges,
        "threshold": html(pct(threshold)),
        "any_over": any_over,
        "measured": measured is not None,
        "any_fail": any_fail,
        "any_breaker": any(e.get("breaker") for e in edges),
        "empty": not nodes,
    }


# The review page is ~1,540 CSS px wide (max-width 1600 less padding); a diagram wider than
# this many points (1 pt = 4/3 px) would be shown below 70 % of its size there.
FOLD_WIDTH_PT = 1600


def _width_pt(source: str) -> float:
    """Laid-out width in points (`dot -Tplain`: graph scale width height, in inches); 0 when dot
    cannot lay it out here (the render then reports that itself)."""
    from archkit.generators.renderers import RendererError, run_dot

    try:
        return float(run_dot(source, "plain").split(b"\n", 1)[0].split()[2]) * 72
    except (RendererError, OSError, subprocess.SubprocessError, IndexError, ValueError):
        return 0.0


def dataflow_source(ctx: RenderContext) -> str:
    def build() -> str:
        view = dataflow_view(ctx)
        source = render("dataflow/dataflow.dot.j2", ctx.templates_dir, **view)
        if view["rankdir"] == "LR" and _width_pt(source) > FOLD_WIDTH_PT:
            # a long flow left to right is a strip the review page shrinks unreadably: fold it
            # top to bottom, which these pipelines (a few stages per depth) keep narrow
            source = render("dataflow/dataflow.dot.j2", ctx.templates_dir, **{**view, "rankdir": "TB"})
        return source

    return ctx.memo("dataflow.dot", build)


@register(
    "dataflow",
    order=10,
    source="seed 000 §3.1 (P50/P99, GB per hour and failure rate per stage); seed 004 §2.2 (planes as clusters)",
)
def generate(ctx: RenderContext) -> dict[str, str]:
    """Data-flow diagram: per-stage P50/P99, GB/h, failure rate, planes, compliance (Graphviz)."""
    return {"dataflow.dot": dataflow_source(ctx)}
