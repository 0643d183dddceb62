"""The latency of requests that take different routes, as a mixture (`archkit.perf.branch_mix`).

Hand-computed mixtures of a degenerate route (every request 100 ms) and a log-normal one (P50 200,
P99 400 ms: σ = ln 2 / z₀.₉₉ = 0.693147 / 2.326348 = 0.297955):
- half and half, P99: 0.5 + 0.5·F(x) = 0.99 → F(x) = 0.98, x = 200·exp(0.297955 × 2.053749) = 368.8 ms;
- 0.3 at 100 ms and 0.7 log-normal, P50: 0.3 + 0.7·F(x) = 0.5 → F(x) = 2/7 (z −0.565949),
  x = 200·exp(0.297955 × −0.565949) = 169.0 ms;
- 0.6 at 100 ms, P50: the degenerate route holds the median, 100 ms exactly.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from archkit.perf.branch_mix import mixture_quantile, sink_mixes
from archkit.spec import load_file, load_text


def test_mixture_quantiles_by_hand():
    assert mixture_quantile([(0.5, 100, 100), (0.5, 200, 400)], 0.99) == pytest.approx(368.80, abs=0.01)
    assert mixture_quantile([(0.3, 100, 100), (0.7, 200, 400)], 0.5) == pytest.approx(168.96, abs=0.01)
    assert mixture_quantile([(0.6, 100, 100), (0.4, 200, 400)], 0.5) == 100


def test_one_route_keeps_its_sums_exactly():
    assert mixture_quantile([(1.0, 358, 1634)], 0.5) == 358
    assert mixture_quantile([(1.0, 358, 1634)], 0.99) == 1634


SPEC = """\
apiVersion: archkit/v1
metadata: {name: t}
dataflow:
  stages:
    - {id: gate, kind: preprocess, p50_ms: 10, p99_ms: 10}
    - {id: fast, kind: model, p50_ms: 300, p99_ms: 300}
    - {id: precise, kind: model, p50_ms: 2000, p99_ms: 2000}
    - {id: reply, kind: postprocess, p50_ms: 10, p99_ms: 10}
  edges:
    - {from: gate, to: fast, weight: 0.9, decision: pick}
    - {from: gate, to: precise, weight: 0.1, decision: pick}
    - {from: fast, to: reply}
    - {from: precise, to: reply}
"""


def test_exclusive_branches_are_components_with_their_shares():
    res = load_text(SPEC, "t.yaml")
    assert res.spec is not None
    (m,) = sink_mixes(res.spec)
    got = [(round(c.share, 9), c.path.stages, c.path.p50_sum) for c in m.components]
    assert got == [(0.1, ["gate", "precise", "reply"], 2020), (0.9, ["gate", "fast", "reply"], 320)]
    assert m.quantile(0.5) == 320 and m.quantile(0.99) == 2020
    assert m.setter(2020).path.stages == ["gate", "precise", "reply"]
    assert m.setter(320).path.stages == ["gate", "fast", "reply"]


def test_the_loan_example_mixes_its_dispatch_and_cache():
    # 0.1 of the requests hit the cache (the lookup, not the OCR); of the misses 0.9 take the fast OCR:
    # 0.9 × 0.9 = 0.81, 0.9 × 0.1 = 0.09. The P50 of the mix falls inside the fast route's spread (its
    # P50 sum 778 ms, not the precise route's 2478), and the P99 of the mix inside the precise route's
    # tail (below its 3970 ms sum: 1 % of all the requests is a ninth of that route).
    res = load_file(Path(__file__).parents[2] / "examples" / "loan-preapproval.yaml")
    assert res.spec is not None
    m = next(x for x in sink_mixes(res.spec) if x.sink == "assemble")
    shares = {c.path.stages[1]: round(c.share, 9) for c in m.components}
    assert shares == {"ocr-precise": 0.09, "ocr": 0.81, "ocr-cache": 0.1}
    assert 778 <= m.quantile(0.5) < 2478
    assert m.setter(m.quantile(0.99)).path.stages[1] == "ocr-precise"
    assert 2478 < m.quantile(0.99) < 3970
