"""The review page: one self-contained HTML file with the four diagrams, budgets and findings."""

from __future__ import annotations

import re
from typing import Any

from markupsafe import Markup

from archkit.generators.diagram_text import clean, num, pct
from archkit.generators.gen_controlflow import controlflow_source
from archkit.generators.gen_dataflow import dataflow_source, measured_of
from archkit.generators.gen_faulttree import faulttree_sources
from archkit.generators.gen_topology import topology_source
from archkit.generators.jinja import render
from archkit.generators.measured import LATENCY, over_budget
from archkit.generators.registry import RenderContext, register
from archkit.generators.renderers import render_sources, with_placeholders
from archkit.spec.model import Spec

_XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>\s*")
_ID = re.compile(r'\bid="([^"]+)"')
_URL_REF = re.compile(r"url\(#([^)]+)\)")
_HREF_REF = re.compile(r'((?:xlink:)?href)="#([^"]+)"')
_SCRIPT = re.compile(r"<\s*/?\s*script", re.IGNORECASE)


_DATA_URI = re.compile(r'"data:[^"]*"')
_STASHED = re.compile(r'"\x00([0-9]+)\x00"')


def inline_svg(svg: bytes | str, prefix: str, title: str) -> Markup:
    """An SVG ready to sit inside HTML: no XML declaration, ids scoped to this diagram, scalable."""
    s = svg.decode("utf-8") if isinstance(svg, bytes) else svg
    # Inlined icons are megabytes of base64: set them aside so the id passes scan only markup.
    uris: list[str] = []

    def stash(m: re.Match) -> str:
        uris.append(m.group(0))
        return f'"\x00{len(uris) - 1}\x00"'

    s = _DATA_URI.sub(stash, s)
    s = _XML_DECL.sub("", s)
    s = _ID.sub(lambda m: f'id="{prefix}-{m.group(1)}"', s)
    s = _URL_REF.sub(lambda m: f"url(#{prefix}-{m.group(1)})", s)
    s = _HREF_REF.sub(lambda m: f'{m.group(1)}="#{prefix}-{m.group(2)}"', s)
    if _SCRIPT.search(s):  # renderers never emit scripts; refuse rather than embed one
        raise ValueError(f"{title}: rendered SVG contains a script element")
    s = _STASHED.sub(lambda m: uris[int(m.group(1))], s)
    s = s.replace("<svg ", f'<svg role="img" aria-label="{Markup.escape(title)}" ', 1)
    return Markup(s.strip())


def _budget_row(name: str, budget: Any, figures: dict[str, float], extra: dict[str, Any]) -> dict[str, Any]:
    over = over_budget(budget, figures)
    cells = []
    for key in LATENCY:
        b = getattr(budget, key, None)
        m = figures.get(key)
        cells.append(
            {
                "budget": num(b, "ms") if b is not None else "–",
                "measured": num(m, "ms") if m is not None else "",
                "over": key in over,
            }
        )
    return {"name": clean(name), "cells": cells, "over": bool(over), **extra}


def load_curve(data: Any) -> Markup | None:
    """The predicted latency-vs-load curve a load-test result recorded (`predicted.curve`), with the
    run's measured steps on it, as the load-test report draws it (`perf.curve.overlay_svg`); None
    when the result has no curve (a report from before curves, or not a load test's). A
    result.json keeps the run under `measured`; a measured.json is the run itself."""
    from archkit.perf.curve import overlay_svg

    if not isinstance(data, dict):
        return None
    run = data.get("measured") if isinstance(data.get("measured"), dict) else data
    try:
        svg = overlay_svg(run)
    except (TypeError, ValueError, KeyError, AttributeError):  # not the shape a load test writes
        return None
    return inline_svg(svg, "lc", "latency vs load") if svg else None


