"""Admission and rate limits in the performance model (`spec.traffic`, `perf.limits`, `perf.curve`)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from archkit import api
from archkit.perf import queueing as q
from archkit.perf.curve import (
    MeasuredPoint,
    RateSpecError,
    curve_png,
    curve_svg,
    load_curve,
    parse_rates,
    sweep,
)
from archkit.perf.limits import admitted_rps, apply_rate_limits
from archkit.spec import load_file, load_text
from archkit.spec.traffic import RateLimit
from tests.conftest import ROOT

# An exponential worker (mean 80 ms: median 80·ln 2 ms) behind a 1 ms gateway stage; its
# service admits K = 5 requests in flight and refuses the rest at once: an M/M/1/5 system.
MM1K = """apiVersion: archkit/v1
metadata: {name: mm1k}
budgets: {throughput_rps: 10, p99_ms: 2000}
dataflow:
  stages:
    - {id: gate, kind: ingress, service: gw, p50_ms: 1, service_distribution: deterministic}
    - {id: work, kind: postprocess, service: app, p50_ms: 55.451774444795625, concurrency: 1,
       service_distribution: exponential}
  edges:
    - {from: gate, to: work}
topology:
  node_pools: [{id: cpu, cpu_cores: 4}]
  services:
    - {id: gw, pool: cpu}
    - {id: app, pool: cpu}
traffic:
  admission:
    - {service: app, max_inflight: 5, rejection: {status: 429, retry_after_s: 1}}
"""


def test_mm1k_loss_and_wait_match_the_closed_form(tmp_path):
    """By hand (Kleinrock §3.6): λ = 10/s, mean service 80 ms, ρ = 0.8, K = 5:
    P(refused) = (1 − ρ)ρ^5 / (1 − ρ^6) = 0.0888; mean time in the system L/λ(1 − P_K) = 205.0 ms,
    plus the gateway's 1 ms. `archkit capacity --rate 10` must land within 3 % of both."""
    loss = q.mmck_loss(10, 0.08, 1, 5)
    assert loss == pytest.approx(0.2 * 0.8**5 / (1 - 0.8**6))
    sojourn_ms = 1000 * q.mmck_sojourn(10, 0.08, 1, 5)
    spec = tmp_path / "mm1k.yaml"
    spec.write_text(MM1K, encoding="utf-8")
    rep = api.capacity(spec, rates=[10], requests=400_000)
    assert rep.curve is not None
    (pt,) = rep.curve["points"]
    assert pt["shed_share"] == pytest.approx(loss, rel=0.03)
    assert pt["mean_ms"] == pytest.approx(1 + sojourn_ms, rel=0.03)
    assert pt["failed_share"] == 0 and pt["p99_ms"] < 1000  # bounded: at most 5 ahead of anyone


def test_token_bucket_without_delay_admits_lambda_r_over_lambda_plus_r():
    """By hand: a bucket of one token refilled at r admits the first arrival after each refill;
    with Poisson arrivals at λ the admitted rate is 1 / (1/r + 1/λ): a third of them at λ = 2r."""
    rng = np.random.default_rng(5)
    arr = np.cumsum(rng.exponential(1 / 20, 200_000))
    lim = RateLimit(id="edge", rate_rps=10)
    _, ok = apply_rate_limits([lim], arr, {}, rng)
    assert ok.mean() == pytest.approx(10 / (20 + 10), rel=0.02)


def test_delay_smooths_a_burst_to_the_rate_and_refuses_beyond_it():
    """Nginx `limit_req rate=10r/s burst=1` (no nodelay), by hand: arrivals at 0, 10, 20 ms and
    1 s: the first passes, the second waits until 100 ms, the third would wait 180 ms (1.8
    places > burst 1) and is refused, the fourth passes on time."""
    lim = RateLimit(id="nginx", rate_rps=10, burst=1, delay=True)
    t, ok = apply_rate_limits([lim], np.array([0.0, 0.01, 0.02, 1.0]), {}, np.random.default_rng(0))
    assert ok.tolist() == [True, True, False, True]
    assert t[ok].tolist() == pytest.approx([0.0, 0.1, 1.0])


def test_per_model_limit_counts_only_that_models_requests():
    """Seed 004 §3.2: face comparison 1,000 calls a minute, liveness 200. Only requests whose
    route visits the limited stage use its bucket."""
    arr = np.arange(0, 60, 0.01)  # 100 req/s for a minute, constant
    visits = {"liveness": (np.arange(arr.shape[0]) % 2) == 0}  # every other request
    lim = RateLimit(id="liveness", scope="model", stage="liveness", rate_rps=200 / 60)
    _, ok = apply_rate_limits([lim], arr, visits, np.random.default_rng(0))
    assert ok[1::2].all()  # the others pass untouched
    assert ok[0::2].sum() == pytest.approx(200, abs=2)


