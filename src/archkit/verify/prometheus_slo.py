"""Latency SLOs against the live histogram: the threshold must be one of its `le` boundaries (VP320).

A latency SLI counts the requests in the `le` bucket of its threshold; Prometheus has no count
between two boundaries. The boundaries a service really exports are read from Prometheus
(`count by (le) (<bucket series>)`), whatever the spec declares in `buckets`.
"""

from __future__ import annotations

import math
from functools import partial
from urllib.parse import urlencode

from archkit.plans.slo import PlannedSlo, Selector, slo_plan
from archkit.slo_math import BucketGap, unit_seconds
from archkit.verify.findings import Finding
from archkit.verify.prometheus_context import PrometheusCheck, PrometheusContext, Unreachable
from archkit.verify.registry import Code


class SloBuckets(PrometheusCheck):
    """Each latency SLO's threshold is a boundary of the live histogram."""

    code = Code(
        "VP320",
        "latency SLO threshold is a bucket",
        "A latency SLO's threshold is one of the `le` boundaries the live histogram exports.",
        "Prometheus HTTP API (/api/v1/query); seed 000 §4.3",
    )

    def run(self, ctx: PrometheusContext, s: PlannedSlo) -> None:
        r, spec = ctx.rec, ctx.spec
        if s.total is None or s.threshold_ms is None:  # not a latency SLO: nothing to compare
            return
        node, fld = (s.slo, "threshold_ms") if s.slo is not None else (spec.budgets, None)
        label = f"slo/{s.name}"
        series = Selector(s.total.name, tuple(m for m in s.total.matchers if m[0] != "le"))
        try:
            data = ctx.get("/api/v1/query?" + urlencode({"query": f"count by (le) ({series})"}))
        except Unreachable as exc:
            r.unknown(self.code, label, node, str(exc), field=fld)
            return
        les = _boundaries(data)
        if not les:
            r.unknown(self.code, label, node, f"Prometheus has no {series} series (yet)", field=fld)
            return
        unit = unit_seconds(s.total.name.removesuffix("_bucket"))
        thr = s.threshold_ms / 1000 / unit
        if any(math.isclose(b, thr, rel_tol=1e-9) for b in les):
            r.ok(self.code, label, node, f"{s.threshold_ms:g} ms is a boundary of {series.name}", field=fld)
            return
        below, above = [b for b in les if b < thr], [b for b in les if b > thr]
        gap = BucketGap(thr, max(below) if below else None, min(above) if above else None, unit)
        near = ", ".join(f"{b * unit * 1000:g}" for b in (gap.lower, gap.upper) if b is not None)
        r.drift(
            self.code,
            label,
            node,
            f"latency SLO '{s.name}': {s.threshold_ms:g} ms is not a live bucket boundary of {series.name} "
            f"(nearest {near} ms; worst-case error {gap.worst_error_ms:g} ms); add it to the histogram's buckets",
            field=fld,
        )


def _boundaries(data: dict) -> list[float]:
    out = []
    for item in data.get("result") or []:
        le = (item.get("metric") or {}).get("le") if isinstance(item, dict) else None
        try:
            v = float(le) if isinstance(le, str) else math.nan
        except ValueError:
            continue
        if math.isfinite(v):
            out.append(v)
    return sorted(set(out))


def check_slo_buckets(ctx: PrometheusContext) -> list[Finding]:
    """VP320 for every latency SLO of the spec (declared or derived), each guarded."""
    check = SloBuckets()
    for s in slo_plan(ctx.spec).slos:
        if s.kind != "latency" or s.total is None or s.threshold_ms is None:
            continue
        node, fld = (s.slo, "threshold_ms") if s.slo is not None else (ctx.spec.budgets, None)
        ctx.guarded(check.code, f"slo/{s.name}", node, partial(check.run, ctx, s), field=fld)
    return ctx.rec.findings
