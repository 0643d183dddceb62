"""A stress level that searches for the knee (perf_analyzer-like): its schedule and stop criterion.

Hand-computed: start 1 req/s, factor 1.5, max 16, stop on the P95 (72 samples, orderstats),
steps of at least 20 s: rates 1, 1.5, 2.25, 3.375, 5.0625, 7.59375, 11.390625 (the next, 17.09,
is over 16); durations max(20, ceil(72 / rate)) = 72, 48, 32, 22, 20, 20, 20 s.
"""

from __future__ import annotations

import yaml

from archkit.loadtest import plan
from archkit.loadtest.options import LoadtestOptions
from archkit.loadtest.session import analyse_stress, step_met
from archkit.plans.context import prepare
from archkit.plans.stress import stress_schedule, stress_steps
from archkit.spec import load_text
from tests.conftest import ROOT

SPEC = """\
apiVersion: archkit/v1
metadata: {name: s}
budgets: {p95_ms: 1500, p99_ms: 2500, error_rate: 0.01, throughput_rps: 0.5}
loadtest:
  target: {host: "http://127.0.0.1:1"}
  scenarios: [{id: a}]
  levels:
    - id: stress
      kind: stress
      users: 32
      step_duration_s: 20
      duration_s: 400
      search: {start_rps: 1, factor: 1.5, max_rps: 16, stop_percentile: p95_ms}
"""


def _spec(text: str = SPEC):
    res = load_text(text, "s.yaml")
    assert res.ok, [d.text() for d in res.diagnostics]
    return res.spec


def test_a_search_steps_geometrically_and_gives_each_step_its_samples() -> None:
    level = _spec().loadtest.levels[0]
    sched = stress_schedule(level, None)
    assert [r for _s, _d, r in sched] == [1.0, 1.5, 2.25, 3.375, 5.0625, 7.59375, 11.390625]
    assert [d for _s, d, _r in sched] == [72.0, 48.0, 32.0, 22.0, 20.0, 20.0, 20.0]
    assert [s for s, _d, _r in sched] == [0.0, 72.0, 120.0, 152.0, 174.0, 194.0, 214.0]
    assert stress_steps(level, None)[3] == (152.0, 3.375)
    p = plan.build(_spec(), LoadtestOptions(level="stress"))
    assert [(ph.start_s, ph.duration_s, ph.rate_rps) for ph in p.phases] == sched
    # --rate caps the search like a linear level's top step
    capped = plan.build(_spec(), LoadtestOptions(level="stress", rate=4))
    assert [ph.rate_rps for ph in capped.phases] == [1.0, 1.5, 2.25, 3.375]


def test_the_search_stops_on_its_own_percentile_and_error_share() -> None:
    spec = _spec()
    level = spec.loadtest.levels[0]
    ok = {"requests": 100, "error_rate": 0.0, "p95_ms": 1400.0, "p99_ms": 9000.0}
    assert step_met(spec, ok, level)  # the P95 decides; the P99 over its budget does not
    assert not step_met(spec, ok)  # a linear level keeps the P99 criterion
    assert not step_met(spec, {**ok, "p95_ms": 1600.0}, level)
    assert not step_met(spec, {**ok, "error_rate": 0.02}, level)
    custom = _spec(
        SPEC.replace(
            "stop_percentile: p95_ms}", "stop_percentile: p50_ms, stop_latency_ms: 300, stop_error_rate: 0.5}"
        )
    )
    lv = custom.loadtest.levels[0]
    assert step_met(custom, {**ok, "p50_ms": 299.0, "error_rate": 0.4}, lv)
    assert not step_met(custom, {**ok, "p50_ms": 301.0}, lv)


