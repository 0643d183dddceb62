"""Open-model arrivals: when each request is scheduled to leave, whatever is in flight.

A closed model (N users, each waiting for its answer before sending again) lets a slow server
slow the generator down, so latency under overload leaves out the time a request would have
waited: coordinated omission (Tene, "How NOT to measure latency", 2015; Schroeder, Wierman and
Harchol-Balter, "Open versus closed: a cautionary tale", NSDI 2006). Here the send times are
fixed in advance from the offered rate alone: constant spacing 1/rate, or a Poisson process
(exponential gaps with mean 1/rate). A stress level's steps change the rate at their start.

Pure and deterministic for a given seed: the worker process consumes the times; tests and the
report use `count_in` to know how many requests a window was meant to carry.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

ARRIVALS = ("constant", "poisson")


@dataclass(frozen=True)
class Span:
    """One stretch of constant offered rate: [start_s, start_s + duration_s) at rate_rps."""

    start_s: float
    duration_s: float
    rate_rps: float


def send_times(spans: Sequence[Span], arrival: str, seed: int = 1, share: float = 1.0) -> Iterator[float]:
    """Scheduled send times (seconds from the start) for this process's share of the rate.

    Constant: the k-th request of a span leaves at start + k / rate. Poisson: gaps drawn from
    an exponential distribution; the process restarts at each span's start (memoryless, so a
    rate change needs no correction). `share` < 1 is one process's part of a distributed run:
    the superposition of independent Poisson streams is Poisson at the summed rate.
    """
    if arrival not in ARRIVALS:
        raise ValueError(f"unknown arrival process {arrival!r} (use {', '.join(ARRIVALS)})")
    rng = random.Random(seed)
    for sp in spans:
        rate = sp.rate_rps * share
        if rate <= 0 or sp.duration_s <= 0:
            continue
        end = sp.start_s + sp.duration_s
        if arrival == "constant":
            n = math.ceil(sp.duration_s * rate - 1e-9)
            for k in range(n):
                t = sp.start_s + k / rate
                if t < end:
                    yield t
        else:
            t = sp.start_s + rng.expovariate(rate)
            while t < end:
                yield t
                t += rng.expovariate(rate)


def counts(spans: Sequence[Span], arrival: str, seed: int = 1, share: float = 1.0) -> list[int]:
    """How many requests the schedule sends in each span (the times are consumed, not stored)."""
    out = [0] * len(spans)
    i = 0
    for t in send_times(spans, arrival, seed, share):
        while i + 1 < len(spans) and t >= spans[i + 1].start_s:
            i += 1
        out[i] += 1
    return out
