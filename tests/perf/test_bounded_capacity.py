"""Issue 28's capacity reproducer: a 1024-batch stage whose service times span 1e-9 ms to a day.

The Poisson tail sums behind the batch-fill estimates are summed only where a tail is neither
exactly 1.0 nor 0.0 in floating point: the same sums, bit for bit, with work bounded by
O(√mean) instead of O(batch size) per call (poisson_cdf calls counted, not seconds).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from archkit import api
from archkit.perf import queueing
from tests.conftest import ROOT


@pytest.mark.parametrize("mean", [745.2, 746.0, 1e3, 12_345.6, 1e6, 3.3e9, 1e15])
@pytest.mark.parametrize("count", [0, 1, 2, 64, 1024, 5000])
def test_the_bounded_tail_sum_is_the_plain_sum_bit_for_bit(mean, count) -> None:
    if math.exp(-mean) != 0.0:
        pytest.skip("the running-CDF branch (unchanged)")
    plain = sum(1 - queueing.poisson_cdf(n, mean) for n in range(count))
    assert queueing._tail_sum(mean, count) == plain


def _extreme_spec(tmp_path: Path) -> Path:
    doc = yaml.safe_load((ROOT / "examples" / "industrial-inspection.yaml").read_text(encoding="utf-8"))
    model = next(s for s in doc["dataflow"]["stages"] if s["id"] == "detect")["model"]
    model["batching"] = {
        "max_batch_size": 1024,
        "preferred_batch_sizes": [1, 64, 1024],
        "max_queue_delay_us": 100_000,
        "max_queue_size": 64,
    }
    # 1e-9 ms and 86,400,000 ms (a day, the schema's maximum) alternating by batch size
    model["service_time"] = [
        {"batch_size": 2**i, "compute_ms": 1e-9 if i % 2 == 0 else 86_400_000} for i in range(11)
    ]
    out = tmp_path / "extreme.yaml"
    out.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return out


@pytest.fixture
def cdf_calls(monkeypatch) -> list[int]:
    """queueing.poisson_cdf counted: the one-element list holds the calls made so far."""
    calls = [0]
    cdf = queueing.poisson_cdf

    def counted(k: int, mean: float) -> float:
        calls[0] += 1
        return cdf(k, mean)

    monkeypatch.setattr(queueing, "poisson_cdf", counted)
    return calls


def test_capacity_on_extreme_service_times_does_bounded_work(tmp_path, cdf_calls) -> None:
    report = api.capacity(_extreme_spec(tmp_path))
    assert not report.diagnostics or all(d.severity.value != "error" for d in report.diagnostics)
    # before the bound: ~1.9 million calls (every n below the batch size, for each of ~1,800 sums)
    assert cdf_calls[0] < 100_000, cdf_calls[0]


def _day_long_spec(tmp_path: Path, max_batch: int) -> Path:
    """The fuzz campaign's second class: a stage whose batch-1 service time is a day (86,400,000
    ms, the schema's maximum) at the example's design rate of thousands of items/s."""
    doc = yaml.safe_load((ROOT / "examples" / "industrial-inspection.yaml").read_text(encoding="utf-8"))
    model = next(s for s in doc["dataflow"]["stages"] if s["id"] == "detect")["model"]
    model["batching"] = {"max_batch_size": max_batch, "max_queue_delay_us": 100_000}
    model["service_time"] = [{"batch_size": 1, "compute_ms": 86_400_000}]
    if max_batch > 1:
        model["service_time"].append({"batch_size": max_batch, "compute_ms": 86_400_000})
    out = tmp_path / f"day-{max_batch}.yaml"
    out.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return out


@pytest.mark.parametrize("max_batch", [1, 1024])
def test_a_day_long_batch_1_service_time_does_bounded_work(tmp_path, cdf_calls, max_batch) -> None:
    """Work counted, not timed: the pipeline simulation within its event budget, the Poisson tail
    sums bounded as above, and `check` answers with findings, no rule crash."""
    from archkit.perf.pipeline import SIM_BUDGET

    path = _day_long_spec(tmp_path, max_batch)
    report = api.capacity(path)
    assert not report.diagnostics and report.pipeline is not None
    assert report.pipeline["sim_work"] <= SIM_BUDGET
    assert cdf_calls[0] < 100_000, cdf_calls[0]
    assert report.missed  # a day per item misses every budget, and says so
    checked = api.check([path])
    assert not [d for d in checked.diagnostics if d.code == "AK199"]
