"""The analytic model of one LLM engine replica: memory, KV capacity, prefill and decode step time.

Standard formulas (docs/llm.md derives each one):
- KV bytes per token = 2 (K and V) x layers x KV heads x head dim x bytes; grouped-query attention
  stores KV heads, not attention heads; tensor parallelism splits the KV heads over GPUs, at
  least one per GPU (Llama-3.1-8B in bf16: 2 x 32 x 8 x 128 x 2 = 131,072 B);
- KV capacity = memory x utilisation - weights - activation/workspace reserve, in whole blocks,
  unless the engine fixes it (llama.cpp's --ctx-size) or a calibration measured it
  (`llm.engine.kv_capacity_tokens`); concurrency = capacity / (prompt + output tokens), or max_num_seqs, whichever binds;
- an iteration's time is the roofline max of its FLOPs over peak x MFU and its bytes (weights,
  KV read, KV written) over bandwidth x efficiency, plus a fixed overhead and, with tensor
  parallelism, two ring all-reduces per layer;
- prefill FLOPs = 2 x params x tokens + 2 x layers x tokens^2 x hidden (causal attention);
- speculative decoding emits (1 - a^(k+1)) / (1 - a) tokens per step (Leviathan et al. 2023).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from archkit.spec.llm import LlmStage
from archkit.spec.llm_catalogue import DTYPE_BYTES, AcceleratorSpec, ModelArch

GB = 1e9
# Bytes per weight of each quantisation (AWQ/GPTQ int4 with a 16-bit scale and zero per 128-group:
# 4 + 32/128 bits = 4.25 bits).
_QUANT_BYTES = {"fp8": 1.0, "int8": 1.0, "awq-int4": 4.25 / 8, "gptq-int4": 4.25 / 8}
# A ring all-reduce's fixed cost per collective (NCCL on NVLink: a few microseconds).
ALLREDUCE_LATENCY_S = 10e-6
# Fixed part of the activation reserve: CUDA context, CUDA graphs, NCCL buffers (vLLM's profile
# run logs ~0.5-1 GiB of non-torch memory on an H100).
_FIXED_RESERVE_BYTES = 0.75 * GB
# Peak activation bytes per scheduled token, in units of hidden x 2 bytes: the MLP's gate and up
# projections (2 x ~3.5 hidden) plus residual, norm and attention buffers (~6 hidden), rounded up.
_ACTIVATION_HIDDEN_MULT = 20


@dataclass(frozen=True)
class Replica:
    """One engine replica's figures, resolved from the spec: all the model needs, in SI units."""

    arch: ModelArch
    device: AcceleratorSpec
    tensor: int
    pipeline: int
    weight_bytes_per_param: float
    kv_bytes_per_elem: float
    gpu_memory_utilization: float
    activation_reserve_gb: float | None
    max_num_seqs: int
    max_num_batched_tokens: int
    block_size: int
    prefill_mfu: float
    decode_bandwidth: float
    step_overhead_s: float
    allreduce_efficiency: float
    spec_k: int = 0
    spec_acceptance: float = 0.0
    spec_draft_cost: float = 0.0
    chunked_prefill: bool = True
    prefix_caching: bool = True
    # the engine's KV cache in tokens when it is fixed (llama.cpp --ctx-size) or measured
    # (`archkit calibrate --llm-url`, llm.<stage>.kv_capacity.tokens); None: sized from memory
    kv_tokens_fixed: int | None = None
    # per request (llm.efficiency, measured by `archkit calibrate --llm-url`): engine time added to
    # the iteration that admits it, and time outside the engine added to its TTFT and end to end
    request_overhead_s: float = 0.0
    client_overhead_s: float = 0.0
    # per running sequence beyond the first in an iteration (llm.efficiency.sequence_overhead_ms)
    sequence_overhead_s: float = 0.0

    # ---- memory
    @property
    def gpus(self) -> int:
        return self.tensor * self.pipeline

    @property
    def kv_heads_per_gpu(self) -> int:
        """KV heads each GPU stores: split by tensor parallelism, at least one (replicated beyond)."""
        return max(1, math.ceil(self.arch.kv_heads / self.tensor))

    @property
    def kv_bytes_per_token(self) -> float:
        """KV bytes one token takes on the whole model (one GPU's share times the shards)."""
        return 2 * self.arch.layers * self.arch.kv_heads * self.arch.head_dim * self.kv_bytes_per_elem

    @property
    def kv_bytes_per_token_per_gpu(self) -> float:
        layers = math.ceil(self.arch.layers / self.pipeline)
        return 2 * layers * self.kv_heads_per_gpu * self.arch.head_dim * self.kv_bytes_per_elem

    @property
    def weight_bytes(self) -> float:
        return self.arch.parameters * self.weight_bytes_per_param

    @property
    def weight_bytes_per_gpu(self) -> float:
        return self.weight_bytes / self.gpus

    @property
    def usable_bytes_per_gpu(self) -> float:
        return self.device.memory_gb * GB * self.gpu_memory_utilization

    @property
    def reserve_bytes_per_gpu(self) -> float:
        """Activation and workspace memory per GPU: given, or estimated from the token budget."""
        if self.activation_reserve_gb is not None:
            return self.activation_reserve_gb * GB
        act = self.max_num_batched_tokens * self.arch.hidden_size * 2 * _ACTIVATION_HIDDEN_MULT / self.tensor
        logits = self.max_num_seqs * max(self.arch.vocab_size, 1) * 4  # fp32 logits for the sampler
        return _FIXED_RESERVE_BYTES + act + logits

    @property
    def kv_capacity_bytes_per_gpu(self) -> float:
        """KV bytes per GPU: what memory leaves after weights and reserve, or the fixed cache's size."""
        if self.kv_tokens_fixed is not None:
            return self.kv_tokens_fixed * self.kv_bytes_per_token_per_gpu
        return self.usable_bytes_per_gpu - self.weight_bytes_per_gpu - self.reserve_bytes_per_gpu

    @property
    def kv_source(self) -> str:
        """Where the KV capacity comes from: 'engine' (declared or calibrated tokens) or 'memory' (derived)."""
        return "memory" if self.kv_tokens_fixed is None else "engine"

    @property
    def kv_blocks(self) -> int:
        """Whole KV blocks the cache holds (0 when the weights leave no room)."""
        if self.kv_tokens_fixed is not None:
            return self.kv_tokens_fixed // self.block_size
        per_block = self.kv_bytes_per_token_per_gpu * self.block_size
        return max(0, int(self.kv_capacity_bytes_per_gpu // per_block))

    @property
    def kv_tokens(self) -> int:
        return self.kv_blocks * self.block_size

    def blocks_for(self, tokens: int) -> int:
        return -(-tokens // self.block_size)

    def max_concurrency(self, tokens_per_sequence: int) -> tuple[int, str]:
        """Sequences of `tokens_per_sequence` held at once, and what binds: 'kv' or 'max_num_seqs'."""
        by_kv = self.kv_blocks // max(1, self.blocks_for(tokens_per_sequence))
        if by_kv < self.max_num_seqs:
            return by_kv, "kv"
        return self.max_num_seqs, "max_num_seqs"

    # ---- time
    @property
    def peak_flops(self) -> float:
        """Dense FLOPS of one tensor-parallel shard; FP8 weights use the FP8 tensor path where it exists."""
        per_gpu = self.device.bf16_tflops
        if self.weight_bytes_per_param <= 1.0 and self.device.fp8_tflops:
            per_gpu = self.device.fp8_tflops
        return per_gpu * 1e12 * self.tensor

    @property
    def bandwidth(self) -> float:
        """Bytes per second one shard reads (all its tensor-parallel GPUs)."""
        return self.device.bandwidth_gb_s * GB * self.tensor

    def allreduce_s(self, tokens: int) -> float:
        """Two ring all-reduces per layer of `tokens` x hidden activations (16-bit) over the TP group."""
        if self.tensor == 1:
            return 0.0
        n = self.tensor
        msg = tokens * self.arch.hidden_size * 2
        link = self.device.interconnect_gb_s * GB * self.allreduce_efficiency
        per = 2 * (n - 1) / n * msg / link + ALLREDUCE_LATENCY_S if link > 0 else ALLREDUCE_LATENCY_S
        return 2 * self.arch.layers * per

    def iteration_s(self, tokens: int, attn_flops: float, kv_read_tokens: float, sequences: int = 1) -> float:
        """Time of one engine iteration that computes `tokens` tokens of `sequences` sequences.

        `attn_flops`: the attention FLOPs of the batch (4 x layers x hidden per token per context
        token); `kv_read_tokens`: context tokens whose KV is read (summed over sequences); each
        sequence beyond the first adds `sequence_overhead_s`.
        """
        flops = 2 * self.arch.parameters * tokens + attn_flops
        nbytes = self.weight_bytes + (kv_read_tokens + tokens) * self.kv_bytes_per_token
        compute = flops / (self.peak_flops * self.prefill_mfu)
        memory = nbytes / (self.bandwidth * self.decode_bandwidth)
        extra = self.sequence_overhead_s * max(sequences - 1, 0)
        return max(compute, memory) + self.step_overhead_s + self.allreduce_s(tokens) + extra

    def attn_flops(self, new_tokens: int, context_before: int) -> float:
        """Attention FLOPs of `new_tokens` appended after `context_before` (QK^T and AV, causal)."""
        c, s = new_tokens, context_before
        return 2.0 * self.arch.layers * self.arch.hidden_size * c * (2 * s + c)

    def prefill_flops(self, prompt: int) -> float:
        """2 x params x prompt + 2 x layers x prompt^2 x hidden."""
        return 2 * self.arch.parameters * prompt + self.attn_flops(prompt, 0)

    def prefill_s(self, prompt: int) -> float:
        """One prompt prefilled alone, in chunks of the token budget."""
        t, done = 0.0, 0
        while done < prompt:
            c = min(self.max_num_batched_tokens, prompt - done)
            t += self.iteration_s(c, self.attn_flops(c, done), done)
            done += c
        return t

    def first_token_s(self, prompt: int) -> float:
        """TTFT of one prompt alone: its prefill, the engine's per-request set-up and the time
        outside the engine (client, HTTP, tokenisation), which no batching shares."""
        return self.prefill_s(prompt) + self.request_overhead_s + self.client_overhead_s

    def decode_step_s(self, batch: int, context: int) -> float:
        """One decode iteration of `batch` sequences each holding `context` tokens."""
        tokens = batch * self.tokens_verified
        return self.iteration_s(
            tokens, batch * self.attn_flops(self.tokens_verified, context), batch * context, batch
        ) * (1 + self.spec_k * self.spec_draft_cost)

    def decode_lower_bound_s(self) -> float:
        """The floor of any decode step: every weight byte read once at peak bandwidth."""
        return self.weight_bytes / self.bandwidth

    @property
    def crossover_batch(self) -> float:
        """Batch at which a decode step turns compute-bound (weights only): peak x MFU x bytes/param / (2 x bw x eff)."""
        return (self.peak_flops * self.prefill_mfu * self.weight_bytes_per_param) / (
            2 * self.bandwidth * self.decode_bandwidth
        )

    # ---- speculative decoding
    @property
    def tokens_verified(self) -> int:
        """Tokens the target model computes per sequence per decode step (k drafted + 1)."""
        return self.spec_k + 1

    @property
    def tokens_per_step(self) -> float:
        """Expected tokens emitted per sequence per decode step: (1 - a^(k+1)) / (1 - a)."""
        if self.spec_k == 0:
            return 1.0
        a = self.spec_acceptance
        return (1 - a ** (self.spec_k + 1)) / (1 - a)


def replica(llm: LlmStage, device: AcceleratorSpec) -> Replica:
    """The analytic replica of an LLM stage on a resolved device."""
    model, eng, eff = llm.model, llm.engine, llm.efficiency
    wdt = DTYPE_BYTES[model.weight_dtype]
    wbytes = wdt if model.quantization == "none" else _QUANT_BYTES.get(model.quantization, 0.0)
    if not wbytes:
        wbytes = DTYPE_BYTES[model.quantization]
    act_bytes = 4.0 if model.weight_dtype == "fp32" else 2.0
    kvb = act_bytes if eng.kv_cache_dtype == "auto" else DTYPE_BYTES[eng.kv_cache_dtype]
    spec = eng.speculative
    return Replica(
        arch=model.architecture(),
        device=device,
        tensor=llm.parallelism.tensor,
        pipeline=llm.parallelism.pipeline,
        weight_bytes_per_param=wbytes,
        kv_bytes_per_elem=kvb,
        gpu_memory_utilization=eng.gpu_memory_utilization,
        activation_reserve_gb=eng.activation_reserve_gb,
        max_num_seqs=eng.max_num_seqs,
        max_num_batched_tokens=eng.max_num_batched_tokens,
        block_size=eng.block_size_tokens,
        prefill_mfu=eff.prefill_mfu,
        decode_bandwidth=eff.decode_bandwidth,
        step_overhead_s=eff.step_overhead_ms / 1000,
        allreduce_efficiency=eff.allreduce_efficiency,
        spec_k=spec.draft_tokens if spec else 0,
        spec_acceptance=spec.acceptance_rate if spec else 0.0,
        spec_draft_cost=spec.draft_cost_ratio if spec else 0.0,
        chunked_prefill=eng.chunked_prefill,
        prefix_caching=eng.prefix_caching,
        kv_tokens_fixed=eng.kv_capacity_tokens,
        request_overhead_s=eff.request_overhead_ms / 1000,
        client_overhead_s=eff.client_overhead_ms / 1000,
        sequence_overhead_s=eff.sequence_overhead_ms / 1000,
    )
