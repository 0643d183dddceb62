"""Queueing formulas: Little's law, utilisation, Erlang C (M/M/c), M/D/1 and an M/D/c approximation.

Which model is used where (see docs/checks.md, "How archkit predicts latency"):
- CPU stages with `concurrency` workers: M/M/c (Erlang C) — service times of parsers, rule
  engines and HTTP handlers vary a lot, so exponential service is the honest default.
- Batched GPU model stages: service of one batch is nearly deterministic (same shapes, same
  kernels; seed 000 §2.1 gives one figure per batch size), so batches are served by an
  M/D/c queue. M/D/1 is exact (Pollaczek–Khinchine); for c > 1 we use the classic
  approximation W(M/D/c) ≈ W(M/M/c) / 2, which is exact at c = 1 and slightly
  pessimistic for larger c (Cosmetatos' correction only ever lowers it).
All times are in seconds here; callers convert from the spec's milliseconds.
"""

from __future__ import annotations

import math

INF = math.inf


def little_l(arrival_rate: float, time_in_system: float) -> float:
    """Little's law: mean number in the system L = λ·W."""
    return arrival_rate * time_in_system


def little_w(number_in_system: float, arrival_rate: float) -> float:
    """Little's law solved for the mean time in the system: W = L/λ."""
    if arrival_rate <= 0:
        raise ValueError("arrival rate must be positive")
    return number_in_system / arrival_rate


def utilisation(arrival_rate: float, service_time: float, servers: int = 1) -> float:
    """ρ = λ·S / c: the fraction of time each of the c servers is busy (≥ 1 means overload)."""
    if servers < 1:
        raise ValueError("servers must be >= 1")
    return arrival_rate * service_time / servers


def erlang_b(servers: int, offered_load: float) -> float:
    """Erlang B blocking probability for c servers and offered load a = λ·S (stable recurrence)."""
    if servers < 0 or offered_load < 0:
        raise ValueError("servers and load must be non-negative")
    b = 1.0
    for k in range(1, servers + 1):
        b = offered_load * b / (k + offered_load * b)
    return b


def erlang_c(servers: int, offered_load: float) -> float:
    """Erlang C: probability that an arrival has to wait in an M/M/c queue (1 when overloaded)."""
    if offered_load <= 0:
        return 0.0
    rho = offered_load / servers
    if rho >= 1:
        return 1.0
    b = erlang_b(servers, offered_load)
    return b / (1 - rho * (1 - b))


def mmc_wait(arrival_rate: float, service_time: float, servers: int = 1) -> float:
    """Mean time in queue of M/M/c: C(c, a) / (c·μ − λ); infinite when ρ ≥ 1."""
    if arrival_rate <= 0:
        return 0.0
    a = arrival_rate * service_time
    if a >= servers:
        return INF
    return erlang_c(servers, a) * service_time / (servers - a)


def mmc_wait_quantile(arrival_rate: float, service_time: float, servers: int = 1, q: float = 0.99) -> float:
    """q-quantile of the M/M/c queueing delay: P(Wq > t) = C·exp(−(cμ − λ)t)."""
    if arrival_rate <= 0:
        return 0.0
    a = arrival_rate * service_time
    if a >= servers:
        return INF
    c_prob = erlang_c(servers, a)
    tail = 1 - q
    if c_prob <= tail:
        return 0.0
    return math.log(c_prob / tail) * service_time / (servers - a)


def md1_wait(arrival_rate: float, service_time: float) -> float:
    """Pollaczek–Khinchine mean queueing delay of M/D/1: ρ·S / (2(1 − ρ))."""
    if arrival_rate <= 0:
        return 0.0
    rho = arrival_rate * service_time
    if rho >= 1:
        return INF
    return rho * service_time / (2 * (1 - rho))


def mg1_wait(arrival_rate: float, service_time: float, scv: float) -> float:
    """Pollaczek–Khinchine for M/G/1 with squared coefficient of variation `scv` of service."""
    if arrival_rate <= 0:
        return 0.0
    rho = arrival_rate * service_time
    if rho >= 1:
        return INF
    return rho * service_time * (1 + scv) / (2 * (1 - rho))


