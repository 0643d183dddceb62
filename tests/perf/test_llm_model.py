"""The LLM replica model against figures computed by hand from published model and GPU data."""

from __future__ import annotations

import pytest

from archkit.perf.llm.model import Replica, replica
from archkit.spec.llm import LlmStage
from archkit.spec.llm_catalogue import ACCELERATORS

GB = 1e9


def _stage(**over: object) -> LlmStage:
    data: dict[str, object] = {
        "engine": {"name": "vllm", "activation_reserve_gb": 2.0},
        "model": {"preset": "Llama-3.1-8B"},
        "workload": {"prompt_tokens": {"mean_tokens": 512}, "output_tokens": {"mean_tokens": 256}},
    }
    data.update(over)
    return LlmStage.model_validate(data)


def _rep(gpu: str = "H100-SXM", **over: object) -> Replica:
    return replica(_stage(**over), ACCELERATORS[gpu])


def test_kv_bytes_per_token_llama_3_1_8b_bf16() -> None:
    # 2 (K, V) x 32 layers x 8 KV heads x 128 head dim x 2 bytes
    assert _rep().kv_bytes_per_token == 2 * 32 * 8 * 128 * 2 == 131_072


def test_tensor_parallel_splits_kv_heads_at_least_one_per_gpu() -> None:
    tp2 = _rep(parallelism={"tensor": 2})
    assert tp2.kv_heads_per_gpu == 4 and tp2.kv_bytes_per_token_per_gpu == 65_536
    tp16 = _rep(parallelism={"tensor": 16})  # 8 KV heads over 16 GPUs: each keeps one (replicated)
    assert tp16.kv_heads_per_gpu == 1 and tp16.kv_bytes_per_token_per_gpu == 2 * 32 * 1 * 128 * 2


