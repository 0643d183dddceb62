"""The knee search on an llm stage's streams: from the predicted knee, judged on token budgets.

Hand-computed: a predicted knee of 0.4 req/s and factor 2 bracket it with 0.1, 0.2, 0.4, 0.8 and
1.6 req/s (factor² below to factor² above); a TTFT P50 stop needs 6 requests a step
(orderstats.min_samples(0.5)), so the steps last max(10, ceil(6 / rate)) = 60, 30, 15, 10, 10 s.
An ITL P99 stop needs 368 gaps, and a request of 64 output tokens gives 63: ceil(368 / 63) = 6
requests, the same steps.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from archkit.loadtest import plan
from archkit.loadtest.options import LoadtestOptions
from archkit.loadtest.session import analyse_stress, step_failures, step_met
from archkit.perf.llm import analysis
from archkit.plans.context import prepare
from archkit.plans.stress import Basis, search_basis, stress_schedule
from archkit.spec import load_text
from tests.conftest import ROOT

SPEC = """\
apiVersion: archkit/v1
metadata: {name: s}
budgets: {error_rate: 0.01, throughput_rps: 0.2}
dataflow:
  stages:
    - id: gen
      kind: llm
      llm:
        engine: {name: llama.cpp, max_num_seqs: 2}
        model: {preset: SmolLM2-135M, name: smollm2}
        workload:
          prompt_tokens: {mean_tokens: 67}
          output_tokens: {distribution: fixed, mean_tokens: 64}
        budgets: {ttft_p50_ms: 1000, ttft_p99_ms: 4000, itl_p50_ms: 60}
loadtest:
  target: {protocol: openai-stream, host: "http://127.0.0.1:1"}
  scenarios: [{id: chat, llm_stage: gen}]
  levels:
    - id: knee
      kind: stress
      step_duration_s: 10
      duration_s: 10000
      search: {factor: 2, stop_percentile: ttft_p50_ms}
"""


def _spec(text: str = SPEC):
    res = load_text(text, "s.yaml")
    assert res.ok, [d.text() for d in res.diagnostics]
    return res.spec


def test_a_search_without_start_brackets_the_predicted_knee() -> None:
    level = _spec().loadtest.levels[0]
    sched = stress_schedule(level, None, Basis(knee_rps=0.4))
    assert [r for _s, _d, r in sched] == [0.1, 0.2, 0.4, 0.8, 1.6]
    assert [d for _s, d, _r in sched] == [60.0, 30.0, 15.0, 10.0, 10.0]
    assert [s for s, _d, _r in sched] == [0.0, 60.0, 90.0, 105.0, 115.0]
    itl = level.model_copy(
        update={"search": level.search.model_copy(update={"stop_percentile": "itl_p99_ms"})}
    )
    assert stress_schedule(itl, None, Basis(0.4, per_request=63.0)) == sched
    # the same stop counted per request (no tokens): 368 requests, ceil(368 / 0.1) s at the first step
    assert stress_schedule(itl, None, Basis(0.4))[0] == (0.0, 3680.0, 0.1)
    # --rate caps the bracket from above
    capped = plan.build(_spec(), LoadtestOptions(level="knee", rate=0.5), basis=Basis(knee_rps=0.4))
    assert [ph.rate_rps for ph in capped.phases] == [0.1, 0.2, 0.4]


def test_a_search_with_no_knee_to_start_from_is_a_located_error() -> None:
    with pytest.raises(plan.PlanError, match=r"s\.yaml:\d+: loadtest\.levels\[0\]\.search: level 'knee'"):
        plan.build(_spec(), LoadtestOptions(level="knee"), basis=Basis(knee_rps=None))
    res = load_text(
        SPEC.replace("scenarios: [{id: chat, llm_stage: gen}]", "scenarios: [{id: chat}]"), "s.yaml"
    )
    assert not res.ok
    assert any("search without start_rps" in d.text() for d in res.diagnostics)


def test_the_basis_is_the_knee_archkit_capacity_predicts() -> None:
    """The reference LLM spec with its cpu calibration: the search starts from analyse()'s knee."""
    spec = prepare(ROOT / "specs" / "llm-reference.yaml", "cpu").spec
    lt = spec.loadtest.model_copy(
        update={"scenarios": [spec.loadtest.scenarios[0].model_copy(update={"llm_stage": "generate"})]}
    )
    spec = spec.model_copy(update={"loadtest": lt})
    level = _spec().loadtest.levels[0]
    base = Path(ROOT / "specs")
    got = search_basis(spec, level, base)
    want = analysis.analyse(spec, spec.stage("generate"), base=base, search=True).knee_rps
    assert got.knee_rps == pytest.approx(want, rel=1e-12) and got.per_request == 1.0
    itl = level.model_copy(
        update={"search": level.search.model_copy(update={"stop_percentile": "itl_p50_ms"})}
    )
    assert (
        search_basis(spec, itl, base).per_request == 15.0
    )  # 16 output tokens, one gap after each but the first


