"""The `llm` section of a stage: an LLM served by a continuous-batching engine.

An LLM request has a prompt and an output length; the engine runs one compute-bound prefill and
then one memory-bandwidth-bound decode iteration per output token, batching sequences at the
iteration level while a KV cache holds every running sequence (docs/llm.md). The section names
the engine and its scheduler settings, the model (a preset or its architecture), the
accelerator (a catalogue entry in `archkit.spec.llm_catalogue`, any figure overridable), the
parallelism, the workload and the token-level budgets (TTFT, ITL, TPOT, SLO attainment).
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Literal

from pydantic import Field, model_validator

from archkit.spec.llm_catalogue import ACCELERATORS, MODEL_PRESETS, AcceleratorSpec, ModelArch, accelerator
from archkit.spec.model import Fraction, Ms, Node, Rps

MAX_TOKENS = 10_000_000  # 10 M tokens: beyond the longest context any served model offers (Llama 4: 10 M)
Tokens = Annotated[int, Field(ge=1, le=MAX_TOKENS, description="tokens, at most 10,000,000")]
Tflops = Annotated[float, Field(gt=0, le=100_000, description="dense TFLOPS, at most 100,000")]


class LlmEngineName(str, Enum):
    """The serving engines archkit models (each has an engine adapter for its metric names)."""

    vllm = "vllm"
    sglang = "sglang"
    tensorrt_llm = "tensorrt-llm"
    tgi = "tgi"
    llamacpp = "llama.cpp"


class Speculative(Node):
    """Speculative decoding: a drafter proposes `draft_tokens`, the model verifies them in one step."""

    draft_tokens: Annotated[int, Field(ge=1, le=16)] = Field(
        description="tokens proposed per step (vLLM `num_speculative_tokens`), 1 to 16"
    )
    acceptance_rate: Annotated[float, Field(gt=0, lt=1)] = Field(
        description="probability that each drafted token is accepted (i.i.d., Leviathan et al. 2023)"
    )
    draft_cost_ratio: Annotated[float, Field(ge=0, le=1)] = Field(
        0.05,
        description="one draft step's time as a share of one target decode step (an n-gram drafter: ~0; "
        "a small draft model: its size ratio)",
    )


class LlmEngine(Node):
    """The engine and the scheduler settings that decide its capacity."""

    name: LlmEngineName
    version: str | None = Field(None, description="engine version: picks the metric names (vLLM V1 renames)")
    max_num_seqs: Annotated[int, Field(ge=1, le=65_536)] = Field(
        256, description="running sequences at most per replica (vLLM `max_num_seqs`, default 256)"
    )
    max_num_batched_tokens: Annotated[int, Field(ge=1, le=1_048_576)] = Field(
        8192,
        description="tokens scheduled per iteration at most, prefill chunks and decodes together "
        "(vLLM V1's default on GPUs with 70 GiB or more: 8192)",
    )
    chunked_prefill: bool = Field(
        True, description="split long prompts over iterations and mix them with decodes (vLLM V1: always)"
    )
    block_size_tokens: Annotated[int, Field(ge=1, le=1024)] = Field(
        16, description="tokens per KV-cache block (vLLM default 16; SGLang pages of 1)"
    )
    gpu_memory_utilization: Annotated[float, Field(gt=0, le=1)] = Field(
        0.9,
        description="share of device memory the engine may take for weights, activations and KV (vLLM 0.9)",
    )
    activation_reserve_gb: Annotated[float, Field(ge=0, le=4096)] | None = Field(
        None,
        description="activation and workspace memory set aside per GPU; unset: estimated from the token "
        "budget and the model (archkit.perf.llm.memory)",
    )
    prefix_caching: bool = Field(
        True, description="reuse KV blocks of identical prompt prefixes (vLLM V1 default)"
    )
    kv_cache_dtype: Literal["auto", "bf16", "fp16", "fp8", "int8", "q8_0", "q4_0"] = Field(
        "auto", description="KV-cache element type; auto: the model's activation dtype (bf16 or fp16)"
    )
    kv_capacity_tokens: Tokens | None = Field(
        None,
        description="the engine's whole KV cache per replica, in tokens, where the engine fixes it rather "
        "than sizing it from free memory (llama.cpp: --ctx-size); `archkit calibrate --llm-url` measures "
        "it (llama.cpp /slots, vLLM cache_config_info) and a calibration replaces it; unset: derived from "
        "memory (docs/llm.md)",
    )
    speculative: Speculative | None = None


class LlmModel(Node):
    """The served model: a preset, or its architecture (a preset's figures can be overridden one by one)."""

    preset: Literal[tuple(MODEL_PRESETS)] | None = Field(  # type: ignore[valid-type]
        None, description="a published architecture (sources.md M1-M6)"
    )
    name: str | None = Field(
        None, description="the served model name (e.g. meta-llama/Llama-3.1-8B-Instruct)"
    )
    parameters: Annotated[float, Field(gt=0, le=1e13)] | None = Field(None, description="total parameters")
    layers: Annotated[int, Field(ge=1, le=1024)] | None = None
    hidden_size: Annotated[int, Field(ge=1, le=1_000_000)] | None = None
    attention_heads: Annotated[int, Field(ge=1, le=4096)] | None = None
    kv_heads: Annotated[int, Field(ge=1, le=4096)] | None = Field(
        None, description="key/value heads (grouped-query attention: fewer than attention_heads)"
    )
    head_dim: Annotated[int, Field(ge=1, le=4096)] | None = Field(
        None, description="default hidden_size / heads"
    )
    max_context_tokens: Tokens | None = None
    weight_dtype: Literal["fp32", "bf16", "fp16"] = Field("bf16", description="dtype of unquantised weights")
    quantization: Literal[
        "none", "fp8", "int8", "awq-int4", "gptq-int4", "q8_0", "q4_0", "q4_1", "q4_k_m"
    ] = Field("none", description="weight quantisation: sets bytes per weight (GGUF types for llama.cpp)")

    @model_validator(mode="after")
    def _complete(self) -> LlmModel:
        if self.preset is None:
            missing = [
                k for k in ("parameters", "layers", "hidden_size", "attention_heads", "max_context_tokens")
                if getattr(self, k) is None
            ]  # fmt: skip
            if missing:
                raise ValueError(f"give a preset or the architecture; missing: {', '.join(missing)}")
        arch = self.architecture()
        if arch.attention_heads % arch.kv_heads:
            raise ValueError(
                f"attention_heads {arch.attention_heads} is not a multiple of kv_heads {arch.kv_heads}"
            )
        return self

    def architecture(self) -> ModelArch:
        """The preset's figures with every given field replacing its own."""
        base = MODEL_PRESETS[self.preset] if self.preset else None
        heads = self.attention_heads or (base.attention_heads if base else 1)
        hidden = self.hidden_size or (base.hidden_size if base else heads)
        head_dim = self.head_dim or (base.head_dim if base and not self.hidden_size else hidden // heads)
        return ModelArch(
            name=self.name or (base.name if base else "custom"),
            parameters=self.parameters or (base.parameters if base else 0.0),
            layers=self.layers or (base.layers if base else 1),
            hidden_size=hidden,
            attention_heads=heads,
            kv_heads=self.kv_heads or (base.kv_heads if base and not self.attention_heads else heads),
            head_dim=head_dim,
            max_context_tokens=self.max_context_tokens or (base.max_context_tokens if base else 1),
            vocab_size=base.vocab_size if base else 0,
            source=base.source if base else "the spec",
        )


class Accelerator(Node):
    """The device one engine shard runs on: a catalogue entry, any figure overridden."""

    type: str | None = Field(
        None,
        description="a catalogue name (H100-SXM, H200, A100-80GB, A100-40GB, L40S, L4, A10G, T4, EPYC-9654, "
        "Xeon-8480, EPYC-2vCPU-AVX2); unset: the stage's service's node-pool gpu.model",
    )
    mig_profile: str | None = Field(None, description="a MIG profile of that GPU, e.g. 3g.40gb")
    memory_gb: Annotated[float, Field(gt=0, le=4096)] | None = None
    bandwidth_gb_s: Annotated[float, Field(gt=0, le=100_000)] | None = Field(
        None, description="memory bandwidth"
    )
    bf16_tflops: Tflops | None = Field(None, description="dense BF16 tensor throughput")
    fp8_tflops: Tflops | None = Field(None, description="dense FP8 tensor throughput")
    interconnect_gb_s: Annotated[float, Field(gt=0, le=100_000)] | None = Field(
        None, description="GPU-to-GPU bandwidth per device, one direction (NVLink, PCIe)"
    )

    @model_validator(mode="after")
    def _known(self) -> Accelerator:
        if self.type is None or accelerator(self.type) is not None:
            pass
        elif None in (self.memory_gb, self.bandwidth_gb_s, self.bf16_tflops):
            raise ValueError(
                f"unknown accelerator type {self.type!r} (known: {', '.join(ACCELERATORS)}); "
                "a type outside the catalogue needs memory_gb, bandwidth_gb_s and bf16_tflops"
            )
        base = accelerator(self.type) if self.type else None
        if self.mig_profile is not None and base is not None and base.mig(self.mig_profile) is None:
            known = ", ".join(p.name for p in base.mig_profiles) or "none"
            raise ValueError(f"{base.name} has no MIG profile {self.mig_profile!r} (known: {known})")
        return self

    def resolve(self, default_type: str | None) -> AcceleratorSpec | None:
        """The device's figures: the catalogue entry (or `default_type`'s) with overrides and MIG applied."""
        name = self.type or default_type
        base = accelerator(name) if name else None
        if base is None and None in (self.memory_gb, self.bandwidth_gb_s, self.bf16_tflops):
            return None
        mig = base.mig(self.mig_profile) if base and self.mig_profile else None
        cf, bf = (mig.compute_fraction, mig.bandwidth_fraction) if mig else (1.0, 1.0)
        return AcceleratorSpec(
            name=(base.name if base else name or "custom") + (f" {mig.name}" if mig else ""),
            kind=base.kind if base else "gpu",
            memory_gb=self.memory_gb or (mig.memory_gb if mig else base.memory_gb if base else 0.0),
            bandwidth_gb_s=self.bandwidth_gb_s or (base.bandwidth_gb_s * bf if base else 0.0),
            bf16_tflops=self.bf16_tflops or (base.bf16_tflops * cf if base else 0.0),
            fp8_tflops=self.fp8_tflops or (base.fp8_tflops * cf if base and base.fp8_tflops else None),
            interconnect_gb_s=self.interconnect_gb_s or (base.interconnect_gb_s if base else 0.0),
            source=base.source if base else "the spec",
        )


class LlmParallelism(Node):
    """How one model is split over devices, and how many copies serve."""

    tensor: Annotated[int, Field(ge=1, le=64)] = Field(1, description="tensor-parallel size (GPUs per shard)")
    pipeline: Annotated[int, Field(ge=1, le=64)] = Field(1, description="pipeline-parallel stages")
    replicas: Annotated[int, Field(ge=1, le=5000)] | None = Field(
        None, description="engine replicas behind the load balancer; unset: the stage's service's replicas"
    )


class TokenLengths(Node):
    """A distribution of token counts per request: fixed, uniform, normal, lognormal or an empirical CDF."""

    distribution: Literal["fixed", "uniform", "normal", "lognormal", "empirical"] = "fixed"
    mean_tokens: Annotated[float, Field(gt=0, le=MAX_TOKENS)] | None = Field(
        None, description="fixed: the value; normal and lognormal: the mean"
    )
    std_tokens: Annotated[float, Field(ge=0, le=MAX_TOKENS)] | None = Field(
        None, description="normal and lognormal: the standard deviation"
    )
    min_tokens: Tokens = Field(1, description="lower bound: uniform's, and a clip for the others")
    max_tokens: Tokens | None = Field(None, description="upper bound: uniform's, and a clip for the others")
    cdf: list[tuple[Tokens, Fraction]] = Field(
        default_factory=list,
        max_length=10_000,
        description="empirical: [tokens, cumulative probability] pairs",
    )
    cdf_file: str | None = Field(
        None,
        description="empirical: a CSV of `tokens,cumulative_probability` rows (path relative to the spec)",
    )

    @model_validator(mode="after")
    def _parameters(self) -> TokenLengths:
        d = self.distribution
        if d in ("fixed", "normal", "lognormal") and self.mean_tokens is None:
            raise ValueError(f"a {d} distribution needs mean_tokens")
        if d in ("normal", "lognormal") and self.std_tokens is None:
            raise ValueError(f"a {d} distribution needs std_tokens")
        if d == "uniform" and self.max_tokens is None:
            raise ValueError("a uniform distribution needs max_tokens")
        if self.max_tokens is not None and self.max_tokens < self.min_tokens:
            raise ValueError(f"max_tokens {self.max_tokens} is below min_tokens {self.min_tokens}")
        if d == "empirical":
            if bool(self.cdf) == bool(self.cdf_file):
                raise ValueError("an empirical distribution needs one of cdf or cdf_file")
            pairs = self.cdf
            if any(b[0] < a[0] or b[1] < a[1] for a, b in zip(pairs, pairs[1:], strict=False)):
                raise ValueError("cdf points must rise in tokens and in probability")
            if pairs and pairs[-1][1] != 1:
                raise ValueError("the last cdf point must have probability 1")
        return self


class SharedPrefix(Node):
    """Requests that start with one of a few shared prefixes (a system prompt, a few-shot block)."""

    groups: Annotated[int, Field(ge=1, le=1_000_000)] = Field(1, description="distinct shared prefixes")
    tokens: Tokens = Field(description="length of each shared prefix (part of the prompt)")
    share: Fraction = Field(1.0, description="share of requests that start with one of them")


class MultiTurn(Node):
    """Conversations: each turn's prompt carries the previous turns' prompts and answers."""

    turns: Annotated[int, Field(ge=1, le=1000)] = Field(description="turns per conversation")
    think_time_s: Annotated[float, Field(ge=0, le=86_400)] = Field(
        10.0, description="time between an answer and the next turn's request"
    )


class Arrivals(Node):
    """How requests arrive: Poisson, gamma with a burstiness factor, or a recorded trace."""

    process: Literal["poisson", "gamma", "trace"] = "poisson"
    rate_rps: Rps | None = Field(
        None,
        description="requests per second; unset: budgets.throughput_rps times the stage's items_per_request",
    )
    burstiness: Annotated[float, Field(gt=0, le=100)] = Field(
        1.0,
        description="gamma: the shape of the inter-arrival gamma distribution as vLLM's benchmark defines "
        "it (1 = Poisson, below 1 burstier; squared CV = 1 / burstiness)",
    )
    trace_file: str | None = Field(
        None,
        description="trace: a CSV of `arrival_s[,prompt_tokens,output_tokens]` rows (path relative to the spec)",
    )

    @model_validator(mode="after")
    def _trace(self) -> Arrivals:
        if (self.process == "trace") != (self.trace_file is not None):
            raise ValueError("trace_file is given exactly when process is trace")
        return self


class LlmWorkload(Node):
    """What the engine is asked: prompt and output lengths, shared prefixes, turns and arrivals."""

    prompt_tokens: TokenLengths
    output_tokens: TokenLengths
    shared_prefix: SharedPrefix | None = None
    multi_turn: MultiTurn | None = None
    streaming: bool = Field(True, description="tokens are streamed (TTFT and ITL are what users see)")
    arrivals: Arrivals = Field(default_factory=Arrivals)
    max_concurrency: Annotated[int, Field(ge=1, le=10_000_000)] | None = Field(
        None, description="sequences the service must hold at once (e.g. open chat sessions generating)"
    )


class LlmBudgets(Node):
    """Token-level objectives: time to first token, inter-token latency, time per output token."""

    ttft_p50_ms: Ms | None = Field(None, description="time to first non-empty token, median")
    ttft_p99_ms: Ms | None = None
    itl_p50_ms: Ms | None = Field(None, description="inter-token latency over all tokens, median")
    itl_p99_ms: Ms | None = None
    tpot_ms: Ms | None = Field(
        None,
        description="time per output token of a request ((e2e - TTFT) / (tokens - 1)), P99 over requests",
    )
    e2e_p50_ms: Ms | None = None
    e2e_p99_ms: Ms | None = None
    user_ttft_p99_ms: Ms | None = Field(
        None,
        description="first token as the user sees it, from the request entering the service: the P99 budgets "
        "of the stages before this one (retrieval) plus this stage's TTFT",
    )
    output_tokens_per_s: Annotated[float, Field(gt=0, le=1e9)] | None = Field(
        None, description="output tokens per second the service must sustain"
    )
    slo_attainment: Fraction | None = Field(
        None,
        description="share of requests meeting the TTFT and TPOT objectives together (slo_ttft_ms, slo_tpot_ms)",
    )
    slo_ttft_ms: Ms | None = Field(
        None, description="a request's TTFT objective for attainment; default ttft_p99_ms"
    )
    slo_tpot_ms: Ms | None = Field(
        None, description="a request's TPOT objective for attainment; default tpot_ms"
    )


class LlmEfficiency(Node):
    """Achieved shares of peak hardware figures; cited defaults until a calibration replaces them."""

    prefill_mfu: Annotated[float, Field(gt=0, le=1)] = Field(
        0.5, description="prefill's share of peak dense FLOPS (sources.md E1)"
    )
    decode_bandwidth: Annotated[float, Field(gt=0, le=1)] = Field(
        0.8, description="decode's share of peak memory bandwidth (sources.md E2)"
    )
    step_overhead_ms: Ms = Field(
        2.0,
        description="fixed time per engine iteration: scheduling, sampling, kernel launches (sources.md E3)",
    )
    allreduce_efficiency: Annotated[float, Field(gt=0, le=1)] = Field(
        0.7,
        description="share of interconnect bandwidth a tensor-parallel all-reduce achieves (sources.md E4)",
    )
    request_overhead_ms: Ms = Field(
        0.0,
        description=(
            "engine time per admitted request, added to the iteration that admits it: slot selection, "
            "prompt-cache trim, sampler set-up (llama.cpp); measured by `archkit calibrate --llm-url`"
        ),
    )
    sequence_overhead_ms: Ms = Field(
        0.0,
        description=(
            "engine time per running sequence beyond the first in an iteration, over the roofline's "
            "share of it: per-sequence matrix-vector work, sampling and batch bookkeeping (llama.cpp on "
            "a CPU core: 13 ms for the second sequence against the roofline's 1.2); measured by "
            "`archkit calibrate --llm-url`"
        ),
    )
    client_overhead_ms: Ms = Field(
        0.0,
        description=(
            "time per request between the client and the engine that holds no engine: HTTP, chat "
            "template, tokenisation, the first SSE write; adds to TTFT and end to end; measured by "
            "`archkit calibrate --llm-url`"
        ),
    )


class LlmStage(Node):
    """An LLM served by a continuous-batching engine: engine, model, devices, workload and token budgets."""

    engine: LlmEngine
    model: LlmModel
    accelerator: Accelerator = Field(default_factory=Accelerator)
    parallelism: LlmParallelism = Field(default_factory=LlmParallelism)
    workload: LlmWorkload
    budgets: LlmBudgets = Field(default_factory=LlmBudgets)
    efficiency: LlmEfficiency = Field(default_factory=LlmEfficiency)


__all__ = [
    "Accelerator",
    "Arrivals",
    "LlmBudgets",
    "LlmEfficiency",
    "LlmEngine",
    "LlmEngineName",
    "LlmModel",
    "LlmParallelism",
    "LlmStage",
    "LlmWorkload",
    "MultiTurn",
    "SharedPrefix",
    "Speculative",
    "TokenLengths",
]
