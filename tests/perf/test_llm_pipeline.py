"""An LLM stage inside the whole-pipeline simulation (the `continuous-batcher` service model).

Hand-checked: a gateway (a fixed 10 ms delay) in front of one engine that runs one sequence at a
time (`max_num_seqs: 1`) with fixed lengths, then a 5 ms post-processing stage. One engine pass
takes S = one 512-token prefill iteration + 15 decode iterations (the replica's own step times,
hand-checked in test_llm_model.py); two requests arriving together are served one after the other.
"""

from __future__ import annotations

import pytest

from archkit.perf import service_models
from archkit.perf.llm.analysis import device_of
from archkit.perf.llm.model import replica
from archkit.perf.pipeline import prepare
from archkit.perf.pipesim import simulate_pipeline
from archkit.perf.service_models.continuous_batcher import ContinuousBatcher
from archkit.spec import load_file, load_text
from archkit.spec.model import Spec
from tests.conftest import ROOT

RAG = """apiVersion: archkit/v1
metadata: {name: rag-toy}
budgets: {throughput_rps: 1}
dataflow:
  stages:
    - {id: gateway, kind: gateway, service: gw, p50_ms: 10, service_distribution: deterministic}
    - id: generate
      kind: llm
      service: llm
      llm:
        engine: {name: vllm, max_num_seqs: 1, max_num_batched_tokens: 8192, prefix_caching: false}
        model: {preset: Llama-3.1-8B}
        accelerator: {type: H100-SXM}
        workload:
          prompt_tokens: {mean_tokens: 512}
          output_tokens: {mean_tokens: 16}
    - {id: post, kind: postprocess, service: gw, p50_ms: 5, service_distribution: deterministic}
  edges:
    - {from: gateway, to: generate}
    - {from: generate, to: post}
topology:
  node_pools:
    - {id: cpu, cpu_cores: 4}
    - {id: gpu, cpu_cores: 8, gpu: {model: H100-SXM, count: 1}}
  services:
    - {id: gw, pool: cpu, replicas: 1}
    - {id: llm, pool: gpu, replicas: 1}
"""


def _spec(text: str) -> Spec:
    res = load_text(text)
    assert res.spec is not None, res.diagnostics
    return res.spec


def _engine_pass_s(spec: Spec) -> float:
    st = spec.stage("generate")
    assert st is not None and st.llm is not None
    dev = device_of(spec, st)
    assert dev is not None
    rep = replica(st.llm, dev)
    prefill = rep.iteration_s(512, rep.attn_flops(512, 0), 0)
    return prefill + sum(rep.iteration_s(1, rep.attn_flops(1, 511 + g), 511 + g) for g in range(1, 16))


def test_llm_stage_is_served_by_the_continuous_batcher() -> None:
    spec = _spec(RAG)
    kinds = {st.id: type(service_models.model_for(st)).__name__ for st in spec.dataflow.stages}
    assert kinds == {"gateway": "WorkerPool", "generate": "ContinuousBatcher", "post": "WorkerPool"}
    assert isinstance(service_models.model_for(spec.stage("generate")), ContinuousBatcher)  # type: ignore[arg-type]


@pytest.mark.parametrize("compiled", [True, False])
def test_rag_pipeline_end_to_end_by_hand(compiled: bool) -> None:
    """Arrivals at 0, 0 and 100 s: the two together are served one after the other by the engine."""
    spec = _spec(RAG)
    applied, lm = prepare(spec)
    s = _engine_pass_s(spec)
    sim = simulate_pipeline(applied, lm, 0.0, arrivals=[0.0, 0.0, 100.0], compiled=compiled)
    assert sim.completed == 3 and sim.failed == 0
    # end to end: 10 ms + the engine + 5 ms; one request waits a whole engine pass more
    e2e = sorted([10 + 1000 * s + 5, 10 + 2000 * s + 5, 10 + 1000 * s + 5])
    assert sim.mean_ms == pytest.approx(sum(e2e) / 3, rel=1e-9)
    assert sim.p50_ms == pytest.approx(e2e[1], rel=1e-9)
    assert sim.p99_ms == pytest.approx(e2e[2], rel=1e-9)
    gen = {x.stage: x for x in sim.stages}["generate"]
    assert gen.visits == 3
    assert gen.mean_ms == pytest.approx(4000 * s / 3, rel=1e-9)


