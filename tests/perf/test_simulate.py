"""The batcher simulation: checked against Pollaczek–Khinchine, and the analytic P99 against it."""

from __future__ import annotations

import pytest

from archkit.perf import queueing as q
from archkit.perf.batching import ServiceTable, predict
from archkit.perf.simulate import simulate

SEED = ServiceTable([(1, 47), (8, 224)])  # seed 000 §2.1


def test_unbatched_single_server_matches_pollaczek_khinchine():
    sim = simulate(SEED, 15, 1, 0, 1, requests=20_000)
    assert sim.mean_ms == pytest.approx(47 + 1000 * q.md1_wait(15, 0.047), rel=0.03)
    assert sim.stable and sim.mean_batch == 1


def test_deterministic_for_a_fixed_seed():
    assert simulate(SEED, 30, 8, 1000, 2) == simulate(SEED, 30, 8, 1000, 2)
    assert simulate(SEED, 30, 8, 1000, 2, seed=8) != simulate(SEED, 30, 8, 1000, 2)


def test_batches_fill_under_load_and_stay_small_when_idle():
    heavy = simulate(ServiceTable([(1, 10), (8, 30)]), 200, 8, 1000, 1)
    assert heavy.mean_batch > 3  # grows until throughput matches the rate (S(3.5) ≈ 17 ms ≈ 3.5 / 200 rps)
    idle = simulate(ServiceTable([(1, 10), (8, 30)]), 5, 8, 0, 1)
    assert idle.mean_batch < 1.2


def test_overload_is_detected():
    assert not simulate(SEED, 100, 1, 0, 1).stable


@pytest.mark.parametrize(
    "points,lam,b,delay_us,k",
    [
        ([(1, 47), (8, 224)], 15, 8, 100_000, 1),  # the seed's batch-8 configuration, per replica
        ([(1, 303), (4, 560), (8, 960)], 10, 8, 100_000, 2),
        ([(1, 202), (2, 254), (4, 363)], 20, 4, 20_000, 2),
        ([(1, 6.2), (16, 15), (32, 23.8)], 250, 32, 2_000, 2),
        ([(1, 10), (8, 30)], 100, 8, 5_000, 1),
        ([(1, 10), (8, 30)], 200, 8, 1_000, 1),
        ([(1, 20), (8, 40)], 150, 8, 2_000, 2),
    ],
)
def test_analytic_p99_is_conservative_when_batches_form(points, lam, b, delay_us, k):
    table = ServiceTable(points)
    pred = predict(table, lam, b, delay_us, k, 1)
    sim = simulate(table, lam, b, delay_us, k)
    assert sim.stable
    assert pred.p99_ms >= sim.p99_ms
