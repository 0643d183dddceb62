"""Dynamic batching prediction: interpolation, reduction to M/D/c, seed 000 §2.1's numbers, properties."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from archkit.perf import queueing as q
from archkit.perf.batching import (
    ServiceTable,
    candidate_batch_sizes,
    ceiling_rps,
    fill_time_bound_ms,
    predict,
    recommend,
)

SEED = ServiceTable([(1, 1.2 + 32 + 13.8), (8, 8.3 + 176 + 39.7)])  # seed 000 §2.1: 47 ms, 224 ms


def test_linear_interpolation_between_measured_sizes_and_extrapolation_beyond():
    assert SEED.ms(1) == pytest.approx(47)
    assert SEED.ms(8) == pytest.approx(224)
    assert SEED.ms(4.5) == pytest.approx(47 + 177 * 3.5 / 7)
    assert SEED.ms(16) == pytest.approx(224 + 177 / 7 * 8)
    assert SEED.extrapolated(16) and not SEED.extrapolated(5)
    one = ServiceTable([(4, 40)])
    assert one.ms(8) == pytest.approx(80) and one.ms(2) == pytest.approx(40)


def test_batch_one_without_delay_is_plain_md1():
    p = predict(SEED, 15, batch_size=1, max_queue_delay_us=0, instances=1, replicas=1)
    assert p.mean_batch == 1 and p.fill_p99_ms == 0
    assert p.rho == pytest.approx(15 * 0.047)
    assert p.wait_mean_ms == pytest.approx(1000 * q.md1_wait(15, 0.047))
    assert p.mean_ms == pytest.approx(47 + p.wait_mean_ms)
    assert p.ceiling_rps == pytest.approx(1000 / 47)


def test_seed_batch8_misses_50ms_and_batch1_with_six_gpus_meets_it():
    b8 = predict(SEED, 30, batch_size=8, max_queue_delay_us=100_000, instances=1, replicas=2)
    assert b8.fill_p99_ms == pytest.approx(100)  # the timer, not a full batch
    assert 2 < b8.mean_batch < 3.5  # 15 req/s per replica × 100 ms, plus requests that queued
    assert b8.p99_ms > 50 and b8.p50_ms > 50
    # one shared queue (least-request routing): six GPUs, as seed 000 §2.3 says
    rec = recommend(SEED, 30, 50, max_batch_size=8, preferred=[8], instances=1, routing="least-request")
    assert rec.met and rec.prediction.batch_size == 1 and rec.prediction.replicas == 6
    assert rec.prediction.p99_ms <= 50 and "least-request" in rec.reason
    # Cosmetatos raises the M/D/c wait: the analytic answer is six too (half of M/M/c said five)
    fast = recommend(SEED, 30, 50, 8, [8], 1, verify=False, routing="least-request")
    assert fast.prediction.replicas == 6
    # random routing (kube-proxy): each replica is its own M/D/1 queue, and 3 ms of headroom
    # over a 47 ms service time needs almost idle replicas
    rnd = recommend(SEED, 30, 50, max_batch_size=8, preferred=[8], instances=1)
    assert not rnd.met and "routing random" in rnd.reason
    none = recommend(SEED, 30, 40, max_batch_size=8, preferred=[8])
    assert not none.met and "47 ms" in none.reason


def test_random_routing_waits_as_one_replica_at_its_share_of_the_rate():
    """Poisson splitting: R replicas behind random routing are R independent queues at λ/R."""
    table = ServiceTable([(1, 20.0)])
    four = predict(table, 120, 1, 0, 1, 4)
    one = predict(table, 30, 1, 0, 1, 1)
    assert four.wait_mean_ms == pytest.approx(one.wait_mean_ms)
    pooled = predict(table, 120, 1, 0, 1, 4, routing="least-request")
    rr = predict(table, 120, 1, 0, 1, 4, routing="round-robin")
    assert pooled.wait_mean_ms < rr.wait_mean_ms < four.wait_mean_ms


def test_overload_predicts_unbounded_latency():
    p = predict(SEED, 100, batch_size=1, instances=1, replicas=1)
    assert p.rho >= 1 and math.isinf(p.p99_ms)


def test_candidates_and_ceiling():
    assert candidate_batch_sizes(SEED, 8, [6]) == [1, 2, 4, 6, 8]
    assert ceiling_rps(SEED, 8, 2) == pytest.approx(2 * 8 / 0.224)


@settings(max_examples=60, deadline=None)
@given(lam=st.floats(0.1, 200), b=st.integers(1, 32), d1=st.integers(0, 200_000), d2=st.integers(0, 200_000))
def test_a_larger_queue_delay_never_lowers_the_fill_time_bound(lam, b, d1, d2):
    lo, hi = sorted((d1, d2))
    assert fill_time_bound_ms(lam, b, hi) >= fill_time_bound_ms(lam, b, lo)
    assert fill_time_bound_ms(lam, b, hi) <= hi / 1000 + 1e-9


@settings(max_examples=60, deadline=None)
@given(lam=st.floats(0.5, 60), k=st.integers(1, 8))
def test_more_instances_never_predict_more_waiting(lam, k):
    a = predict(SEED, lam, batch_size=1, instances=k, replicas=1)
    b = predict(SEED, lam, batch_size=1, instances=k + 1, replicas=1)
    assert b.wait_mean_ms <= a.wait_mean_ms + 1e-9
    assert b.wait_p99_ms <= a.wait_p99_ms + 1e-9
    assert b.rho <= a.rho


@settings(max_examples=60, deadline=None)
@given(lam=st.floats(0.5, 60), extra=st.floats(0, 30), k=st.integers(1, 6))
def test_utilisation_grows_with_the_rate(lam, extra, k):
    a = predict(SEED, lam, batch_size=1, instances=k)
    b = predict(SEED, lam + extra, batch_size=1, instances=k)
    assert b.rho >= a.rho