def mdc_wait(arrival_rate: float, service_time: float, servers: int = 1) -> float:
    """Mean queueing delay of M/D/c: exact P-K for c = 1, W(M/M/c)/2 otherwise."""
    if servers == 1:
        return md1_wait(arrival_rate, service_time)
    return mmc_wait(arrival_rate, service_time, servers) / 2


def mdc_wait_quantile(arrival_rate: float, service_time: float, servers: int = 1, q: float = 0.99) -> float:
    """q-quantile of the M/D/c queueing delay, approximated as half the M/M/c quantile.

    Deterministic service halves the mean wait of M/M/c (exactly for c = 1); we halve the
    exponential tail's time scale the same way, which keeps mean and tail consistent.
    """
    return mmc_wait_quantile(arrival_rate, service_time, servers, q) / 2


def mmc_wait_median(arrival_rate: float, service_time: float, servers: int = 1) -> float:
    """Median queueing delay of M/M/c (0 when fewer than half of the arrivals wait)."""
    return mmc_wait_quantile(arrival_rate, service_time, servers, 0.5)


# ---------------------------------------------------------------- Poisson / Erlang helpers


def poisson_cdf(k: int, mean: float) -> float:
    """P(N ≤ k) for N ~ Poisson(mean)."""
    if k < 0:
        return 0.0
    if mean <= 0:
        return 1.0
    term = math.exp(-mean)
    if term == 0.0:  # huge mean: fall back to the normal approximation
        return 0.5 * math.erfc(-(k + 0.5 - mean) / math.sqrt(2 * mean))
    total = term
    for n in range(1, k + 1):
        term *= mean / n
        total += term
    return min(1.0, total)


def poisson_quantile(mean: float, q: float, cap: int = 100_000) -> int:
    """Smallest k with P(N ≤ k) ≥ q, or `cap` if that is smaller (running CDF: linear in k)."""
    if mean <= 0:
        return 0
    term = math.exp(-mean)
    if term == 0.0:
        k = 0
        while k < cap and poisson_cdf(k, mean) < q:
            k += 1
        return k
    cdf, k = term, 0
    while cdf < q and k < cap:
        k += 1
        term *= mean / k
        cdf += term
    return k


def erlang_time_quantile(k: int, rate: float, q: float) -> float:
    """q-quantile of the time until the k-th Poisson arrival (Gamma(k, rate)), by bisection."""
    if k <= 0:
        return 0.0
    if rate <= 0:
        return INF
    lo, hi = 0.0, (k + 10 * math.sqrt(k) + 10) / rate
    for _ in range(80):
        mid = (lo + hi) / 2
        if 1 - poisson_cdf(k - 1, rate * mid) >= q:  # P(T_k ≤ t) = P(N(t) ≥ k)
            hi = mid
        else:
            lo = mid
    return hi


def _tail_sum(mean: float, count: int) -> float:
    """Σ_{n<count} P(N > n) for N ~ Poisson(mean), with a running CDF (stops when the tail vanishes)."""
    if count <= 0 or mean <= 0:
        return 0.0
    term = math.exp(-mean)
    if term == 0.0:  # huge mean: sum the normal-approximation tails term by term
        return sum(1 - poisson_cdf(n, mean) for n in range(count))
    cdf, total = term, 0.0
    for n in range(count):
        tail = 1 - cdf
        if tail < 1e-15:
            break
        total += tail
        term *= mean / (n + 1)
        cdf += term
    return total


def mean_min_erlang(k: int, rate: float, cap: float) -> float:
    """E[min(T_k, cap)] for T_k the time of the k-th Poisson arrival: (1/λ)·Σ_{n<k} P(N(cap) > n)."""
    if k <= 0 or cap <= 0:
        return 0.0
    if rate <= 0:
        return cap
    return _tail_sum(rate * cap, k) / rate


def mean_min_poisson(mean: float, cap: int) -> float:
    """E[min(N, cap)] for N ~ Poisson(mean)."""
    return _tail_sum(mean, cap)
