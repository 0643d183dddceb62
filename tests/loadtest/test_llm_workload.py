"""LLM request bodies from a spec's workload, as the load generator draws them (no locust needed)."""

from __future__ import annotations

import ast
import statistics

import numpy as np
import pytest

from archkit import api
from archkit.loadtest.measures import Sample, StreamTrace, load_all
from archkit.loadtest.runtime.llm import Lengths, LlmLoad
from archkit.spec import load_text

SPEC = """\
apiVersion: archkit/v1
metadata: {name: t}
dataflow:
  stages:
    - id: gen
      kind: llm
      llm:
        engine: {name: llama.cpp}
        model: {preset: SmolLM2-135M}
        workload:
          prompt_tokens: {distribution: lognormal, mean_tokens: 200, std_tokens: 50, max_tokens: 1000}
          output_tokens: {distribution: empirical, cdf: [[10, 0.5], [30, 1.0]]}
          shared_prefix: {groups: 3, tokens: 20, share: 1.0}
loadtest:
  target: {protocol: openai-stream, host: "http://127.0.0.1:9"}
  scenarios:
    - {id: chat, llm_stage: gen, path: /v1/completions}
"""


def test_the_locustfile_carries_the_stage_workload_as_a_literal() -> None:
    spec = load_text(SPEC, "t.yaml").spec
    files, _ = api.generate(spec, "t.yaml", only=["locust"])
    text = files["locust/locustfile.py"]
    compile(text, "locustfile.py", "exec")
    scen = next(
        ast.literal_eval(n.value)
        for n in ast.parse(text).body
        if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "SCENARIOS"
    )
    llm = scen[0]["llm"]
    assert llm["stage"] == "gen" and llm["model"] == "gen"  # no served name: the stage id
    assert llm["prompt"] == {
        "distribution": "lognormal",
        "min_tokens": 1,
        "mean_tokens": 200.0,
        "std_tokens": 50.0,
        "max_tokens": 1000,
    }
    assert llm["output"]["cdf"] == [[10, 0.5], [30, 1.0]] and llm["prefix"] == {
        "groups": 3,
        "tokens": 20,
        "share": 1.0,
    }


WORKLOADS = {
    "fixed": {"distribution": "fixed", "mean_tokens": 64},
    "uniform": {"distribution": "uniform", "min_tokens": 3, "max_tokens": 600},
    "normal": {"distribution": "normal", "mean_tokens": 100, "std_tokens": 30, "min_tokens": 5},
    "lognormal": {"distribution": "lognormal", "mean_tokens": 200, "std_tokens": 50, "max_tokens": 1000},
    "empirical": {"distribution": "empirical", "cdf": [[10, 0.0], [30, 0.5], [300, 1.0]]},
}


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_the_load_generator_draws_what_the_simulation_draws_for_the_same_seed(name: str) -> None:
    """One sampler (`archkit.llm_lengths`): the spec's TokenLengths as the simulation reads it and
    the locustfile's literal copy of it, drawn one request at a time from the same seed, give the
    same lengths as the simulation's vectorised draw."""
    from archkit import llm_lengths
    from archkit.spec.llm import TokenLengths

    spec_side = TokenLengths.model_validate(WORKLOADS[name])
    literal = Lengths.of(spec_side.model_dump(exclude_none=True))
    rng = np.random.default_rng(42)
    live = [literal.draw(rng) for _ in range(500)]
    offline = llm_lengths.draw(spec_side, 500, np.random.default_rng(42))
    assert live == offline.tolist()
    assert len(set(live)) > (1 if name != "fixed" else 0)


