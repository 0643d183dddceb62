"""Queueing formulas: Little's law, utilisation, Erlang C (M/M/c), M/D/1 and an M/D/c approximation.

Which model is used where (see docs/checks.md, "How archkit predicts latency"):
- CPU stages with `concurrency` workers: M/M/c (Erlang C) — service times of parsers, rule
  engines and HTTP handlers vary a lot, so exponential service is the honest default.
- Batched GPU model stages: service of one batch is nearly deterministic (same shapes, same
  kernels; seed 000 §2.1 gives one figure per batch size), so batches are served by an
  M/D/c queue. M/D/1 is exact (Pollaczek–Khinchine); for c > 1 the mean wait is
  Cosmetatos' approximation (G. P. Cosmetatos, "Approximate explicit formulae for the
  average queueing time in the processes (M/D/r) and (D/M/r)", INFOR 13(3), 1975):
  W(M/D/c) ≈ ½ W(M/M/c) · [1 + (1 − ρ)(c − 1)(√(4 + 5c) − 2) / (16ρc)]. The bracket is ≥ 1,
  so it raises the plain "half of M/M/c", which understates the wait at c ≥ 2. Against
  the exact wait (`mdc_wait_exact`, Crommelin's embedded chain) it is within 1 % for
  ρ ≥ 0.4 and c ≤ 8; at ρ = 0.3 and c ≥ 4 it is 3–7 % high, on a wait below 1 % of a
  service time (tests/perf/test_queueing.py).
All times are in seconds here; callers convert from the spec's milliseconds.
"""

from __future__ import annotations

import math
from statistics import NormalDist

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


# The recurrence is exact but takes one step a server: a fuzzed spec's connection pool at an
# offered load of ~10^4 made `check` spend 8 s in it (issue 28's 2 s bound). Past EXACT_SERVERS the
# blocking is the Poisson ratio B = pmf(c; a) / cdf(c; a) (Erlang B's truncated-Poisson form),
# the cdf by the normal approximation with continuity correction, off by O(1/sqrt(a)) relative;
# and c more than 40 standard deviations above a blocks less than e^-800: 0.
EXACT_SERVERS = 100_000


def erlang_b(servers: int, offered_load: float) -> float:
    """Erlang B blocking probability for c servers and offered load a = λ·S (stable recurrence)."""
    if servers < 0 or offered_load < 0:
        raise ValueError("servers and load must be non-negative")
    if servers == 0:
        return 1.0
    if offered_load == 0 or servers > offered_load + 40 * math.sqrt(offered_load) + 50:
        return 0.0
    if servers > EXACT_SERVERS:
        log_pmf = servers * math.log(offered_load) - offered_load - math.lgamma(servers + 1)
        cdf = 0.5 * math.erfc(-(servers + 0.5 - offered_load) / math.sqrt(2 * offered_load))
        return min(1.0, math.exp(log_pmf) / cdf) if cdf > 0 else 1.0
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


def cosmetatos_factor(servers: int, rho: float) -> float:
    """Cosmetatos' (1975) correction to ½·W(M/M/c) for deterministic service (≥ 1; 1 at c = 1)."""
    if servers <= 1 or rho <= 0:
        return 1.0
    rho = min(rho, 1.0)
    return 1 + (1 - rho) * (servers - 1) * (math.sqrt(4 + 5 * servers) - 2) / (16 * rho * servers)


def mdc_wait(arrival_rate: float, service_time: float, servers: int = 1) -> float:
    """Mean queueing delay of M/D/c: exact P-K for c = 1, Cosmetatos' approximation otherwise."""
    if servers == 1:
        return md1_wait(arrival_rate, service_time)
    w = mmc_wait(arrival_rate, service_time, servers)
    if not math.isfinite(w):
        return w
    rho = arrival_rate * service_time / servers
    return w / 2 * cosmetatos_factor(servers, rho)


def mdc_wait_quantile(arrival_rate: float, service_time: float, servers: int = 1, q: float = 0.99) -> float:
    """q-quantile of the M/D/c queueing delay: an exponential tail with the right mean.

    P(Wq > t) ≈ C·exp(−t·C/W) with C the Erlang-C probability of waiting and W the mean
    wait of `mdc_wait`: the conditional wait is exponential with mean W/C (exact in form
    for M/M/c; for deterministic service an approximation that keeps mean and tail consistent).
    """
    if arrival_rate <= 0:
        return 0.0
    a = arrival_rate * service_time
    if a >= servers:
        return INF
    c_prob = erlang_c(servers, a)
    w = mdc_wait(arrival_rate, service_time, servers)
    tail = 1 - q
    if c_prob <= tail or w <= 0:
        return 0.0
    return (w / c_prob) * math.log(c_prob / tail)


