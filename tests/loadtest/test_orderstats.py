"""Percentile verdicts that know their sample size: order-statistics intervals, hand-computed.

Twenty samples 1, 2, ..., 20 ms. For the median, Bin(20, 0.5) gives P(B ≤ 5) = 0.0207 and
P(B ≤ 6) = 0.0577 (binomial table), so the 95 % interval is [X_(6), X_(15)] = [6, 15] ms with
coverage 1 − 2 × 0.0207 = 0.959. A P50 budget of 15 ms is met (the whole interval is within it),
5 ms is missed (the whole interval is beyond it), 10 ms is inconclusive. A P99 needs
0.99^n ≤ 0.025, n ≥ 368 (0.99^367 = 0.02501): twenty samples decide nothing about it.
"""

from __future__ import annotations

import math

import pytest
import yaml

from archkit.loadtest import hist
from archkit.loadtest.judge import judge, passed
from archkit.orderstats import decide, interval, min_samples, ranks
from archkit.spec import load_text

SAMPLES = [float(x) for x in range(1, 21)]


def _ci(p: float, samples: list[float] = SAMPLES) -> dict:
    xs = sorted(samples)
    return interval(len(xs), p, lambda k: xs[k - 1])


def test_binomial_ranks_match_the_table() -> None:
    assert ranks(20, 0.5) == (6, 15)
    below5 = sum(math.comb(20, i) for i in range(6)) / 2**20
    below6 = sum(math.comb(20, i) for i in range(7)) / 2**20
    assert round(below5, 4) == 0.0207 and round(below6, 4) == 0.0577
    assert (min_samples(0.5), min_samples(0.95), min_samples(0.99)) == (6, 72, 368)
    assert ranks(367, 0.99)[1] is None and ranks(368, 0.99) == (360, 368)


@pytest.mark.parametrize(
    ("budget", "expected"),
    [(15.0, True), (16.0, True), (5.0, False), (5.9, False), (6.0, None), (10.0, None)],
)
def test_pass_fail_and_inconclusive_where_the_interval_says(budget, expected) -> None:
    ci = _ci(0.5)
    assert (ci["lo_ms"], ci["hi_ms"], ci["n"]) == (6.0, 15.0, 20)
    assert decide(budget, ci)[0] is expected


def test_too_few_samples_for_a_p99_is_inconclusive_even_far_from_the_budget() -> None:
    ci = _ci(0.99)
    assert ci["hi_ms"] is None and ci["min_n"] == 368
    assert decide(1.0, ci) == (None, 368)  # every sample is over 1 ms, yet 20 draws are no P99
    assert decide(100.0, ci) == (None, 368)


def _spec(**budgets):
    return load_text(
        yaml.safe_dump(
            {
                "apiVersion": "archkit/v1",
                "metadata": {"name": "s"},
                "budgets": budgets,
                "loadtest": {"target": {"host": "http://127.0.0.1:1"}, "scenarios": [{"id": "a"}]},
            }
        ),
        "s.yaml",
    ).spec


def test_the_judge_on_a_recorded_histogram() -> None:
    """Twenty samples 0.1 ... 2.0 ms through the HDR histogram the runner records (exact below
    2,048 µs at 3 digits), at 2 samples/s: the interval is [X_(6), X_(15)] = [0.6, 1.5] ms."""
    h = hist.new()
    for x in SAMPLES:
        hist.record_ms(h, x / 10)
    e2e = {**hist.summary(h), "ci": hist.intervals(h)}
    measured = {"kind": "baseline", "duration_s": 10.0, "end_to_end": e2e}
    by = {v.id: v for v in judge(_spec(p50_ms=1.5), measured)}
    v = by["end_to_end.p50_ms"]
    assert (v.outcome, v.samples, v.interval) == ("pass", 20, (0.6, 1.5))
    assert "95% interval [0.6 ms, 1.5 ms] from 20 samples" in v.why
    v = judge(_spec(p50_ms=0.5), measured)[0]
    assert v.outcome == "fail" and not passed([v])
    v = judge(_spec(p50_ms=1.0), measured)[0]
    assert v.outcome == "inconclusive" and v.passed is None and v.inconclusive
    assert passed([v]) and not passed([v], strict=True)
    v = judge(_spec(p99_ms=100), measured)[0]
    # 368 samples at the level's 2 samples/s: 184 s
    assert v.outcome == "inconclusive" and v.decide_s == 184.0
    assert "too few samples for a P99 (it needs 368)" in v.why and "~184 s" in v.why


def test_a_stage_histogram_interval_spans_whole_buckets() -> None:
    """A stage measured by a bucketed histogram: the sample's value is known only to its bucket."""
    from archkit.loadtest.scrape import histogram_stats
    from archkit.spec.model import MetricRef

    ref = MetricRef(metric="t_seconds", type="histogram")
    # 400 requests: 390 in (0, 1 ms], 10 in (1, 2.5 ms]
    delta = {
        ("t_seconds_bucket", (("le", "0.001"),)): 390.0,
        ("t_seconds_bucket", (("le", "0.0025"),)): 400.0,
        ("t_seconds_bucket", (("le", "+Inf"),)): 400.0,
        ("t_seconds_count", ()): 400.0,
        ("t_seconds_sum", ()): 0.3,
    }
    got = histogram_stats(delta, ref)
    ci = got["ci"]["p99_ms"]
    lo, hi = ranks(400, 0.99)
    assert (lo, hi) == (392, 400)  # both ranks fall in the (1, 2.5] ms bucket
    assert (ci["lo_ms"], ci["hi_ms"]) == (1.0, 2.5)
    assert decide(2.5, ci)[0] is True and decide(0.9, ci)[0] is False and decide(2.0, ci)[0] is None


def test_a_prediction_against_an_interval_by_hand() -> None:
    """Interval [10, 12] ms: 11 is within ±25 % of every value in it; 16 is more than 25 % over even 12
    (+33 %); 12.8 is within of 12 (+6.7 %) but not of 10 (+28 %): the run cannot tell. Too few samples,
    or an open end, decide nothing."""
    from archkit.orderstats import within_tolerance

    ci = {"n": 400, "min_n": 368, "lo_ms": 10.0, "hi_ms": 12.0}
    assert within_tolerance(11.0, ci, 25) is True
    assert within_tolerance(16.0, ci, 25) is False
    assert within_tolerance(7.0, ci, 25) is False  # -30 % of 10, the nearest end
    assert within_tolerance(12.8, ci, 25) is None
    assert within_tolerance(11.0, {**ci, "n": 113}, 25) is None
    assert within_tolerance(11.0, {**ci, "hi_ms": None}, 25) is None