def test_fluid_bound_of_the_analytic_model():
    res = load_text(
        MM1K
        + """  rate_limits:
    - {id: nginx, rate_rps: 25, burst: 5, delay: true}
    - {id: per-client, scope: client, clients: 4, rate_rps: 5}
""",
        "t.yaml",
    )
    assert res.spec is not None, [d.text() for d in res.diagnostics]
    assert admitted_rps(res.spec, 30) == 20  # 4 clients × 5 req/s binds before the 25 QPS limit


def test_reference_gateway_sheds_past_the_knee_with_bounded_latency():
    """The reference gateway admits 8 in flight and answers 429 beyond (issue 29: 29 of 29
    failures at the stress steps were such 429s): past the knee the model predicts a shed share
    and a bounded P99 instead of a queue that grows through the run."""
    spec = load_file(ROOT / "specs" / "ocr-reference.yaml").spec
    assert spec is not None
    curve = sweep(spec, [2.0, 20.0], env="cpu", requests=6000)
    low, high = curve.points
    assert low.shed_share < 0.01 and high.shed_share > 0.3
    assert high.stable and high.p99_ms is not None and high.p99_ms < 3000
    assert curve.knee_rps == 20.0 and curve.ceiling_rps is not None


def test_parse_rates():
    assert parse_rates("2.5") == [2.5]
    assert parse_rates("1:2:0.5") == [1.0, 1.5, 2.0]
    for bad in ("0", "a", "3:1:1", "1:2:0", "1:2", "1:1000:0.001"):
        with pytest.raises(RateSpecError):
            parse_rates(bad)


def test_curve_drawings_are_stable_and_overlay_measured_points(tmp_path):
    spec = tmp_path / "mm1k.yaml"
    spec.write_text(MM1K, encoding="utf-8")
    rep = api.capacity(spec, rates=[2, 6, 10, 14], requests=4000, plot=tmp_path / "c.svg")
    assert rep.curve is not None and rep.knee["curve_rps"] == rep.curve["knee_rps"]
    curve = load_curve(rep.curve)
    svg = curve_svg(curve, [MeasuredPoint(10, 120.0, 400.0)])
    assert svg == curve_svg(curve, [MeasuredPoint(10, 120.0, 400.0)])
    assert svg.count("<circle") == 1 and "measured" in svg and "P99 budget 2000 ms" in svg
    assert (tmp_path / "c.svg").read_text(encoding="utf-8") == curve_svg(curve)
    import xml.etree.ElementTree as ET

    ET.fromstring(svg)  # well-formed
    png = curve_png(curve, [MeasuredPoint(10, 120.0, 400.0)])
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png == curve_png(curve, [MeasuredPoint(10, 120.0, 400.0)])
    assert not math.isnan(rep.knee["ceiling_rps"])