def test_kv_capacity_and_concurrency_on_h100() -> None:
    rep = _rep()
    # 80 GB x 0.9 - 8.03e9 x 2 B of weights - 2 GB reserve = 53.94e9 B of KV
    assert rep.kv_capacity_bytes_per_gpu == pytest.approx(80e9 * 0.9 - 16.06e9 - 2e9)
    # / (131,072 B x 16 tokens per block) = 25,720.0... whole blocks
    assert rep.kv_blocks == int(53.94e9 // (131_072 * 16)) == 25_720
    assert rep.kv_tokens == 411_520
    # 512 + 256 tokens = 48 blocks a sequence: 25,720 // 48 = 535 > max_num_seqs 256
    assert rep.max_concurrency(768) == (256, "max_num_seqs")
    # at 32k tokens a sequence (2,048 blocks) the cache binds: 12 sequences
    assert rep.max_concurrency(32_768) == (12, "kv")


def test_kv_capacity_and_concurrency_on_h200() -> None:
    rep = _rep("H200", engine={"name": "vllm", "activation_reserve_gb": 2.0, "max_num_seqs": 2048})
    # 141 GB x 0.9 - 16.06 GB - 2 GB = 108.84 GB -> 51,898 blocks -> 1,081 sequences of 768 tokens
    assert rep.kv_blocks == int(108.84e9 // (131_072 * 16)) == 51_898
    assert rep.max_concurrency(768) == (1_081, "kv")


def test_model_that_does_not_fit_has_no_kv_blocks() -> None:
    rep = _rep("L4", model={"preset": "Llama-3.1-70B"})
    assert rep.weight_bytes_per_gpu > 24e9 and rep.kv_blocks == 0


def test_decode_lower_bound_is_weight_bytes_over_bandwidth() -> None:
    rep = _rep()
    assert rep.decode_lower_bound_s() == pytest.approx(16.06e9 / 3.35e12)  # 4.79 ms
    # one sequence at short context: weights / (bandwidth x 0.8) + KV + 2 ms overhead, never below the bound
    step = rep.decode_step_s(1, 0)
    assert step == pytest.approx((16.06e9 + 131_072) / (3.35e12 * 0.8) + 0.002)
    assert step > rep.decode_lower_bound_s()


def test_prefill_flops_and_time() -> None:
    rep = _rep()
    # 2 x 8.03e9 x 2048 + 2 x 32 layers x 2048^2 x 4096 hidden
    flops = 2 * 8.03e9 * 2048 + 2 * 32 * 2048**2 * 4096
    assert rep.prefill_flops(2048) == pytest.approx(flops)
    # compute-bound at 2,048 tokens: FLOPs / (989.4 TFLOPS x 0.5) + 2 ms (one chunk: 2,048 < 8,192)
    assert rep.prefill_s(2048) == pytest.approx(flops / (989.4e12 * 0.5) + 0.002)


def test_roofline_crossover() -> None:
    # with no efficiency losses the crossover is the ridge: 989.4e12 / 3.35e12 = 295 tokens (bf16)
    ideal = _rep(efficiency={"prefill_mfu": 1.0, "decode_bandwidth": 1.0})
    assert ideal.crossover_batch == pytest.approx(295.3, abs=0.1)
    # fp8 weights on the fp8 tensor path: twice the FLOPs, half the bytes -> the same ridge in tokens
    fp8 = _rep(
        model={"preset": "Llama-3.1-8B", "quantization": "fp8"},
        efficiency={"prefill_mfu": 1.0, "decode_bandwidth": 1.0},
    )
    assert fp8.crossover_batch == pytest.approx(295.3, abs=0.1)


def test_speculative_decoding_expected_tokens() -> None:
    rep = _rep(engine={"name": "vllm", "speculative": {"draft_tokens": 4, "acceptance_rate": 0.8}})
    # (1 - 0.8^5) / (1 - 0.8) = 3.3616
    assert rep.tokens_per_step == pytest.approx(3.3616)
    assert rep.tokens_verified == 5


def test_tensor_parallel_allreduce_cost() -> None:
    rep = _rep(parallelism={"tensor": 2})
    # 2 all-reduces x 32 layers x (2 (n-1)/n x tokens x 4096 x 2 B / (450 GB/s x 0.7) + 10 us)
    per = 1.0 * 100 * 4096 * 2 / (450e9 * 0.7) + 10e-6
    assert rep.allreduce_s(100) == pytest.approx(64 * per)
    assert _rep().allreduce_s(100) == 0.0


def _smollm(**engine: object) -> Replica:
    stage = LlmStage.model_validate(
        {
            "engine": {"name": "llama.cpp", "block_size_tokens": 1, "kv_cache_dtype": "fp16", **engine},
            "model": {"preset": "SmolLM2-135M", "quantization": "q4_1"},
            "workload": {"prompt_tokens": {"mean_tokens": 67}, "output_tokens": {"mean_tokens": 64}},
        }
    )
    return replica(stage, ACCELERATORS["EPYC-2vCPU-AVX2"])


def test_a_fixed_kv_cache_is_the_engines_not_what_memory_would_allow() -> None:
    """llama.cpp sizes its cache by --ctx-size, not from free memory: 2 slots x 1,024 tokens = 2,048."""
    derived = _smollm(max_num_seqs=2)
    # 2 (K, V) x 30 layers x 3 KV heads x 64 head dim x 2 B (f16) = 23,040 B a token
    assert derived.kv_bytes_per_token == 2 * 30 * 3 * 64 * 2 == 23_040
    assert derived.kv_source == "memory" and derived.kv_tokens > 800_000  # 20 GB of the host's memory
    fixed = _smollm(max_num_seqs=2, kv_capacity_tokens=2048)
    assert fixed.kv_source == "engine"
    assert (fixed.kv_blocks, fixed.kv_tokens) == (2048, 2048)
    assert fixed.kv_capacity_bytes_per_gpu == 2048 * 23_040
    # 67 + 64 = 131 tokens a request: 2,048 // 131 = 15 fit, so the 2 slots bind
    assert fixed.max_concurrency(131) == (2, "max_num_seqs")
    # with 64 slots the cache binds at 15 sequences, and at 1,100 tokens at one
    many = _smollm(max_num_seqs=64, kv_capacity_tokens=2048)
    assert many.max_concurrency(131) == (15, "kv")
    assert many.max_concurrency(1100) == (1, "kv")


def test_a_fixed_kv_cache_counts_whole_blocks() -> None:
    # vLLM's cache_config_info: 25,720 blocks x 16 = 411,520 tokens -> 25,720 blocks again; 768-token
    # sequences take 48 blocks: 535 of them, above max_num_seqs 256
    rep = _rep(engine={"name": "vllm", "kv_capacity_tokens": 411_520 + 15})
    assert rep.kv_blocks == 25_720 and rep.kv_tokens == 411_520
    assert rep.max_concurrency(768) == (256, "max_num_seqs")


def test_first_token_alone_adds_the_per_request_costs_to_the_prefill() -> None:
    from dataclasses import replace

    rep = replace(_rep(), request_overhead_s=0.0025, client_overhead_s=0.0045)
    assert rep.first_token_s(512) == pytest.approx(rep.prefill_s(512) + 0.007, rel=1e-12)


def test_capacity_counts_the_engines_per_request_set_up() -> None:
    """At the capacity's fixed point the admissions' set-up (rate x step x 3 ms per step) is in the
    step: lambda = B / (output x tau (1 + lambda x 3 ms)), checked by hand from the returned rate."""
    from dataclasses import replace

    from archkit.perf.llm.analysis import capacity_rps

    base = _rep()
    costly = replace(base, request_overhead_s=0.003)
    prompt, output = 1.0, 512.0  # one prompt token, fewer than one admitted per step: no prefill in it
    lam0, lam = capacity_rps(base, prompt, output), capacity_rps(costly, prompt, output)
    b, _ = base.max_concurrency(int(prompt + output))
    tau0 = b / (output * lam0)  # the step without set-up, from the first fixed point
    assert lam == pytest.approx(b / (output * tau0 * (1 + lam * 0.003)), rel=1e-3)
    assert lam < lam0
