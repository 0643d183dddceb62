"""LLM request bodies from a spec's workload, as the load generator draws them (no locust needed)."""

from __future__ import annotations

import ast
import random
import statistics

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


def test_lengths_follow_their_distributions() -> None:
    rng = random.Random(1)
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
    bodies = [load.body("/v1/completions", random.Random(i)) for i in range(60)]
    assert all(b["max_tokens"] == 5 and b["ignore_eos"] and b["temperature"] == 0 for b in bodies)
    prompts = [b["prompt"] for b in bodies]
    assert {p[:2] for p in prompts} == {"0:", "1:", "2:"}
    assert all(p.count(" a") == 18 + 10 for p in prompts)  # 20-token prefix (18 words + "g:"), 10 more
    chat = load.body("/v1/chat/completions", random.Random(0), {"model": "override"})
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