def test_the_load_generator_imports_no_pydantic() -> None:
    """The locust process draws lengths without the spec model: importing the runtime's LLM bodies
    loads numpy and archkit.llm_lengths, not pydantic or archkit.spec."""
    import subprocess
    import sys

    code = (
        "import sys, archkit.loadtest.runtime.llm; "
        "print(sorted(m for m in ('pydantic', 'archkit.spec', 'archkit.llm_lengths') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['archkit.llm_lengths']"


def test_lengths_follow_their_distributions() -> None:
    rng = np.random.default_rng(1)
    assert Lengths("fixed", 1, mean_tokens=64).draw(rng) == 64
    uni = [Lengths("uniform", 3, max_tokens=6).draw(rng) for _ in range(2000)]
    assert set(uni) == {3, 4, 5, 6}
    logn = [Lengths("lognormal", 1, mean_tokens=200, std_tokens=50).draw(rng) for _ in range(20000)]
    assert statistics.mean(logn) == pytest.approx(200, rel=0.02)  # parameters from the mean and sd
    assert statistics.stdev(logn) == pytest.approx(50, rel=0.05)
    emp = [Lengths("empirical", 1, cdf=((10, 0.5), (30, 1.0))).draw(rng) for _ in range(20000)]
    # the CDF inverted: below 0.5 every draw is 10; above it uniform on 10..30 (mean 20)
    assert sum(e == 10 for e in emp) / len(emp) == pytest.approx(0.5 + 0.5 / 40, abs=0.02)
    assert statistics.mean(emp) == pytest.approx(0.5 * 10 + 0.5 * 20, rel=0.02)
    clipped = [Lengths("normal", 5, mean_tokens=5, std_tokens=10, max_tokens=8).draw(rng) for _ in range(500)]
    assert min(clipped) == 5 and max(clipped) == 8


def test_a_completions_body_has_the_prompt_and_every_request_one_prefix() -> None:
    load = LlmLoad(
        "gen", "m", Lengths("fixed", 1, mean_tokens=30), Lengths("fixed", 1, mean_tokens=5), 3, 20, 1.0
    )
    bodies = [load.body("/v1/completions", np.random.default_rng(i)) for i in range(60)]
    assert all(b["max_tokens"] == 5 and b["ignore_eos"] and b["temperature"] == 0 for b in bodies)
    prompts = [b["prompt"] for b in bodies]
    assert {p[:2] for p in prompts} == {"0:", "1:", "2:"}
    assert all(p.count(" a") == 18 + 10 for p in prompts)  # 20-token prefix (18 words + "g:"), 10 more
    chat = load.body("/v1/chat/completions", np.random.default_rng(0), {"model": "override"})
    assert chat["model"] == "override" and chat["messages"][0]["role"] == "user"


def test_stream_measures_by_hand() -> None:
    """Chunks at 50, 70, 130 ms carrying 1, 2, 3 tokens (server counts): gaps 20/2 and 60/3 per token."""
    m = load_all()
    st = StreamTrace(
        setup_ms=5.0, content_ms=[50.0, 70.0, 130.0], chunk_tokens=[1, 2, 3], output_tokens=6, done_ms=131.0
    )
    s = Sample(140.0, 131.0, False, st)
    assert m["ttft_ms"].values(s) == (50.0,)
    assert list(m["itl_ms"].values(s)) == [10.0, 10.0, 20.0, 20.0, 20.0]
    assert m["tpot_ms"].values(s) == ((131.0 - 50.0) / 5,)
    assert m["output_tokens_per_s"].values(s) == (6 / 0.131,)
    assert m["setup_ms"].values(s) == (5.0,)
    assert m["chunks_per_token"].counts(s) == {"content_chunks": 3, "output_tokens": 6}
    even = StreamTrace(content_ms=[10.0, 30.0], output_tokens=4, done_ms=30.0)  # usage only at the end
    assert list(m["itl_ms"].values(Sample(30.0, 30.0, False, even))) == [10.0, 10.0]
    assert m["ttft_ms"].values(Sample(1.0, 1.0, False, None)) == ()  # not a stream: no TTFT


def test_server_timings_by_hand() -> None:
    """llama.cpp's closing `timings`: prefill 12.5 ms; 40 ms over 8 tokens decode, 5 ms per token."""
    m = load_all()
    st = StreamTrace(content_ms=[20.0], server={"prompt_ms": 12.5, "predicted_ms": 40.0, "predicted_n": 8})
    s = Sample(60.0, 60.0, False, st)
    assert m["server_prompt_ms"].values(s) == (12.5,)
    assert m["server_decode_per_token_ms"].values(s) == (5.0,)
    assert m["server_prompt_ms"].values(Sample(1.0, 1.0, False, StreamTrace())) == ()


def test_slo_attainment_by_hand() -> None:
    """Objectives TTFT 60 ms and TPOT 20 ms: each request meets both, one, or (failed) none."""
    m = load_all()["slo_attainment"]
    slo = {"ttft_ms": 60.0, "tpot_ms": 20.0}

    def req(ttft: float, end: float, tokens: int = 6, failed: bool = False) -> Sample:
        st = StreamTrace(content_ms=[ttft, end], output_tokens=tokens, done_ms=end, slo=dict(slo))
        return Sample(end, end, failed, st)

    both = req(50.0, 150.0)  # TPOT (150 - 50) / 5 = 20 ms: met (at the objective)
    slow_start = req(70.0, 120.0)  # TTFT 70 > 60; TPOT 10
    slow_tokens = req(40.0, 200.0)  # TPOT 32 > 20
    failed = req(10.0, 20.0, failed=True)
    counts = [m.counts(s) for s in (both, slow_start, slow_tokens, failed)]
    assert counts[0] == {"slo_requests": 1, "slo_met": 1, "slo_ttft_met": 1, "slo_tpot_met": 1}
    assert counts[1] == {"slo_requests": 1, "slo_met": 0, "slo_ttft_met": 0, "slo_tpot_met": 1}
    assert counts[2] == {"slo_requests": 1, "slo_met": 0, "slo_ttft_met": 1, "slo_tpot_met": 0}
    assert counts[3] == {"slo_requests": 1, "slo_met": 0, "slo_ttft_met": 0, "slo_tpot_met": 0}
    totals = {k: sum(c[k] for c in counts) for k in counts[0]}
    assert m.summary(None, totals)["attainment"] == 0.25
    assert m.counts(Sample(1.0, 1.0, False, StreamTrace(content_ms=[1.0]))) == {}  # no objectives: not judged


def test_the_stages_slo_objectives_travel_with_the_workload_and_are_judged() -> None:
    """slo_ttft_ms defaults to ttft_p99_ms, slo_tpot_ms to tpot_ms; the verdict carries n and goodput."""
    from archkit.loadtest.judge_llm import judge
    from archkit.plans.loadtest import llm_load

    text = SPEC.replace(
        "          shared_prefix: {groups: 3, tokens: 20, share: 1.0}\n",
        "          shared_prefix: {groups: 3, tokens: 20, share: 1.0}\n"
        "        budgets: {ttft_p99_ms: 500, tpot_ms: 40, slo_attainment: 0.9}\n",
    )
    spec = load_text(text, "t.yaml").spec
    assert spec is not None and spec.loadtest is not None
    load = llm_load(spec.loadtest.scenarios[0], spec)
    assert load is not None and dict(load.slo) == {"ttft_ms": 500.0, "tpot_ms": 40.0}
    live = LlmLoad.of(ast.literal_eval(load.literal))
    assert (live.slo_ttft_ms, live.slo_tpot_ms) == (500.0, 40.0)
    att = {"requests": 20, "met": 17, "ttft_met": 19, "tpot_met": 18, "attainment": 0.85}
    measured = {
        "kind": "baseline",
        "duration_s": 10.0,
        "scenarios": {"chat": {"measures": {"slo_attainment": att}}},
    }
    (v,) = [v for v in judge(spec, measured) if v.id == "llm.gen.slo_attainment"]
    assert not v.passed and v.measured == 0.85
    assert "17 of 20 requests (goodput 1.7 req/s" in v.why and "n=20" in v.why


def test_token_budgets_are_judged_on_their_intervals() -> None:
    """113 TTFTs (1..113 ms) and 1,695 ITL gaps (1..15 ms, 113 each): the ITL P50's interval lies
    within 10 ms and beyond 5 ms, so its budgets pass and fail; a TTFT P99 of 113 requests decides
    nothing (it needs 368) whatever the budget, and says how many would decide it."""
    from archkit.loadtest import hist
    from archkit.loadtest.judge_llm import judge

    ms = load_all()
    ttft, itl = hist.new(), hist.new()
    for v in range(1, 114):
        hist.record_ms(ttft, float(v))
        for g in range(1, 16):
            hist.record_ms(itl, float(g))
    m = {"ttft_ms": ms["ttft_ms"].summary(ttft, {}), "itl_ms": ms["itl_ms"].summary(itl, {})}
    assert m["ttft_ms"]["ci"]["p99_ms"]["n"] == 113 and m["ttft_ms"]["ci"]["p99_ms"]["hi_ms"] is None
    # P50 of 1,695 gaps: its interval's ranks (807, 889) both fall on 8 ms (ranks 792..904), kept
    # as HDR's bucket edges 8.0 and 8.003
    assert (m["itl_ms"]["ci"]["p50_ms"]["lo_ms"], m["itl_ms"]["ci"]["p50_ms"]["hi_ms"]) == (8.0, 8.003)
    measured = {"kind": "baseline", "duration_s": 427.0, "scenarios": {"chat": {"measures": m}}}

    def verdicts(budgets: str) -> dict:
        text = SPEC.replace(
            "          shared_prefix: {groups: 3, tokens: 20, share: 1.0}\n",
            f"          shared_prefix: {{groups: 3, tokens: 20, share: 1.0}}\n        budgets: {budgets}\n",
        )
        spec = load_text(text, "t.yaml").spec
        assert spec is not None
        return {v.metric: v for v in judge(spec, measured)}

    met = verdicts("{ttft_p99_ms: 500, itl_p50_ms: 10}")
    assert met["itl_p50_ms"].outcome == "pass" and "from 1695 samples" in met["itl_p50_ms"].why
    assert met["ttft_p99_ms"].outcome == "inconclusive"  # 113 < 368, even with every value under
    assert "too few samples for a P99 (it needs 368)" in met["ttft_p99_ms"].why
    missed = verdicts("{ttft_p99_ms: 50, itl_p50_ms: 5}")
    assert missed["itl_p50_ms"].outcome == "fail"
    # the interval's low end (X_(109) = 109 ms) is over 50 ms, but below 368 samples nothing is
    # decided (orderstats.decide): this too is inconclusive, with the run that would decide it
    assert (
        missed["ttft_p99_ms"].outcome == "inconclusive"
        and "samples would decide it" in missed["ttft_p99_ms"].why
    )


def test_the_measures_a_budget_judges_carry_their_intervals() -> None:
    """Every measure judge_llm reads a percentile of is `judged` (its summary has the intervals the
    verdict needs), and no other: the intervals cost ~0.1 s a measure in every phase's summary."""
    from archkit.loadtest import hist
    from archkit.loadtest.judge_llm import PERCENTILES

    judged = {measure for measure, _, _ in PERCENTILES.values()}
    ms = load_all()
    assert {name for name, m in ms.items() if m.judged} == judged
    h = hist.new()
    hist.record_ms(h, 5.0)
    assert all(("ci" in ms[name].summary(h, {})) == (name in judged) for name in ("ttft_ms", "setup_ms"))
