"""The open model without a live service: arrival schedules, the generator verdict, predicted vs measured."""

from __future__ import annotations

import math
import statistics

import pytest

from archkit.loadtest import arrivals, compare, generator, hist, plan
from archkit.loadtest.options import LoadtestOptions
from archkit.loadtest.runner import Bucket
from archkit.spec import load_file

from .conftest import TOY_SPEC


def test_constant_arrivals_are_evenly_spaced_and_follow_the_steps() -> None:
    spans = [arrivals.Span(0, 2, 5), arrivals.Span(2, 1, 10)]
    times = list(arrivals.send_times(spans, "constant"))
    assert times[:3] == [0.0, 0.2, 0.4] and len(times) == 20
    assert arrivals.counts(spans, "constant") == [10, 10]
    assert all(b > a for a, b in zip(times, times[1:], strict=False))


def test_poisson_arrivals_have_exponential_gaps_and_are_deterministic() -> None:
    spans = [arrivals.Span(0, 2000, 50)]
    times = list(arrivals.send_times(spans, "poisson", seed=3))
    assert times == list(arrivals.send_times(spans, "poisson", seed=3))
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert len(times) == pytest.approx(100_000, rel=0.01)
    assert statistics.mean(gaps) == pytest.approx(0.02, rel=0.01)
    assert statistics.stdev(gaps) == pytest.approx(0.02, rel=0.02)  # exponential: sd = mean
    share = arrivals.counts(spans, "poisson", seed=4, share=0.25)[0]
    assert share == pytest.approx(25_000, rel=0.02)
    with pytest.raises(ValueError, match="unknown arrival"):
        list(arrivals.send_times(spans, "bursty"))


def test_open_model_is_the_default_for_baseline_and_stress_not_chaos() -> None:
    toy = load_file(TOY_SPEC).spec
    assert plan.build(toy, LoadtestOptions(level="baseline")).arrival == "constant"
    assert plan.build(toy, LoadtestOptions(level="stress")).arrival == "constant"
    assert plan.build(toy, LoadtestOptions(level="chaos")).arrival == "closed"
    p = plan.build(toy, LoadtestOptions(level="baseline", arrival="poisson", max_inflight=3))
    assert p.open and p.users == 3  # the users are the in-flight slots
    assert plan.build(toy, LoadtestOptions(level="baseline", arrival="closed", users=5)).users == 5


def _plan() -> plan.Plan:
    return plan.build(load_file(TOY_SPEC).spec, LoadtestOptions(level="baseline", duration=10, rate=20))


def test_a_generator_that_fell_behind_is_told_from_a_slow_server() -> None:
    p = _plan()
    lag = hist.new()
    hist.record_ms(lag, 400)
    behind = generator.assess(
        p,
        [{"index": 0, "duration_s": 10, "sent": 150, "dropped": 0}],
        {"scheduled": [200], "handed": 150, "dropped": 0, "cpu_s": 9.8, "wall_s": 10, "processes": 1},
        lag,
    )
    assert behind["kept_up"] is False
    assert "could not keep up" in behind["message"] and "15 of 20 req/s" in behind["message"]
    assert "(saturated)" in behind["message"]
    slow_server = generator.assess(
        p,
        [{"index": 0, "duration_s": 10, "sent": 120, "dropped": 80}],
        {"scheduled": [200], "handed": 120, "dropped": 80, "cpu_s": 0.5, "wall_s": 10, "processes": 1},
        hist.new(),
    )
    assert slow_server["kept_up"] is True
    assert "80 scheduled requests were dropped" in slow_server["message"]
    one_short = generator.assess(  # one request of rounding at the phase end is not a shortfall
        p,
        [{"index": 0, "duration_s": 10, "sent": 199, "dropped": 0}],
        {"scheduled": [200], "handed": 199, "dropped": 0},
        hist.new(),
    )
    assert one_short["kept_up"] is True


def test_dropped_requests_count_as_failures() -> None:
    b = Bucket(requests=90, errors=0, dropped=10)
    hist.record_ms(b.latency, 5.0)
    s = b.stats(10)
    assert s["error_rate"] == 0.1 and s["dropped"] == 10


def test_prediction_error_in_percent() -> None:
    assert compare.error_pct(115, 100) == 15.0
    assert compare.error_pct(80, 100) == -20.0
    assert compare.error_pct(None, 1) is None and compare.error_pct(1, 0) is None
    toy = load_file(TOY_SPEC).spec
    measured = {
        "kind": "stress",
        "offered_rps": 40,
        "end_to_end": {"p50_ms": 10.0, "p99_ms": 30.0},
        "stages": {"api": {"p50_ms": 8.0}},
        "stress": {"knee_rps": 100.0, "knee_offered_rps": 90},
    }
    got = compare.compare(toy, measured, None)
    assert got["rate_rps"] == 90
    e2e = got["end_to_end"]["p50_ms"]
    assert e2e["measured"] == 10.0 and math.isfinite(e2e["predicted"])
    assert e2e["error_pct"] == compare.error_pct(e2e["predicted"], 10.0)
    assert got["knee_rps"]["measured"] == 100.0
    section = compare.section(got)
    assert section[0] == "Predicted vs measured" and any(r[0] == "end to end" for r in section[2])
