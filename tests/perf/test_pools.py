"""Connection pools against the concurrency the design rate drives into them (`archkit.perf.pools`, seed 004 §1).

Hand-computed: 200 req/s over 2 client replicas, each request calling a cache with a 50 ms P99
once: 100 calls/s per replica × 0.05 s = 5 connections in use on average (Little's law). With
8 connections Erlang C(8, 5) = B / (1 − ρ(1 − B)) with the Erlang B recurrence B(8, 5) = 0.07005
and ρ = 5/8: 0.07005 / (1 − 0.625 × 0.92995) = 0.1673. The pools of both replicas admit
8 × 2 / 0.05 s = 320 calls, i.e. 320 req/s.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from archkit.cli import _load_commands, app
from archkit.perf.pools import pool_loads
from archkit.plans.alerts import alert_plan
from archkit.spec import load_text

SPEC = """\
apiVersion: archkit/v1
metadata: {{name: t}}
budgets: {{p99_ms: 500, throughput_rps: 200}}
dataflow:
  stages:
    - {{id: api, kind: preprocess, service: api, p99_ms: 100}}
    - {{id: cache, kind: cache, service: redis, p50_ms: 2, p99_ms: 50}}
  edges: [{{from: api, to: cache, transport: redis{weight}}}]
topology:
  node_pools: [{{id: cpu}}]
  services: [{{id: api, pool: cpu, replicas: 2}}, {{id: redis, pool: cpu}}]
connection_pools:
  - {{id: api-redis, client: api, target: cache, size: 8{extra}}}
"""


def _spec(weight: str = "", extra: str = ""):
    res = load_text(SPEC.format(weight=weight, extra=extra), "t.yaml")
    assert res.ok, [d.text() for d in res.diagnostics]
    return res.spec


def test_little_and_erlang_c_by_hand():
    (pl,) = pool_loads(_spec())
    assert pl.per_replica_cps == pytest.approx(100)
    assert pl.hold_ms == 50 and not pl.hold_declared
    assert pl.offered == pytest.approx(5)
    assert pl.wait_probability == pytest.approx(0.1673, abs=5e-5)
    assert pl.ceiling_rps == pytest.approx(320)


def test_weight_calls_and_declared_hold():
    # half the requests reach the cache, 3 calls each, 10 ms held: 200 × 0.5 × 3 / 2 = 150 calls/s × 0.01 s
    (pl,) = pool_loads(_spec(", weight: 0.5", ", hold_ms: 10, calls_per_visit: 3"))
    assert pl.per_replica_cps == pytest.approx(150)
    assert pl.offered == pytest.approx(1.5)
    assert pl.hold_declared
    # 8 × 2 connections / 0.01 s = 1,600 calls/s over 1.5 calls per request
    assert pl.ceiling_rps == pytest.approx(1600 / 1.5)


def test_capacity_prints_and_reports_the_pool(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text(SPEC.format(weight="", extra=""))
    _load_commands()
    runner = CliRunner()
    out = runner.invoke(app, ["capacity", str(path)]).output
    assert (
        "pool api-redis (8 connection(s) per 'api' replica × 2 to cache): 100 calls/s × 50 ms hold "
        "('cache' P99) = 5 in use, 16.7 % of calls wait, at 200 req/s; admits 320 req/s"
    ) in out
    (row,) = json.loads(runner.invoke(app, ["capacity", str(path), "-f", "json"]).output)["pools"]
    assert (
        row["in_use"] == 5 and row["wait_probability"] == pytest.approx(0.1673) and row["ceiling_rps"] == 320
    )


def test_saturation_alert_reads_the_gauge():
    spec = _spec(extra=", in_use: {metric: pool_in_use, labels: {pool: redis}, alert_ratio: 0.75}")
    (a,) = [a for a in alert_plan(spec).alerts if a.name.startswith("ConnectionPool")]
    assert a.name == "ConnectionPoolSaturatedApiRedis"
    assert a.expr == 'max(pool_in_use{pool="redis"}) >= 6'
    assert a.fire is not None and a.fire.series[0][1].startswith("8x")
    assert a.quiet.series[0][1].startswith("4x")


def test_a_pool_is_a_limit_of_the_pipeline_ceiling_by_hand():
    # nothing else limits this spec (no processors declared); 4 connections per replica × 2 replicas,
    # held 20 ms, 2 calls per visit: 4 × 2 / 0.02 s = 400 calls/s = 200 visits/s, the pipeline's knee
    from archkit.perf.pipeline import predict

    text = SPEC.format(weight="", extra=", hold_ms: 20, calls_per_visit: 2").replace("size: 8", "size: 4")
    res = load_text(text, "t.yaml")
    assert res.ok and res.spec is not None, [d.text() for d in res.diagnostics]
    spec = res.spec
    pred = predict(spec, rate_rps=50, requests=500)
    assert pred.knee_rps == pytest.approx(200.0)
    assert pred.bottleneck == "pool api-redis"