def review_view(ctx: RenderContext) -> dict[str, Any]:
    spec = ctx.spec
    sources: dict[str, str] = {
        "dataflow.dot": dataflow_source(ctx),
        "controlflow.puml": controlflow_source(ctx),
        "topology.dot": topology_source(ctx),
    }
    sources.update(faulttree_sources(ctx))
    formats = tuple(dict.fromkeys(("svg",) + tuple(ctx.formats)))
    # a diagram whose renderer is missing here shows as a box saying why and how to fix it
    rendered = with_placeholders(
        render_sources(sources, formats, ctx.cache, ctx.progress), sources, ctx.cache
    )
    diagrams = [
        {
            "id": "dataflow",
            "title": "Data flow",
            "svg": inline_svg(rendered["dataflow.svg"], "df", "data flow"),
        },
        {
            "id": "controlflow",
            "title": "Control flow",
            "svg": inline_svg(rendered["controlflow.svg"], "cf", "control flow"),
        },
        {
            "id": "topology",
            "title": "Deployment topology",
            "svg": inline_svg(rendered["topology.svg"], "tp", "deployment topology"),
        },
    ]
    trees = []
    for i, rel in enumerate(sorted(faulttree_sources(ctx))):
        tree_id = rel[len("faulttree/") : -len(".dot")]
        trees.append(
            {
                "id": f"ft{i}",
                "title": clean(tree_id),
                "svg": inline_svg(rendered[rel[:-4] + ".svg"], f"ft{i}", f"fault tree {tree_id}"),
            }
        )
    measured = measured_of(ctx)
    b = spec.budgets
    e2e = measured.end_to_end if measured else {}
    e2e_row = _budget_row(
        "end to end",
        b,
        e2e,
        {
            "throughput": num(b.throughput_rps, "rps") if b.throughput_rps is not None else "–",
            "throughput_measured": num(e2e["throughput_rps"], "rps") if "throughput_rps" in e2e else "",
            "throughput_low": (
                "throughput_rps" in e2e
                and b.throughput_rps is not None
                and e2e["throughput_rps"] < b.throughput_rps
            ),
            "errors": pct(b.error_rate),
            "errors_measured": pct(e2e["error_rate"]) if "error_rate" in e2e else "",
            "errors_over": (
                "error_rate" in e2e and b.error_rate is not None and e2e["error_rate"] > b.error_rate
            ),
        },
    )
    stage_rows = []
    threshold = b.failure_rate_threshold
    for st in spec.dataflow.stages:
        figs = measured.stage(st.id) if measured else {}
        stage_rows.append(
            _budget_row(
                st.name or st.id,
                st,
                figs,
                {
                    "id": clean(st.id),
                    "kind": st.kind.value,
                    "plane": st.plane.value,
                    "timeout": num(st.timeout_ms, "ms") if st.timeout_ms is not None else "–",
                    "failure": pct(st.failure_rate),
                    "failing": (st.failure_rate or 0) > threshold,
                    "volume": num(st.gb_per_hour, "GB/h") if st.gb_per_hour is not None else "–",
                    "tags": clean(", ".join(st.data_classes + st.compliance)),
                },
            )
        )
    findings = [
        {
            "severity": d.severity.value,
            "code": clean(d.code),
            "where": f"{d.line}:{d.col}",
            "message": clean(d.message),
            "path": clean(d.path),
            "hint": clean(d.hint),
        }
        for d in ctx.diagnostics
    ]
    counts = {s: sum(1 for f in findings if f["severity"] == s) for s in ("error", "warning", "info")}
    return {
        # the header line inside an HTML comment, which must not contain "--"
        "header": "<!-- " + ctx.header("").strip().replace("--", "—") + " -->",
        "title": clean(spec.metadata.title or spec.metadata.name),
        "name": clean(spec.metadata.name),
        "description": clean(spec.metadata.description or ""),
        "owners": clean(", ".join(spec.metadata.owners)),
        "signoffs": signoff_rows(spec),
        "spec_name": clean(ctx.spec_name),
        "env": clean(ctx.env or ""),
        "diagrams": diagrams,
        "trees": trees,
        "e2e": e2e_row,
        "stages": stage_rows,
        "threshold": pct(threshold),
        "measured": measured is not None,
        "findings": findings,
        "counts": counts,
        "measured_about": {k: clean(v) for k, v in (measured.about if measured else {}).items()},
        "measured_other_spec": bool(
            measured and measured.about.get("spec") and measured.about["spec"] != spec.metadata.name
        ),
        "over_count": sum(1 for r in stage_rows if r["over"]) + (1 if e2e_row["over"] else 0),
        "load_curve": load_curve(ctx.measured),
        # predicted vs measured (the prediction loop): off by more than 15 % is marked
        "fidelity": [
            {
                "scope": clean(scope),
                "quantity": clean(quantity),
                "predicted": f"{p:.4g}",
                "measured": f"{m:.4g}",
                "error": f"{e:+.1f} %",
                "off": abs(e) > 15,
            }
            for scope, quantity, p, m, e in (measured.fidelity if measured else [])
        ],
    }


def signoff_rows(spec: Spec) -> list[dict[str, Any]]:
    """Each sign-off (seed 000 §2.4: legal signs every review) with whether it covers this design:
    its `spec_sha256` against the design's current hash (AK512's `design_sha256`)."""
    from archkit.checks.ak512_design_not_signed_off import design_sha256

    current = design_sha256(spec) if spec.metadata.signoffs else ""
    return [
        {
            "role": clean(s.role),
            "by": clean(s.by),
            "date": s.date.isoformat(),
            "sha": s.spec_sha256[:12],
            "current": s.spec_sha256 == current,
        }
        for s in spec.metadata.signoffs
    ]


@register(
    "review",
    order=900,
    source="seed 000 §6 (one page for whoever is paged: diagrams, budgets, findings)",
)
def generate(ctx: RenderContext) -> dict[str, str]:
    """Review page: one self-contained HTML file with every diagram inline, budgets and findings."""
    return {"review.html": render("review/review.html.j2", ctx.templates_dir, **review_view(ctx))}
