"""A cache's hit and miss latencies and their mix (`archkit.perf.cache`, seed 004 §3.3).

Hand-computed, the loan example's OCR cache: a miss pays the lookup (P50 2, P99 35 ms) and the
OCR (P50 300, P99 2000 ms): P50 302, P99 2035 ms; σ = ln(2035 / 302) / 2.32635 = 0.82010.
At a hit ratio of 0.5 the P99 is the misses' quantile q′ = (0.99 − 0.5) / 0.5 = 0.98 (z 2.05375):
302 × exp(0.82010 × 2.05375) = 1627.3 ms; the mean is at most 0.5 × 35 + 0.5 × 302 ×
exp(0.82010² / 2) = 17.5 + 211.4 = 228.9 ms. From a hit ratio of 0.99 the P99 is the hit's 35 ms.
"""

from __future__ import annotations

import pytest

from archkit.perf.cache import cache_mixes, mixed_quantile
from archkit.perf.latency import dataflow_paths
from archkit.plans.capacity import cache_rows
from archkit.spec import load_text

SPEC = """\
apiVersion: archkit/v1
metadata: {{name: t}}
dataflow:
  stages:
    - {{id: check, kind: preprocess, p50_ms: 40, p99_ms: 120}}
    - {{id: cache, kind: cache, p50_ms: 2, p99_ms: 35, cache: {{key: sha256(image), hit_p99_ms: 35, hit_ratio: {h}, skips: [ocr]}}}}
    - {{id: ocr, kind: external, p50_ms: 300, p99_ms: 2000}}
    - {{id: extract, kind: rules, p50_ms: 30, p99_ms: 120}}
  edges:
    - {{from: check, to: cache}}
    - {{from: check, to: ocr, condition: cache miss}}
    - {{from: ocr, to: extract}}
    - {{from: cache, to: extract, condition: cache hit}}
"""


def _spec(h: float):
    res = load_text(SPEC.format(h=h), "t.yaml")
    assert res.ok and res.spec is not None, [d.text() for d in res.diagnostics]
    return res.spec


def test_hit_miss_and_mix_by_hand():
    (m,) = cache_mixes(_spec(0.5))
    assert (m.hit_ms, m.miss_p50_ms, m.miss_p99_ms, m.skips) == (35, 302, 2035, ("ocr",))
    assert m.mixed_p99_ms == pytest.approx(1627.3, abs=0.1)
    assert m.mean_ms == pytest.approx(228.9, abs=0.1)


def test_no_hits_keep_the_miss_p99_and_most_hits_the_hit():
    assert mixed_quantile(0.0, 35, 302, 2035) == pytest.approx(2035)
    assert mixed_quantile(0.99, 35, 302, 2035) == 35
    # a mix never beats its hit: 0.985 of hits leave q' = 1/3, a miss quantile below 302 but above 35
    assert 35 < mixed_quantile(0.985, 35, 302, 2035) < 302


def test_the_critical_path_takes_the_mix_for_the_cached_segment():
    spec = _spec(0.5)
    (row,) = cache_rows(spec, dataflow_paths(spec))
    # check -> ocr -> extract: 120 + 2000 + 120 = 2240 ms. The lookup runs beside the OCR, not on
    # this path, so only the OCR leaves it and the mix of a hit and the OCR alone joins it:
    # σ = ln(2000 / 300) / 2.32635 = 0.81549, 300 × exp(0.81549 × 2.05375) = 1601.3 ms
    # (with the lookup's 35 ms, as before, the cache made the path slower: 240 + 1627.3)
    assert row["path"]["stages"] == ["check", "ocr", "extract"]
    assert row["path"]["p99_sum_ms"] == 2240
    assert row["path"]["p99_sum_mixed_ms"] == pytest.approx(240 + 1601.3, abs=0.1)