def test_the_example_rag_chat_is_simulated_end_to_end() -> None:
    """examples/rag-chat.yaml at its design rate: the LLM stage now counts in the end-to-end time
    (it was skipped before: an LLM stage has no per-visit service time of its own)."""
    loaded = load_file(ROOT / "examples" / "rag-chat.yaml")
    assert loaded.spec is not None
    applied, lm = prepare(loaded.spec)
    sim = simulate_pipeline(applied, lm, 12.0, requests=3_000)
    stages = {x.stage: x for x in sim.stages}
    assert stages["generate"].visits > 2_900
    # an answer of ~220 tokens at ~10 ms per token takes seconds: it dominates the retrieval's ~100 ms
    assert stages["generate"].p50_ms > 1_000
    assert sim.p50_ms > stages["generate"].p50_ms
    assert sum(x.p50_ms for x in sim.stages if x.stage != "generate") < 0.1 * sim.p50_ms


def test_user_ttft_is_the_time_before_the_engine_plus_its_ttft_by_hand() -> None:
    """The user's first token: the gateway's 10 ms plus the engine's TTFT. The engine's TTFT is its
    512-token prefill iteration P for the requests it starts at once, and the whole pass S of the
    request ahead plus P for the one that waits (arrivals 0, 0, 100 s)."""
    spec = _spec(RAG)
    applied, lm = prepare(spec)
    st = spec.stage("generate")
    assert st is not None and st.llm is not None
    dev = device_of(spec, st)
    assert dev is not None
    rep = replica(st.llm, dev)
    p_ms = 1000 * rep.iteration_s(512, rep.attn_flops(512, 0), 0)
    s_ms = 1000 * _engine_pass_s(spec)
    sim = simulate_pipeline(applied, lm, 0.0, arrivals=[0.0, 0.0, 100.0])
    (ft,) = sim.first_token
    assert (ft.stage, ft.visits) == ("generate", 3)
    # nearest-rank percentiles of three: P50 the 2nd, P95 and P99 the 3rd
    assert ft.upstream_ms == pytest.approx({"p50": 10.0, "p95": 10.0, "p99": 10.0}, rel=1e-9)
    assert ft.stage_ms == pytest.approx({"p50": p_ms, "p95": s_ms + p_ms, "p99": s_ms + p_ms}, rel=1e-9)
    assert ft.user_ms == pytest.approx(
        {"p50": 10 + p_ms, "p95": 10 + s_ms + p_ms, "p99": 10 + s_ms + p_ms}, rel=1e-9
    )


def test_user_ttft_is_judged_against_its_budget_in_capacity(tmp_path) -> None:
    """`capacity` reports the user's TTFT (text and JSON) against `llm.budgets.user_ttft_p99_ms` and
    exits 1 when the simulated P99 is over it. The toy at 1 req/s: 10 ms + a ~19 ms prefill, so a
    budget of 1,000 ms is met and one of 20 ms is not (the analytic AK705 check uses the same field)."""
    import json

    from typer.testing import CliRunner

    from archkit.cli import _load_commands, app

    _load_commands()

    def run(budget: int, fmt: str) -> tuple[int, str]:
        text = RAG.replace("output_tokens: {mean_tokens: 16}", "output_tokens: {mean_tokens: 16}\n"
                           f"        budgets: {{user_ttft_p99_ms: {budget}}}")  # fmt: skip
        path = tmp_path / f"rag-{budget}.yaml"
        path.write_text(text, encoding="utf-8")
        res = CliRunner().invoke(app, ["capacity", str(path), "--format", fmt])
        return res.exit_code, res.stdout

    code, out = run(1000, "json")
    (u,) = json.loads(out)["pipeline"]["user_ttft"]
    assert code == 0 and u["stage"] == "generate" and u["budget_p99_ms"] == 1000 and u["met"] is True
    assert u["user_ms"]["p50"] == pytest.approx(u["upstream_ms"]["p50"] + u["engine_ms"]["p50"], abs=0.01)
    assert 10 <= u["upstream_ms"]["p50"] < 10.01  # the gateway's fixed 10 ms; nothing queues at 1 req/s
    code, out = run(20, "text")
    assert code == 1
    line = next(x for x in out.splitlines() if "simulated user TTFT at generate" in x)
    assert line.endswith("user_ttft_p99_ms 20: OVER BUDGET"), line