def test_the_knee_lies_between_the_last_step_met_and_the_first_broken() -> None:
    spec = _spec()
    level = spec.loadtest.levels[0]
    rows = [
        {
            "offered_rps": r,
            "requests": 100,
            "error_rate": 0.0,
            "p95_ms": p95,
            "p99_ms": p95 * 1.5,
            "throughput_rps": r * 0.99,
            "statuses": {"200": 100},
        }
        for r, p95 in ((1.0, 500.0), (1.5, 600.0), (2.25, 900.0), (3.375, 2600.0), (5.0625, 5000.0))
    ]
    st = analyse_stress(spec, rows, level)
    assert st["knee_rps"] == 2.2275 and st["knee_offered_rps"] == 2.25
    assert st["knee_bracket_rps"] == [2.25, 3.375]


def test_the_reference_spec_searches_for_its_knee() -> None:
    data = yaml.safe_load((ROOT / "specs" / "ocr-reference.yaml").read_text(encoding="utf-8"))
    (stress,) = [lv for lv in data["loadtest"]["levels"] if lv["kind"] == "stress"]
    # from below an AVX2-only machine's knee (~3.8 req/s) to past a bf16 one (~15 on this Zen 5),
    # where the gateway sheds: bench/fidelity_knee.py compares the shed share there
    assert stress["search"]["start_rps"] == 3 and stress["search"]["max_rps"] >= 22


def test_the_measured_knee_is_compared_with_the_predicted_one(monkeypatch) -> None:
    """The comparison's arithmetic alone: the prediction is a fixed value here (a stand-in for
    archkit.perf.pipeline.predict, which tests/perf holds to closed forms)."""
    from archkit.loadtest import compare

    measured = {
        "kind": "stress",
        "offered_rps": 5.0625,
        "stress": {"knee_rps": 2.2275, "knee_offered_rps": 2.25, "knee_bracket_rps": [2.25, 3.375]},
    }
    pred = {"source": "test", "end_to_end": {}, "stages": {}, "knee_rps": 3.0}
    monkeypatch.setattr(compare, "predict", lambda spec, env, rate: pred)
    cmp = compare.compare(_spec(), measured, None)
    knee = cmp["knee_rps"]
    assert (knee["predicted"], knee["measured"], knee["error_pct"]) == (3.0, 2.2275, 34.7)
    assert knee["bracket"] == [2.25, 3.375] and knee["within_bracket"]
    (line,) = [x for x in compare.prediction_lines(cmp) if "knee" in x]
    assert "between 2.25 and 3.375 offered; predicted inside" in line


def test_each_stage_row_says_what_predicted_and_what_measured_it() -> None:
    """The reference spec with its cpu calibration: a model stage rests on calibrated Triton compute,
    the cache stage on its P50 budget alone (the +1906 % row of issue 29), decode on a declared cpu_ms."""
    from archkit.loadtest import compare

    spec = prepare(ROOT / "specs" / "ocr-reference.yaml", "cpu").spec
    measured = {
        "kind": "baseline",
        "offered_rps": 2.0,
        "end_to_end": {"p50_ms": 200.0},
        "stages": {
            "cache": {"p50_ms": 0.05, "mean_ms": 0.003, "metric": "ocr_stage_duration_seconds"},
            "decode": {"p50_ms": 9.0, "mean_ms": 10.0, "metric": "ocr_stage_duration_seconds"},
            "detect": {"mean_ms": 50.0, "metric": "nv_inference_request_duration_us"},
        },
    }
    cmp = compare.compare(spec, measured, "cpu")
    basis = cmp["stage_basis"]
    assert basis["detect"]["predicted"].startswith("calibrated Triton compute per batch")
    assert basis["detect"]["measured"].startswith("nv_inference_request_duration_us: Triton's mean")
    assert basis["cache"]["predicted"] == "its P50 budget 1 ms taken as a delay: a budget, not a measurement"
    assert (
        basis["decode"]["predicted"].startswith("cpu_ms ")
        and "declared in the spec" in basis["decode"]["predicted"]
    )
    notes = compare.section(cmp)[3]
    assert any(n.startswith("stage cache: predicted from its P50 budget 1 ms") for n in notes)