def test_capacity_cli_passes_rates_on_and_refuses_a_bad_one(tmp_path):
    from typer.testing import CliRunner

    from archkit.cli import _load_commands, app

    _load_commands()
    spec = tmp_path / "mm1k.yaml"
    spec.write_text(MM1K, encoding="utf-8")
    runner = CliRunner()
    res = runner.invoke(app, ["capacity", str(spec), "--rate", "4:12:4", "-f", "json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert [p["rate_rps"] for p in data["curve"]["points"]] == [4, 8, 12]
    assert data["knee"]["ceiling_rps"] == 12.5 and data["knee"]["curve_rps"] == data["curve"]["knee_rps"]
    text = runner.invoke(app, ["capacity", str(spec), "--rate", "12", "--plot", str(tmp_path / "c.png")])
    assert "knee:" in text.output and (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"
    bad = runner.invoke(app, ["capacity", str(spec), "--rate", "5:1:1"])
    assert bad.exit_code == 2 and "0 < A ≤ B" in bad.output


def test_a_stage_queue_limit_is_the_same_m_m_1_k_counted_as_failures(tmp_path):
    """The same system with the limit on the worker's queue: 4 calls waiting + 1 in service is
    K = 5, so the share refused is again (1 − ρ)ρ^5 / (1 − ρ^6); the server's refusal fails the
    request (no fallback) instead of a gateway's 429."""
    spec = tmp_path / "q.yaml"
    spec.write_text(
        MM1K.replace("{service: app, max_inflight: 5,", "{stage: work, max_queue: 4,"), encoding="utf-8"
    )
    rep = api.capacity(spec, rates=[10], requests=200_000)
    assert rep.curve is not None
    (pt,) = rep.curve["points"]
    assert pt["shed_share"] == 0
    assert pt["failed_share"] == pytest.approx(q.mmck_loss(10, 0.08, 1, 5), rel=0.05)


# A gateway on one core admits 8 requests in flight; each admitted request costs 10 ms of HTTP
# exchange (its ingress stage) and 100 ms of work, each refused one the same 10 ms exchange.
REFUSAL_COST = """apiVersion: archkit/v1
metadata: {name: refusals}
budgets: {throughput_rps: 5, p99_ms: 5000}
dataflow:
  stages:
    - {id: gate, kind: ingress, service: gw, cpu_ms: 10, p50_ms: 10, service_distribution: deterministic}
    - {id: work, kind: postprocess, service: gw, cpu_ms: 100, p50_ms: 100, service_distribution: deterministic}
  edges:
    - {from: gate, to: work}
topology:
  node_pools: [{id: cpu, cpu_cores: 1}]
  services:
    - {id: gw, pool: cpu, resources: {limits: {cpu_cores: 1}}}
traffic:
  admission:
    - {service: gw, max_inflight: 8}
"""


def test_each_refusal_costs_its_http_exchange_on_the_shared_core(tmp_path):
    """By hand, at λ = 50 req/s on the one core (always busy: 8 in flight): admitted X req/s cost
    110 ms each and the refused 50 − X cost 10 ms each, so 0.110 X + 0.010 (50 − X) = 1 gives
    X = 5 req/s and a shed share of 0.9. Refusing for free would answer 1 / 0.110 = 9.09 req/s
    and shed 0.818: the quiet fidelity run's shed share missed by that kind of gap."""
    spec = tmp_path / "refusals.yaml"
    spec.write_text(REFUSAL_COST, encoding="utf-8")
    rep = api.capacity(spec, rates=[50], requests=40_000)
    assert rep.curve is not None
    (pt,) = rep.curve["points"]
    assert pt["shed_share"] == pytest.approx(0.9, abs=0.005)
    assert pt["throughput_rps"] == pytest.approx(5.0, rel=0.03)
    # a gateway stage without processor time (a delay) makes refusals free again: 1 / 0.100 s
    free = tmp_path / "free.yaml"
    free.write_text(REFUSAL_COST.replace("cpu_ms: 10, ", ""), encoding="utf-8")
    rep = api.capacity(free, rates=[50], requests=40_000)
    assert rep.curve is not None
    (pt,) = rep.curve["points"]
    assert pt["shed_share"] == pytest.approx(0.8, abs=0.005)


def test_a_token_bucket_refusal_costs_the_entry_services_exchange(tmp_path):
    """The same gateway with a token bucket (4 req/s, no burst) instead of the admission limit, fed
    one request every 25 ms (40 req/s, recorded arrivals). By hand: the bucket gains 0.1 of a
    token per arrival, so it admits every 10th: 4 req/s, and refuses 36 req/s. Each refusal is the
    ingress's 10 ms HTTP exchange: 0.36 of the core, leaving 0.64 to the admitted requests, which
    arrive 250 ms apart and so run alone at 0.64 of full speed: (10 + 100) / 0.64 = 171.9 ms
    each, and the core is busy 4 × 0.110 + 36 × 0.010 = 0.80 of the time (the model before
    refused for free: 110 ms at 0.44 busy). With no `cpu_ms` on the ingress the exchange runs on no
    modelled core: 110 ms, and the core busy with the 4 × 100 ms of work alone, 0.40."""
    from archkit.perf.pipesim import simulate_pipeline
    from archkit.perf.resources import load_model

    text = REFUSAL_COST.replace(
        "  admission:\n    - {service: gw, max_inflight: 8}\n",
        "  rate_limits:\n    - {id: edge, rate_rps: 4}\n",
    )
    arrivals = [0.025 * i for i in range(5000)]
    free = text.replace("cpu_ms: 10, ", "")  # the ingress a delay: its exchange on no modelled core
    for body, mean_ms, busy in ((text, 110 / 0.64, 0.80), (free, 110.0, 0.40)):
        spec = load_text(body, "bucket.yaml").spec
        assert spec is not None
        sim = simulate_pipeline(spec, load_model(spec), 40, arrivals=arrivals)
        assert sim.shed == 4500
        assert sim.mean_ms == pytest.approx(mean_ms, rel=0.002)
        assert sim.utilisation["gw:cpu"] == pytest.approx(busy, abs=0.002)
