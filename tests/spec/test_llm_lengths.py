"""The one token-length sampler (archkit.llm_lengths) against hand-computed cases."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from archkit import llm_lengths
from archkit.spec.llm import TokenLengths


def test_lognormal_parameters_give_the_declared_mean_and_spread() -> None:
    """mean 100, std 50: sigma^2 = ln(1.25), mu = ln(100) - sigma^2 / 2 (the lognormal's own moments)."""
    mu, sigma = llm_lengths.lognormal_mu_sigma(100, 50)
    assert sigma == pytest.approx(math.sqrt(math.log(1.25)))
    assert mu == pytest.approx(math.log(100) - math.log(1.25) / 2)
    x = llm_lengths.draw(
        TokenLengths(distribution="lognormal", mean_tokens=100, std_tokens=50),
        200_000,
        np.random.default_rng(1),
    )
    assert float(x.mean()) == pytest.approx(100, rel=0.01)
    assert float(x.std()) == pytest.approx(50, rel=0.02)


def test_empirical_cdf_from_a_file_is_inverted_linearly(tmp_path: Path) -> None:
    """Half the mass uniform on 100..200, half on 200..1000: the median is 200, the 75th percentile 600."""
    f = tmp_path / "cdf.csv"
    f.write_text("tokens,p\n100,0\n200,0.5\n1000,1\n")
    pts = llm_lengths.read_cdf(f)
    assert pts == [(100.0, 0.0), (200.0, 0.5), (1000.0, 1.0)]
    x = llm_lengths.draw(
        TokenLengths(distribution="empirical", cdf_file="cdf.csv"), 100_000, np.random.default_rng(2), pts
    )
    assert np.percentile(x, 50) == pytest.approx(200, rel=0.02)
    assert np.percentile(x, 75) == pytest.approx(600, rel=0.02)


def test_draws_are_rounded_and_clipped() -> None:
    x = llm_lengths.draw(
        TokenLengths(distribution="normal", mean_tokens=10, std_tokens=100, min_tokens=5, max_tokens=20),
        10_000,
        np.random.default_rng(3),
    )
    assert x.dtype == np.int64
    assert int(x.min()) == 5 and int(x.max()) == 20
