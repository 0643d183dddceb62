"""Stage calibration that one slow request cannot move (issue 29): order statistics over
per-request samples, the median as `cpu_ms` and the spread from P50 -> P95 (no live service)."""

from __future__ import annotations

import json
import math

import pytest

from archkit.calibrate.apply import stage_times
from archkit.calibrate.sweep import order_stat, robust_stage
from archkit.perf.resources import Z99, lognormal_sigma, service_mean_ms, service_sigma
from archkit.plans.context import prepare
from archkit.spec.model import StageOverride
from tests.conftest import ROOT

SPEC = ROOT / "specs" / "ocr-reference.yaml"

# 30 sequential requests: 10 at 0.5 ms, 10 at 0.6 ms, 9 at 0.7 ms and one slow one at 35 ms
# (50x the 0.7 ms it would have taken: the request just after a test suite)
SAMPLE = [0.5] * 10 + [0.6] * 10 + [0.7] * 9 + [35.0]


def test_one_50x_outlier_moves_neither_the_median_nor_the_p95() -> None:
    got = robust_stage(SAMPLE)
    # nearest rank: P50 is the 15th of 30 sorted (0.6), P95 the 29th (ceil 28.5: 0.7), P99 the 30th
    assert got == {"p50_ms": 0.6, "p95_ms": 0.7, "p99_ms": 35.0, "mean_ms": round(52.3 / 30, 4)}
    # the mean the old calibration used: 1.7433 ms, 2.9x the median; a 500x outlier makes it 20x
    worse = robust_stage([*SAMPLE[:-1], 350.0])
    assert worse["mean_ms"] / worse["p50_ms"] == pytest.approx((17.3 + 350) / 30 / 0.6, rel=1e-4)
    assert worse["mean_ms"] / worse["p50_ms"] > 10
    assert (worse["p50_ms"], worse["p95_ms"]) == (0.6, 0.7)


def test_order_statistics_are_nearest_rank() -> None:
    values = [float(v) for v in range(1, 21)]  # 1 .. 20
    assert order_stat(values, 0.5) == 10.0 and order_stat(values, 0.95) == 19.0
    assert order_stat(values, 0.99) == 20.0 and order_stat([3.0], 0.5) == 3.0


def test_the_model_takes_the_median_and_the_p50_to_p95_spread() -> None:
    spec = prepare(SPEC, "cpu").spec
    validate = spec.stage("validate")
    median, p99 = stage_times(validate, StageOverride(stage="validate"), robust_stage(SAMPLE))
    # sigma = ln(0.7 / 0.6) / z95 = 0.15415 / 1.64485 = 0.093718; P99 = 0.6 e^(0.093718 x 2.32635)
    # = 0.6 x 1.24362 = 0.74617 ms, where the sample's own P99 is its outlier, 35 ms
    assert median == 0.6
    assert p99 == pytest.approx(0.74617, abs=2e-5)
    # not log-normal: no spread to fit, the median stands; no measured spread: none at all
    exp = validate.model_copy(update={"service_distribution": "exponential"})
    assert stage_times(exp, StageOverride(stage="validate"), {"p50_ms": 0.6, "p95_ms": 0.7}) == (0.6, None)
    assert stage_times(validate, StageOverride(stage="validate"), {"p50_ms": 0.6, "p95_ms": 0.6}) == (
        0.6,
        0.6,
    )
    assert stage_times(validate, StageOverride(stage="validate"), {"count": 3}) == (None, None)


def test_a_calibration_sets_the_median_and_the_spread_of_each_stage(tmp_path) -> None:
    """The calibrated stage runs with its measured median and spread, not the budgets' (validate's
    2 -> 100 ms budgets cap at a spread of 4x: sigma 0.596, its mean 1.19x the median)."""
    doc = json.loads((ROOT / "specs" / "calibration" / "ocr-reference-cpu.json").read_text())
    doc["stages"] = {"validate": {**robust_stage(SAMPLE), "count": 30, "warmup": 3}}
    cal = tmp_path / "cal.json"
    cal.write_text(json.dumps(doc), encoding="utf-8")
    base = prepare(SPEC, "cpu").spec
    spec = prepare(SPEC, "cpu", str(cal)).spec
    st = spec.stage("validate")
    assert (st.cpu_ms, st.cpu_p99_ms) == (0.6, 0.7462)
    sigma = math.log(0.7462 / 0.6) / Z99
    assert service_sigma(st) == pytest.approx(sigma) and sigma == pytest.approx(0.0937, abs=1e-4)
    assert service_mean_ms(st) == pytest.approx(0.6 * math.exp(sigma * sigma / 2))  # 0.6026 ms
    # the budgets' spread still serves a stage the calibration did not measure
    decode = spec.stage("decode")
    assert decode.cpu_p99_ms is None
    assert service_sigma(decode) == lognormal_sigma(decode.p50_ms, decode.p99_ms)
    assert base.stage("validate").cpu_p99_ms is None
    # the budgets themselves are untouched: the spread is the work's, the budget the user's
    assert (st.p50_ms, st.p99_ms) == (base.stage("validate").p50_ms, base.stage("validate").p99_ms)
