"""The budget judge on made-up statistics: every budget kind, passing, failing and not judged."""

from __future__ import annotations

import yaml

from archkit.loadtest.judge import judge, passed
from archkit.spec import load_text
from archkit.spec.model import Spec


def _spec(**budgets) -> Spec:
    """A loaded spec (so every object knows its document path) with these budgets."""
    return load_text(
        yaml.safe_dump(
            {
                "apiVersion": "archkit/v1",
                "metadata": {"name": "s"},
                "budgets": budgets,
                "dataflow": {
                    "stages": [
                        {"id": "gw", "kind": "gateway", "p50_ms": 10, "p99_ms": 40},
                        {"id": "db", "kind": "store", "p99_ms": 5},
                    ]
                },
                "loadtest": {
                    "target": {"host": "http://127.0.0.1:1"},
                    "scenarios": [{"id": "a", "p95_ms": 50}, {"id": "b"}],
                    "levels": [{"id": "baseline", "kind": "baseline"}],
                },
            }
        ),
        "judge.yaml",
    ).spec


E2E_OK = {"p50_ms": 10.0, "p95_ms": 20.0, "p99_ms": 30.0, "error_rate": 0.001, "throughput_rps": 99.0}


def _by_id(vs):
    return {v.id: v for v in vs}


def test_end_to_end_percentiles_error_rate_and_throughput_pass() -> None:
    spec = _spec(p50_ms=15, p95_ms=25, p99_ms=30, error_rate=0.01, throughput_rps=100)
    vs = _by_id(judge(spec, {"kind": "baseline", "offered_rps": 100, "end_to_end": E2E_OK}))
    assert {k for k in vs if k.startswith("end_to_end")} == {
        "end_to_end.p50_ms",
        "end_to_end.p95_ms",
        "end_to_end.p99_ms",
        "end_to_end.error_rate",
        "end_to_end.throughput_rps",
    }
    assert all(v.passed for k, v in vs.items() if k.startswith("end_to_end"))
    assert vs["end_to_end.p99_ms"].measured == 30.0  # equal to the budget still meets it
    assert vs["end_to_end.p99_ms"].spec_path == ("budgets", "p99_ms")


def test_each_end_to_end_budget_fails_on_its_own() -> None:
    spec = _spec(p50_ms=15, p95_ms=25, p99_ms=30, error_rate=0.01, throughput_rps=100)
    for key, bad in (
        ("p50_ms", 16.0),
        ("p95_ms", 25.5),
        ("p99_ms", 31.0),
        ("error_rate", 0.02),
        ("throughput_rps", 94.0),
    ):
        vs = _by_id(
            judge(
                spec,
                {
                    "kind": "baseline",
                    "offered_rps": 100,
                    "end_to_end": {**E2E_OK, key: bad},
                    "scenarios": {"a": {"p95_ms": 10.0}},
                },
            )
        )
        failed = [k for k, v in vs.items() if v.passed is False]
        assert failed == [f"end_to_end.{key}"], (key, failed)
        assert not passed(list(vs.values()))


def test_throughput_within_pacing_tolerance_and_not_judged_below_design_rate() -> None:
    spec = _spec(throughput_rps=100)
    v = judge(
        spec, {"kind": "baseline", "offered_rps": 100, "end_to_end": {**E2E_OK, "throughput_rps": 95.5}}
    )[0]
    assert v.passed and "5% pacing tolerance" in v.why
    v = judge(spec, {"kind": "baseline", "offered_rps": 50, "end_to_end": {**E2E_OK, "throughput_rps": 50}})[
        0
    ]
    assert v.passed is None and "--rate 100" in v.why
    assert passed([v])  # a budget not judged does not fail the run
    v = judge(
        spec, {"kind": "baseline", "offered_rps": 100, "end_to_end": {**E2E_OK, "throughput_rps": None}}
    )[0]
    assert (v.passed, v.measured, v.why) == (False, None, "no successful requests")


def test_nothing_measured_fails_a_latency_budget() -> None:
    v = judge(_spec(p99_ms=30), {"kind": "baseline", "end_to_end": {"p99_ms": None}})[0]
    assert v.passed is False and "no requests measured" in v.why


def test_scenario_budgets() -> None:
    spec = _spec()
    vs = judge(
        spec,
        {"kind": "baseline", "end_to_end": {}, "scenarios": {"a": {"p95_ms": 51.0}, "b": {"p95_ms": 1e6}}},
    )
    assert [(v.id, v.passed) for v in vs] == [("scenario.a.p95_ms", False)]
    assert vs[0].spec_path == ("loadtest", "scenarios", 0, "p95_ms")


def test_stage_budgets_use_server_side_stage_measurements() -> None:
    spec = _spec()
    vs = _by_id(
        judge(
            spec,
            {
                "kind": "baseline",
                "end_to_end": {},
                "stages": {"gw": {"p50_ms": 9.0, "p99_ms": 41.0, "mean_ms": 12.0}},
            },
        )
    )
    assert vs["stage.gw.p50_ms"].passed and vs["stage.gw.p99_ms"].passed is False
    assert "stage.db.p99_ms" not in vs  # no series for db: not judged at all


def test_stress_knee_against_peak_then_design_rate() -> None:
    assert judge(
        _spec(throughput_rps=100, peak_throughput_rps=200), {"kind": "stress", "stress": {"knee_rps": 195.0}}
    )[0].passed  # within 5%
    v = judge(
        _spec(throughput_rps=100, peak_throughput_rps=200), {"kind": "stress", "stress": {"knee_rps": 150.0}}
    )[0]
    assert v.passed is False and "peak_throughput_rps" in v.why
    v = judge(_spec(throughput_rps=100), {"kind": "stress", "stress": {"knee_rps": 120.0}})[0]
    assert v.passed and v.budget == 100
    v = judge(_spec(throughput_rps=100), {"kind": "stress", "stress": {"knee_rps": None}})[0]
    assert v.passed is False and "no knee" in v.why
    assert judge(_spec(), {"kind": "stress", "stress": {"knee_rps": 1.0}}) == []


def test_stress_and_chaos_do_not_judge_baseline_percentiles() -> None:
    spec = _spec(p99_ms=1)
    assert judge(spec, {"kind": "chaos", "end_to_end": {"p99_ms": 999.0}, "chaos": []}) == []


def test_chaos_fallback_and_recovery() -> None:
    base = {"action": "kill", "target": "t", "expect_fallback": "busy", "applied": True, "spec_path": ["x"]}
    vs = _by_id(
        judge(
            _spec(),
            {
                "kind": "chaos",
                "chaos": [
                    {**base, "fallback_status": 429, "fallback_answers": 3, "recovery_s": 1.2},
                    {**base, "fallback_status": 429, "fallback_answers": 0, "recovery_s": None},
                    {**base, "fallback_status": None, "recovery_s": 0.0},
                    {**base, "applied": False, "error": "no such process"},
                ],
            },
        )
    )
    assert vs["chaos.0.fallback"].passed and vs["chaos.0.recovered"].passed
    assert vs["chaos.1.fallback"].passed is False and vs["chaos.1.recovered"].passed is False
    assert vs["chaos.2.fallback"].passed is None and vs["chaos.2.recovered"].passed
    assert vs["chaos.3.applied"].passed is False and "no such process" in vs["chaos.3.applied"].why