def _row(ttft50: float, ttft99: float, n_ttft: int, itl50: float, n_itl: int, **kw) -> dict:
    return {
        "requests": n_ttft,
        "error_rate": 0.0,
        "p99_ms": ttft99 + 64 * itl50,  # end to end, as every phase row carries it
        "measures": {
            "ttft_ms": {"p50_ms": ttft50, "p99_ms": ttft99, "count": n_ttft},
            "itl_ms": {"p50_ms": itl50, "p99_ms": itl50 * 3, "count": n_itl},
        },
        **kw,
    }


def test_a_step_is_judged_on_its_stop_and_the_token_budgets_it_measured_enough_for() -> None:
    spec = _spec()
    level = spec.loadtest.levels[0]
    assert step_met(spec, _row(900, 5000, 10, 50, 630), level)  # TTFT P99 from 10 requests: not judged
    assert step_failures(spec, _row(1100, 900, 10, 50, 630), level) == [
        "ttft_p50_ms 1100 ms over the limit of 1000 ms"
    ]
    assert step_failures(spec, _row(900, 900, 10, 70, 630), level) == [
        "itl_p50_ms 70 ms over the llm budget of 60 ms (n=630)"
    ]
    assert step_failures(spec, _row(900, 5000, 368, 50, 5)) == [  # a linear level: P99 unset, no stop
        "ttft_p99_ms 5000 ms over the llm budget of 4000 ms (n=368)"
    ]  # and 5 ITL gaps judge no ITL P50 (6 needed)
    assert step_failures(spec, _row(900, 900, 10, 50, 630, error_rate=0.02), level) == [
        "error share 0.02 over 0.01"
    ]
    own = level.model_copy(update={"search": level.search.model_copy(update={"stop_latency_ms": 800})})
    assert not step_met(spec, _row(900, 900, 10, 50, 630), own)
    assert step_failures(spec, {"requests": 3, "error_rate": 0.0}, level) == [
        "ttft_p50_ms not measured over the limit of 1000 ms"
    ]


def test_the_knee_and_what_broke_it() -> None:
    spec = _spec()
    level = spec.loadtest.levels[0]
    rows = [
        {
            **_row(t50, 900, 10, i50, 630),
            "offered_rps": r,
            "throughput_rps": r * 0.98,
            "statuses": {"200": 10},
        }
        for r, t50, i50 in ((0.1, 400, 30), (0.2, 500, 40), (0.4, 700, 65), (0.8, 3000, 90))
    ]
    st = analyse_stress(spec, rows, level)
    assert st["knee_offered_rps"] == 0.2 and st["knee_rps"] == pytest.approx(0.196)
    assert st["knee_bracket_rps"] == [0.2, 0.4]
    assert st["broke_on"] == ["itl_p50_ms 65 ms over the llm budget of 60 ms (n=630)"]


def test_the_measured_knee_is_compared_with_the_llm_stage_knee(monkeypatch) -> None:
    """The pipeline's knee (a stand-in value here) is the request path's; a stream's is the engine's."""
    from archkit.loadtest import compare

    pred = {"source": "test", "end_to_end": {}, "stages": {}, "knee_rps": 3349.0}
    monkeypatch.setattr(compare, "predict", lambda spec, env, rate: pred)
    measured = {
        "kind": "stress",
        "offered_rps": 0.8,
        "stress": {"knee_rps": 0.196, "knee_offered_rps": 0.2, "knee_bracket_rps": [0.2, 0.4],
                   "predicted_knee_rps": 0.25},
    }  # fmt: skip
    knee = compare.compare(_spec(), measured, None)["knee_rps"]
    assert (knee["predicted"], knee["error_pct"], knee["within_bracket"]) == (0.25, 27.6, True)
