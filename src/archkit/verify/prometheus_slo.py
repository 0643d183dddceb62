"""Latency SLOs against the live histogram: the threshold must be one of its `le` boundaries (VP320).

A latency SLI counts the requests in the `le` bucket of its threshold; Prometheus has no count
between two boundaries. The boundaries a service really exports are read from Prometheus
(`count by (le) (<bucket series>)`), whatever the spec declares in `buckets`.
"""

from __future__ import annotations

import math
from urllib.parse import urlencode

from archkit.plans.slo import Selector, slo_plan
from archkit.slo_math import BucketGap, unit_seconds
from archkit.spec.model import Spec
from archkit.verify.findings import Finding, Recorder
from archkit.verify.registry import Check, Code


class SloBuckets(Check):
    """Each latency SLO's threshold is a boundary of the live histogram."""

    code = Code(
        "VP320",
        "latency SLO threshold is a bucket",
        "A latency SLO's threshold is one of the `le` boundaries the live histogram exports.",
        "Prometheus HTTP API (/api/v1/query); seed 000 §4.3",
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


def check_slo_buckets(spec: Spec, url: str, timeout_s: float = 5.0) -> list[Finding]:
    """VP320 for every latency SLO of the spec (declared or derived)."""
    from archkit.verify.prometheus import _get, _Unreachable

    rec = Recorder(spec, "prometheus")
    for s in slo_plan(spec).slos:
        if s.kind != "latency" or s.total is None or s.threshold_ms is None:
            continue
        node, fld = (s.slo, "threshold_ms") if s.slo is not None else (spec.budgets, None)
        label = f"slo/{s.name}"
        series = Selector(s.total.name, tuple(m for m in s.total.matchers if m[0] != "le"))
        try:
            data = _get(url, "/api/v1/query?" + urlencode({"query": f"count by (le) ({series})"}), timeout_s)
        except _Unreachable as exc:
            rec.unknown(SloBuckets.code, label, node, str(exc), field=fld)
            continue
        les = _boundaries(data)
        if not les:
            rec.unknown(SloBuckets.code, label, node, f"Prometheus has no {series} series (yet)", field=fld)
            continue
        unit = unit_seconds(s.total.name.removesuffix("_bucket"))
        thr = s.threshold_ms / 1000 / unit
        if any(math.isclose(b, thr, rel_tol=1e-9) for b in les):
            rec.ok(
                SloBuckets.code,
                label,
                node,
                f"{s.threshold_ms:g} ms is a boundary of {series.name}",
                field=fld,
            )
            continue
        below, above = [b for b in les if b < thr], [b for b in les if b > thr]
        gap = BucketGap(thr, max(below) if below else None, min(above) if above else None, unit)
        near = ", ".join(f"{b * unit * 1000:g}" for b in (gap.lower, gap.upper) if b is not None)
        rec.drift(
            SloBuckets.code,
            label,
            node,
            f"latency SLO '{s.name}': {s.threshold_ms:g} ms is not a live bucket boundary of {series.name} "
            f"(nearest {near} ms; worst-case error {gap.worst_error_ms:g} ms); add it to the histogram's buckets",
            field=fld,
        )
    return rec.findings
