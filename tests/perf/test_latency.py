"""Latency composition over the data and control flow; retry amplification and nested budgets."""

from __future__ import annotations

import math

import pytest

from archkit.perf.latency import call_worst_ms, control_paths, critical_path, dataflow_paths
from archkit.perf.retry import call_budgets
from archkit.spec import load_text

SPEC = """
apiVersion: archkit/v1
metadata: {name: t}
dataflow:
  stages:
    - {id: in, kind: ingress, p50_ms: 5, p99_ms: 10}
    - {id: fast, kind: model, p50_ms: 10, p99_ms: 20}
    - {id: slow, kind: model, p50_ms: 30, p99_ms: 90}
    - {id: out, kind: postprocess, p50_ms: 5, p99_ms: 10}
    - {id: archive, kind: store, p50_ms: 100, p99_ms: 900}
  edges:
    - {from: in, to: fast}
    - {from: in, to: slow, p50_ms: 1, p99_ms: 4}
    - {from: fast, to: out}
    - {from: slow, to: out}
    - {from: out, to: archive, mode: async}
controlflow:
  start: outer
  timeout_ms: 1000
  calls:
    - {id: outer, target: slow, timeout_ms: 600, retry: {attempts: 1, backoff_ms: 100, backoff_multiplier: 2}, next: inner, on_failure: ok}
    - {id: inner, target: fast, caller: outer, timeout_ms: 100, retry: {attempts: 2, backoff_ms: 10, backoff_multiplier: 2}, next: ok, on_failure: ok}
  terminals: [{id: ok}]
"""


@pytest.fixture(scope="module")
def spec():
    res = load_text(SPEC, "t.yaml")
    assert res.ok
    return res.spec


def test_critical_path_takes_the_heavier_branch_and_skips_async(spec):
    paths = dataflow_paths(spec)
    assert [p.stages for p in paths] == [["in", "slow", "out"]]  # archive is async: off the path
    p = critical_path(spec)
    assert p.p50_sum == pytest.approx(5 + 1 + 30 + 5)
    assert p.p99_sum == pytest.approx(10 + 4 + 90 + 10)
    assert p.p99_rss == pytest.approx(41 + math.sqrt(5**2 + 3**2 + 60**2 + 5**2))
    assert p.p99_rss < p.p99_sum
    assert p.dominant == "slow"


def test_control_paths_nominal_and_worst_case(spec):
    paths = control_paths(spec)
    full = next(p for p in paths if p.nodes == ["outer", "inner", "ok"])
    assert full.nominal_ms == pytest.approx(90 + 20)
    assert full.worst_ms == pytest.approx((2 * 600 + 100) + (3 * 100 + 10 + 20))


def test_worst_case_includes_growing_backoff(spec):
    inner = spec.control_node("inner")
    assert call_worst_ms(inner) == pytest.approx(3 * 100 + 10 + 20)


def test_call_budgets_nest_and_multiply(spec):
    by_id = {cb.call.id: cb for cb in call_budgets(spec)}
    assert by_id["outer"].budget_ms == 1000 and by_id["outer"].budget_source == "controlflow.timeout_ms"
    assert by_id["inner"].budget_ms == 600 and by_id["inner"].caller.id == "outer"
    assert by_id["inner"].amplification == 2 * 3
    assert by_id["inner"].chain == ["outer", "inner"]
