"""What a `TokenLengths` distribution means: one sampler for every part that draws token lengths.

The offline simulation (archkit.perf.llm.sim) and the live load generator
(archkit.loadtest.runtime.llm) draw prompt and output lengths from the same spec section; both call
`draw`, so a lognormal or an empirical CDF means the same thing in a prediction and in the load
that checks it, and the same seeded generator gives both the same lengths. It lives outside
`archkit.spec` and imports only numpy and the standard library: the load generator's process
(locust, gevent) must not pull in pydantic and the spec model to draw a length. Lognormal takes the distribution's own mean and standard deviation (not the
underlying normal's); an empirical CDF is inverted by linear interpolation; every draw is rounded
and clipped to [min_tokens, max_tokens].
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

UNBOUNDED = 10_000_000  # no max_tokens: the spec's MAX_TOKENS (longer than any served context)


class LengthsLike(Protocol):
    """The fields `draw` reads: the spec's `TokenLengths`, or a load test's literal copy of it."""

    @property
    def distribution(self) -> str: ...
    @property
    def min_tokens(self) -> int: ...
    @property
    def mean_tokens(self) -> float | None: ...
    @property
    def std_tokens(self) -> float | None: ...
    @property
    def max_tokens(self) -> int | None: ...
    @property
    def cdf(self) -> Sequence[tuple[float, float]]: ...


def lognormal_mu_sigma(mean: float, std: float) -> tuple[float, float]:
    """The underlying normal's mu and sigma of a lognormal with this mean and standard deviation."""
    sigma2 = math.log(1 + (std / mean) ** 2)
    return math.log(mean) - sigma2 / 2, math.sqrt(sigma2)


def read_cdf(path: Path) -> list[tuple[float, float]]:
    """`tokens,cumulative_probability` rows of a CSV; a header or any non-numeric row is skipped."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        parts = line.strip().split(",")
        if len(parts) >= 2 and parts[0].replace(".", "", 1).isdigit():
            rows.append((float(parts[0]), float(parts[1])))
    return rows


def draw(
    dist: LengthsLike, n: int, rng: np.random.Generator, cdf: Sequence[tuple[float, float]] = ()
) -> np.ndarray:
    """n lengths (int64). `cdf`: the empirical points when `dist.cdf` is empty (read from its file)."""
    d = dist.distribution
    hi = dist.max_tokens if dist.max_tokens is not None else UNBOUNDED
    if d == "fixed":
        x = np.full(n, float(dist.mean_tokens or 1))
    elif d == "uniform":
        x = rng.integers(dist.min_tokens, hi + 1, size=n).astype(np.float64)
    elif d == "normal":
        x = rng.normal(dist.mean_tokens or 1, dist.std_tokens or 0, size=n)
    elif d == "lognormal":
        mu, sigma = lognormal_mu_sigma(float(dist.mean_tokens or 1), float(dist.std_tokens or 0))
        x = rng.lognormal(mu, sigma, size=n)
    else:
        pts = list(dist.cdf) or list(cdf)
        toks = np.array([p[0] for p in pts], dtype=np.float64)
        probs = np.array([p[1] for p in pts], dtype=np.float64)
        x = np.interp(rng.random(n), probs, toks)
    out: np.ndarray = np.clip(np.rint(x), dist.min_tokens, hi).astype(np.int64)
    return out
