"""The fidelity run's measured knee (bench/llm_fidelity.py) reads the levels as the prediction's sweep does.

Hand-computed cases, one of them the TTFT P99s of the 2026-12-04 12:12 run (docs/benchmarks.md,
LLM), where the 160 % level's P99 fell back under twice the light one after the 130 % level's
crossed it: the knee is the level before the first crossing, not the highest level under it.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from llm_fidelity import measured_knee  # noqa: E402  (bench/ is not a package)


def lv(rate: float, p99: float, errors: int = 0) -> dict:
    return {"rate_rps": rate, "ttft_p99_ms": p99, "errors": errors}


def test_the_knee_is_the_level_before_the_first_crossing_even_when_a_later_p99_falls_back() -> None:
    run = [lv(0.1103, 28.223), lv(0.2207, 53.343), lv(0.3126, 47.007), lv(0.3678, 54.271),
           lv(0.4781, 135.423), lv(0.5885, 48.607)]  # fmt: skip
    k = measured_knee(0.3678, run)
    assert k["measured"] == 0.3678 and k["bracket"] == [0.3678, 0.4781] and not k["censored"]
    assert k["error_pct"] == 0.0 and k["within"]
    assert k["under_again_above_the_crossing_rps"] == [0.5885]


def test_levels_in_any_order_errors_cross_and_no_crossing_is_censored() -> None:
    k = measured_knee(0.5, [lv(0.6, 30.0, errors=2), lv(0.2, 20.0), lv(0.4, 39.0)])
    assert k["bracket"] == [0.4, 0.6] and k["error_pct"] == 25.0 and not k["within"]
    k = measured_knee(0.5, [lv(0.2, 20.0), lv(0.4, 40.0)])  # exactly twice: not over it
    assert k["censored"] and k["bracket"] == [0.4, None] and k["error_pct"] == 25.0


def test_a_lightest_level_with_errors_leaves_no_measured_knee() -> None:
    k = measured_knee(0.5, [lv(0.2, 20.0, errors=1), lv(0.4, 25.0)])
    assert k["measured"] is None and k["bracket"] == [None, 0.2] and not k["within"]
    assert math.isnan(k["error_pct"])
