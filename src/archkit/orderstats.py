"""Distribution-free confidence intervals for percentiles, from order statistics.

With n independent samples, the k-th smallest X_(k) lies at or below the true p-quantile ξ_p
exactly when at least k samples do, so P(X_(k) ≤ ξ_p) = P(Bin(n, p) ≥ k) whatever the latency
distribution is (Hahn & Meeker, "Statistical Intervals", 2nd ed., §5.2; NIST/SEMATECH e-Handbook
§7.2.6.2). The equal-tailed interval [X_(l), X_(u)] at confidence 1 − α takes the largest l with
P(Bin ≤ l − 1) ≤ α/2 and the smallest u with P(Bin ≥ u) ≤ α/2. It exists only when both
(1 − p)^n and p^n are ≤ α/2: a P99 at 95 % needs 368 samples, a P95 72, a P50 6. A budget is
met when X_(u) ≤ budget, missed when X_(l) > budget, and otherwise the run cannot tell.
"""

from __future__ import annotations

import math
from collections.abc import Callable

CONFIDENCE = 0.95
# How far ahead the duration that would decide a budget is looked for: sample counts up to
# this multiple of what was measured, on a geometric grid (factor 1.25, so the duration
# quoted is at most 25 % more than needed).
FORECAST_MAX_FACTOR = 1000.0
FORECAST_STEP = 1.25


def min_samples(p: float, confidence: float = CONFIDENCE) -> int:
    """The fewest samples for which the p-quantile's interval has both ends."""
    half = (1.0 - confidence) / 2.0
    worst = max(p, 1.0 - p)
    n = max(1, math.ceil(math.log(half) / math.log(worst)))
    while worst**n > half:  # float rounding at the boundary
        n += 1
    while n > 1 and worst ** (n - 1) <= half:
        n -= 1
    return n


def _log_pmf(n: int, p: float, k: int) -> float:
    return (
        math.lgamma(n + 1)
        - math.lgamma(k + 1)
        - math.lgamma(n - k + 1)
        + k * math.log(p)
        + (n - k) * math.log1p(-p)
    )


def ranks(n: int, p: float, confidence: float = CONFIDENCE) -> tuple[int | None, int | None]:
    """1-based ranks (l, u) of the order statistics bounding the p-quantile; None where an end is missing."""
    if n <= 0:
        return None, None
    half = (1.0 - confidence) / 2.0
    # Only the binomial's body matters: beyond 12 standard deviations the mass is < 1e-30.
    sd = math.sqrt(n * p * (1.0 - p))
    lo_k = max(0, math.floor(n * p - 12 * sd - 12))
    hi_k = min(n, math.ceil(n * p + 12 * sd + 12))
    pmf = [math.exp(_log_pmf(n, p, k)) for k in range(lo_k, hi_k + 1)]
    lower = None
    below = 0.0  # P(Bin ≤ k)
    for i, mass in enumerate(pmf):
        below += mass
        if below > half:
            break
        lower = lo_k + i + 1  # P(Bin ≤ l − 1) ≤ α/2 with l − 1 = k
    upper = None
    above = 0.0  # P(Bin ≥ k)
    for i in range(len(pmf) - 1, -1, -1):
        above += pmf[i]
        if above > half:
            break
        k = lo_k + i
        if k >= 1:
            upper = k
    if lower is not None:
        lower = max(1, min(lower, n))
    return lower, upper


def interval(
    n: int,
    p: float,
    at_rank: Callable[[int], float | None],
    confidence: float = CONFIDENCE,
    upper_at_rank: Callable[[int], float | None] | None = None,
) -> dict:
    """The interval of the p-quantile of n samples, `at_rank(k)` giving the k-th smallest value.

    Where a sample is known only to a range (a histogram bucket), `at_rank` gives the range's
    low end and `upper_at_rank` its high end, so the interval is never narrower than the data.

    Returns {"n", "confidence", "lo_ms", "hi_ms", "min_n", "forecast"}: `forecast` lists
    [samples, lo, hi] for larger runs whose values follow the same empirical distribution, the
    first of which to land on one side of a budget is the run that would decide it.
    """
    hi_at = upper_at_rank or at_rank
    lo_rank, hi_rank = ranks(n, p, confidence)
    out: dict = {
        "n": n,
        "confidence": confidence,
        "lo_ms": at_rank(lo_rank) if lo_rank is not None else None,
        "hi_ms": hi_at(hi_rank) if hi_rank is not None else None,
        "min_n": min_samples(p, confidence),
    }
    if n <= 0:
        out["forecast"] = []
        return out
    forecast = []
    m = float(max(n, out["min_n"]))
    while m <= n * FORECAST_MAX_FACTOR:
        size = math.ceil(m)
        lo, hi = ranks(size, p, confidence)
        if lo is not None and hi is not None:
            # the same empirical distribution: the value at the same fraction of the sample
            forecast.append(
                [size, at_rank(max(1, math.ceil(lo / size * n))), hi_at(max(1, math.ceil(hi / size * n)))]
            )
        m *= FORECAST_STEP
    out["forecast"] = forecast
    return out


def decide(budget: float, ci: dict) -> tuple[bool | None, int | None]:
    """(met?, samples that would decide it): True/False when the interval is on one side, else None.

    Below `min_n` samples nothing is decided, whatever the values (a P99 of 10 samples is the
    largest of 10 draws). The second value is the sample count of the first forecast run whose
    interval leaves the budget, None when no run up to FORECAST_MAX_FACTOR × n would.
    """
    lo, hi = ci.get("lo_ms"), ci.get("hi_ms")
    if ci["n"] >= ci["min_n"] and lo is not None and hi is not None:
        if hi <= budget:
            return True, None
        if lo > budget:
            return False, None
    for size, f_lo, f_hi in ci.get("forecast") or []:
        if size > ci["n"] and f_lo is not None and f_hi is not None and (f_hi <= budget or f_lo > budget):
            return None, size
    return None, None


def within_tolerance(predicted: float, ci: dict, tolerance_pct: float) -> bool | None:
    """Is a prediction within ±tolerance_pct of the quantile this interval bounds, at its confidence?

    The error (predicted − q) / q falls as the true quantile q rises, so it is within the
    tolerance for every q in [lo, hi] when it is at both ends (True), and for none when even the
    end nearest the prediction is beyond it (False). Otherwise, or below `min_n` samples (as in
    `decide`), the run cannot tell (None).
    """
    lo, hi = ci.get("lo_ms"), ci.get("hi_ms")
    if ci["n"] < ci["min_n"] or lo is None or hi is None or lo <= 0:
        return None
    tol = tolerance_pct / 100.0
    at_lo, at_hi = (predicted - lo) / lo, (predicted - hi) / hi
    if at_lo <= tol and at_hi >= -tol:
        return True
    if at_hi > tol or at_lo < -tol:
        return False
    return None
