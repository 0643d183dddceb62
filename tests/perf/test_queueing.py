"""Queueing formulas against textbook values, and their properties (Hypothesis)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from archkit.perf import queueing as q

# --- textbook values (Erlang B/C tables; e.g. Kleinrock, Queueing Systems Vol. 1, §3.5)


@pytest.mark.parametrize(
    "c,a,expected",
    [
        (1, 0.5, 0.5),  # M/M/1: P(wait) = ρ
        (3, 2.0, 0.4444),  # C(3, 2 Erl) = 4/9
        (5, 4.0, 0.5541),
        (10, 8.0, 0.4092),
    ],
)
def test_erlang_c_table(c, a, expected):
    assert q.erlang_c(c, a) == pytest.approx(expected, abs=5e-4)


@pytest.mark.parametrize("c,a,expected", [(1, 1.0, 0.5), (3, 2.0, 0.2105), (10, 5.0, 0.01838)])
def test_erlang_b_table(c, a, expected):
    assert q.erlang_b(c, a) == pytest.approx(expected, abs=5e-5)


def test_mm1_closed_forms_and_littles_law():
    lam, s = 8.0, 0.1  # ρ = 0.8
    rho = q.utilisation(lam, s)
    assert rho == pytest.approx(0.8)
    wq = q.mmc_wait(lam, s, 1)
    assert wq == pytest.approx(rho * s / (1 - rho))  # Wq = ρ/(μ − λ) = 0.4 s
    lq = q.little_l(lam, wq)
    assert lq == pytest.approx(rho**2 / (1 - rho))  # Lq = ρ²/(1 − ρ) = 3.2
    assert q.little_w(lq, lam) == pytest.approx(wq)
    # L = λW for the whole system too: W = Wq + S, L = Lq + ρ
    assert q.little_l(lam, wq + s) == pytest.approx(lq + rho)


def test_md1_is_pollaczek_khinchine_and_half_of_mm1():
    lam, s = 0.5, 1.0  # ρ = 0.5
    assert q.md1_wait(lam, s) == pytest.approx(0.5)  # ρS / 2(1 − ρ)
    assert q.md1_wait(lam, s) == pytest.approx(q.mmc_wait(lam, s, 1) / 2)
    assert q.mg1_wait(lam, s, scv=0) == pytest.approx(q.md1_wait(lam, s))
    assert q.mg1_wait(lam, s, scv=1) == pytest.approx(q.mmc_wait(lam, s, 1))
    assert q.mdc_wait(lam, s, 1) == q.md1_wait(lam, s)


def test_overload_is_infinite():
    assert q.mmc_wait(20, 0.1, 2) == math.inf
    assert q.md1_wait(10, 0.1) == math.inf
    assert q.erlang_c(2, 3.0) == 1.0


def test_wait_quantile_matches_the_exponential_tail():
    lam, s, c = 30.0, 0.047, 2
    t = q.mmc_wait_quantile(lam, s, c, 0.99)
    a = lam * s
    tail = q.erlang_c(c, a) * math.exp(-(c / s - lam) * t)
    assert tail == pytest.approx(0.01, rel=1e-9)
    assert q.mmc_wait_quantile(1.0, 0.01, 4, 0.99) == 0.0  # almost nobody waits


def test_poisson_and_erlang_helpers():
    assert q.poisson_cdf(0, 2.0) == pytest.approx(math.exp(-2))
    assert q.poisson_cdf(2, 2.0) == pytest.approx(5 * math.exp(-2))
    assert q.poisson_quantile(1.5, 0.99) == 5
    assert q.erlang_time_quantile(1, 10.0, 0.99) == pytest.approx(-math.log(0.01) / 10, rel=1e-6)
    assert q.mean_min_erlang(3, 10.0, 1e6) == pytest.approx(0.3, rel=1e-6)  # E[T_3] = 3/λ
    assert q.mean_min_erlang(3, 10.0, 0.0) == 0.0
    assert q.mean_min_poisson(2.0, 10_000) == pytest.approx(2.0)


# --- properties

rates = st.floats(0.01, 500, allow_nan=False)
service = st.floats(0.0005, 2.0, allow_nan=False)


@settings(max_examples=100, deadline=None)
@given(lam=rates, s=service, c=st.integers(1, 40))
def test_more_servers_never_wait_longer(lam, s, c):
    for fn in (q.mmc_wait, q.mdc_wait):
        assert fn(lam, s, c + 1) <= fn(lam, s, c) + 1e-12
    assert q.mdc_wait_quantile(lam, s, c + 1) <= q.mdc_wait_quantile(lam, s, c) + 1e-12
    assert q.erlang_c(c + 1, lam * s) <= q.erlang_c(c, lam * s) + 1e-12


@settings(max_examples=100, deadline=None)
@given(lam=rates, extra=st.floats(0, 100), s=service, c=st.integers(1, 40))
def test_utilisation_and_wait_grow_with_the_arrival_rate(lam, extra, s, c):
    assert q.utilisation(lam + extra, s, c) >= q.utilisation(lam, s, c)
    assert q.mmc_wait(lam + extra, s, c) >= q.mmc_wait(lam, s, c) - 1e-12


@settings(max_examples=100, deadline=None)
@given(c=st.integers(1, 60), a=st.floats(0, 80))
def test_erlang_c_is_a_probability_at_least_erlang_b(c, a):
    cp = q.erlang_c(c, a)
    assert 0.0 <= cp <= 1.0
    if a < c:
        assert cp >= q.erlang_b(c, a) - 1e-12


def _erlang_b_steps(c: int, a: float) -> float:
    b = 1.0
    for k in range(1, c + 1):
        b = a * b / (k + a * b)
    return b


@pytest.mark.parametrize(
    ("c", "a"), [(100_001, 100_000.0), (100_500, 99_000.0), (101_000, 101_500.0), (120_000, 110_000.0)]
)
def test_erlang_b_past_the_exact_range_is_the_recurrence_within_a_fifth_of_a_percent(c, a):
    """Past EXACT_SERVERS the Poisson ratio with a normal cdf: against the recurrence run by hand
    (1.3e-3 relative at c = 101,000, a = 101,500; 4e-4 at a = c - 1)."""
    assert c > q.EXACT_SERVERS
    assert q.erlang_b(c, a) == pytest.approx(_erlang_b_steps(c, a), rel=2e-3)


def test_erlang_b_far_above_the_load_is_zero_and_the_pool_hint_is_found_by_halving():
    """40 standard deviations above the load: e^-800, below a double. The AK234 hint, found by
    doubling and halving, is the smallest pool a step-by-step search finds (hand-checkable for
    small loads), and at 2 million offered connections it is found at once."""
    from archkit.checks.ak234_connection_pool_exhausted import _covering

    assert q.erlang_b(10_000, 100.0) == 0.0 and q.erlang_b(150, 100.0) > 0.0
    for offered in (0.5, 3.2, 7.9, 15.0, 40.0, 123.4, 999.0):
        size = max(1, int(offered) + 1)
        while q.erlang_c(size, offered) > 0.01:
            size += 1
        assert _covering(offered, 0.01) == size
    big = _covering(2e6, 0.01)
    assert q.erlang_c(big, 2e6) <= 0.01 < q.erlang_c(big - 1, 2e6)
