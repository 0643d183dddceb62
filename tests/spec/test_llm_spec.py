"""The `llm` stage section: presets, accelerator catalogue with overrides and MIG, located errors."""

from __future__ import annotations

import textwrap

import pytest

from archkit.spec import load_text
from archkit.spec.llm_catalogue import ACCELERATORS, MODEL_PRESETS, accelerator

HEAD = """\
apiVersion: archkit/v1
metadata: {name: t}
dataflow:
  stages:
    - id: gen
      kind: llm
      llm:
"""


def _load(body: str):  # type: ignore[no-untyped-def]
    return load_text(HEAD + textwrap.indent(textwrap.dedent(body), " " * 8), "t.yaml")


def _llm(body: str):  # type: ignore[no-untyped-def]
    res = _load(body)
    assert res.spec is not None, [str(d) for d in res.diagnostics]
    stage = res.spec.stage("gen")
    assert stage is not None and stage.llm is not None
    return stage.llm


WORKLOAD = """\
workload:
  prompt_tokens: {mean_tokens: 512}
  output_tokens: {mean_tokens: 256}
"""


def test_preset_resolves_to_its_published_architecture() -> None:
    llm = _llm("engine: {name: vllm}\nmodel: {preset: Llama-3.1-8B}\n" + WORKLOAD)
    arch = llm.model.architecture()
    assert (arch.layers, arch.kv_heads, arch.head_dim, arch.hidden_size) == (32, 8, 128, 4096)
    assert arch.parameters == 8.03e9 and arch.max_context_tokens == 131_072
    # scheduler defaults are vLLM's
    assert (llm.engine.max_num_seqs, llm.engine.block_size_tokens, llm.engine.gpu_memory_utilization) == (
        256,
        16,
        0.9,
    )


def test_a_given_field_overrides_the_preset() -> None:
    llm = _llm("engine: {name: sglang}\nmodel: {preset: Llama-3.1-8B, max_context_tokens: 8192}\n" + WORKLOAD)
    assert llm.model.architecture().max_context_tokens == 8192


def test_architecture_without_preset_derives_head_dim() -> None:
    llm = _llm(
        "engine: {name: tgi}\nmodel: {parameters: 1.0e9, layers: 16, hidden_size: 2048, attention_heads: 16,"
        " kv_heads: 4, max_context_tokens: 4096}\n" + WORKLOAD
    )
    arch = llm.model.architecture()
    assert (arch.head_dim, arch.kv_heads) == (128, 4)


def test_accelerator_override_and_mig_profile() -> None:
    llm = _llm(
        "engine: {name: vllm}\nmodel: {preset: Mistral-7B}\n"
        "accelerator: {type: H100-SXM, mig_profile: 3g.40gb, interconnect_gb_s: 100}\n" + WORKLOAD
    )
    dev = llm.accelerator.resolve(None)
    assert dev is not None
    assert dev.memory_gb == 40 and dev.bandwidth_gb_s == pytest.approx(3350 * 4 / 8)
    assert dev.bf16_tflops == pytest.approx(989.4 * 3 / 7) and dev.interconnect_gb_s == 100


def test_accelerator_defaults_to_the_pool_gpu_model_and_aliases() -> None:
    llm = _llm("engine: {name: vllm}\nmodel: {preset: Qwen2.5-7B}\n" + WORKLOAD)
    dev = llm.accelerator.resolve("nvidia-h200")
    assert dev is not None and dev.memory_gb == 141 and dev.bandwidth_gb_s == 4800
    assert llm.accelerator.resolve(None) is None
    assert accelerator("h100") is ACCELERATORS["H100-SXM"]
    # the roofline ridge of the design note: ~295 FLOPs per byte on an H100 in bf16
    assert ACCELERATORS["H100-SXM"].ridge_tokens == pytest.approx(295.3, abs=0.1)


@pytest.mark.parametrize(
    ("body", "line", "col", "message"),
    [
        ("engine: {name: vllm}\nmodel: {preset: Llama-3.1-8C}\n" + WORKLOAD, 9, 25, "Llama-3.1-8B"),
        ("engine: {name: vllm}\nmodel: {layers: 2}\n" + WORKLOAD, 9, 16, "give a preset or the architecture"),
        (
            "engine: {name: vllm}\nmodel: {preset: Mistral-7B}\naccelerator: {type: B300}\n" + WORKLOAD,
            10,
            22,
            "unknown accelerator type 'B300'",
        ),
        (
            "engine: {name: vllm}\nmodel: {preset: Mistral-7B}\naccelerator: {type: L4, mig_profile: 1g.5gb}\n"
            + WORKLOAD,
            10,
            22,
            "L4 has no MIG profile",
        ),
        (
            "engine: {name: vllm}\nmodel: {preset: Mistral-7B}\nworkload:\n  prompt_tokens: {distribution: normal,"
            " mean_tokens: 5}\n  output_tokens: {mean_tokens: 5}\n",
            11,
            26,
            "needs std_tokens",
        ),
        (
            "engine: {name: vllm}\nmodel: {preset: Mistral-7B}\nworkload:\n  prompt_tokens: {distribution: "
            "empirical, cdf: [[10, 0.5], [5, 1.0]]}\n  output_tokens: {mean_tokens: 5}\n",
            11,
            26,
            "must rise",
        ),
        (
            "engine: {name: vllm}\nmodel: {preset: Mistral-7B}\n"
            + WORKLOAD
            + "  arrivals: {process: trace}\n",
            13,
            21,
            "trace_file",
        ),
    ],
)
def test_bad_llm_sections_are_located(body: str, line: int, col: int, message: str) -> None:
    res = _load(body)
    assert res.spec is None
    hits = [d for d in res.diagnostics if message in d.message]
    assert hits, [str(d) for d in res.diagnostics]
    assert (hits[0].line, hits[0].col) == (line, col)


def test_every_preset_is_consistent() -> None:
    for arch in MODEL_PRESETS.values():
        assert arch.attention_heads % arch.kv_heads == 0
        assert arch.source.startswith("sources.md M")
    for dev in ACCELERATORS.values():
        assert dev.source.startswith(("sources.md G", "sources.md C"))