def mdc_wait_exact(arrival_rate: float, service_time: float, servers: int = 1, states: int = 1200) -> float:
    """Exact mean queueing delay of M/D/c from Crommelin's embedded chain (a reference for tests).

    The number in the system one service time later is max(N − c, 0) + Poisson(λD) arrivals,
    from any instant; its stationary law gives Lq and Wq = Lq/λ. The chain is truncated where
    the Poisson tail vanishes; ValueError when that needs more than `states` states (ρ near 1),
    so the work (a dense solve) stays bounded.
    """
    import numpy as np

    if arrival_rate <= 0:
        return 0.0
    c = servers
    a = arrival_rate * service_time
    if a >= c:
        return INF
    k_max = int(c + a + 40 * math.sqrt(a + 1) + 60 + 20 / (1 - a / c))
    if k_max > states:
        raise ValueError(f"the chain needs {k_max} states (> {states}) at rho {a / c:.3f}")
    k = np.arange(k_max)
    logs = np.array([math.lgamma(x + 1) for x in range(k_max)])
    pmf = np.exp(-a + k * math.log(a) - logs)
    trans = np.zeros((k_max, k_max))
    for i in range(k_max):
        base = max(i - c, 0)
        trans[i, base:] = pmf[: k_max - base]
        trans[i, -1] += 1 - trans[i].sum()  # the truncated tail stays in the last state
    lhs = trans.T - np.eye(k_max)
    lhs[-1, :] = 1.0
    rhs = np.zeros(k_max)
    rhs[-1] = 1.0
    pi = np.linalg.solve(lhs, rhs)
    lq = float((np.maximum(k - c, 0) * pi).sum())
    return lq / arrival_rate


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
    if term == 0.0:  # huge mean (> 745): the normal approximation's quantile, in O(1)
        z = NormalDist().inv_cdf(min(max(q, 1e-12), 1 - 1e-12))
        return min(cap, max(0, math.ceil(mean + z * math.sqrt(mean) - 0.5)))
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
        if not math.isfinite(mean):
            return sum(1 - poisson_cdf(n, mean) for n in range(count))
        # Beyond 12 σ of the mean a tail is exactly 1.0 (below) or 0.0 (above) in floating point
        # (erfc(12/√2) ≈ 1e-33), so only n within ±12 σ are summed one by one: the same sum, bit
        # for bit, in O(√mean) rather than O(count) (issue 28: a 1024-batch stage whose service
        # times reach a day called this ~1,800 times with count up to 1024: 4 s of `capacity`)
        spread = 12 * math.sqrt(mean)
        ones = min(count, max(0, math.ceil(mean - 0.5 - spread)))
        total = float(ones)
        for n in range(ones, min(count, math.floor(mean - 0.5 + spread) + 1)):
            total += 1 - poisson_cdf(n, mean)
        return total
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


# ---------------------------------------------------------------- finite capacity (admission limits)


def mmck_probabilities(arrival_rate: float, service_time: float, servers: int, capacity: int) -> list[float]:
    """Stationary probabilities of 0..K requests in an M/M/c/K system (K ≥ c: c in service, the
    rest waiting; an arrival finding K is refused). Kleinrock, Queueing Systems I, §3.6."""
    if capacity < servers or servers < 1:
        raise ValueError("M/M/c/K needs 1 ≤ c ≤ K")
    a = arrival_rate * service_time
    weights = [1.0]
    for n in range(1, capacity + 1):
        weights.append(weights[-1] * a / min(n, servers))
    total = sum(weights)
    return [w / total for w in weights]


def mmck_loss(arrival_rate: float, service_time: float, servers: int, capacity: int) -> float:
    """Share of arrivals refused by an M/M/c/K system (PASTA: the probability of K in it)."""
    return mmck_probabilities(arrival_rate, service_time, servers, capacity)[-1]


def mmck_sojourn(arrival_rate: float, service_time: float, servers: int, capacity: int) -> float:
    """Mean time an admitted request spends in an M/M/c/K system (Little: L / λ(1 − loss))."""
    p = mmck_probabilities(arrival_rate, service_time, servers, capacity)
    mean_n = sum(n * pn for n, pn in enumerate(p))
    return mean_n / (arrival_rate * (1 - p[-1]))
