"""Published figures of accelerators and LLM architectures that LLM stages name by key.

Every figure cites a row of docs/sources.md ("sources.md G3" is row G3 of its "LLM serving:
hardware" table, "sources.md M2" row M2 of its "LLM serving: models" table). A spec may override
any figure (`llm.accelerator`, `llm.model`); these are the defaults a name stands for.
Dense tensor throughput is quoted without structured sparsity (vendors' headline figures
with sparsity are twice these).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class MigProfile:
    """One MIG profile: its compute slices out of 7 and memory slices out of 8 (NVIDIA MIG user guide)."""

    name: str
    compute_slices: int  # of 7
    memory_slices: int  # of 8
    memory_gb: float

    @property
    def compute_fraction(self) -> float:
        return self.compute_slices / 7

    @property
    def bandwidth_fraction(self) -> float:
        # memory bandwidth follows the memory slices (each slice owns its share of the memory controllers)
        return self.memory_slices / 8


@dataclass(frozen=True)
class AcceleratorSpec:
    """An accelerator's memory, bandwidth and dense tensor throughput (one device)."""

    name: str
    kind: str  # "gpu" or "cpu"
    memory_gb: float  # usable device memory, GB (10^9 bytes)
    bandwidth_gb_s: float  # peak memory bandwidth, GB/s
    bf16_tflops: float  # dense BF16 (or FP16 where BF16 is missing) tensor throughput
    fp8_tflops: float | None  # dense FP8; None where the hardware has no FP8 tensor path
    interconnect_gb_s: float  # per-device GPU-to-GPU bandwidth, one direction (NVLink or PCIe)
    source: str  # the docs/sources.md row
    mig_profiles: tuple[MigProfile, ...] = field(default=())

    @property
    def ridge_tokens(self) -> float:
        """FLOPs per byte at the roofline's ridge: the batch at which a bf16 decode step turns compute-bound."""
        return self.bf16_tflops * 1e12 / (self.bandwidth_gb_s * 1e9)

    def mig(self, name: str) -> MigProfile | None:
        return next((p for p in self.mig_profiles if p.name == name), None)


def _mig(*rows: tuple[str, int, int, float]) -> tuple[MigProfile, ...]:
    return tuple(MigProfile(*row) for row in rows)


# NVIDIA MIG user guide, "Supported MIG Profiles" (sources.md G10): names, slices and instance sizes.
_MIG_80 = _mig(
    ("1g.10gb", 1, 1, 10), ("1g.20gb", 1, 2, 20), ("2g.20gb", 2, 2, 20),
    ("3g.40gb", 3, 4, 40), ("4g.40gb", 4, 4, 40), ("7g.80gb", 7, 8, 80),
)  # fmt: skip
_MIG_40 = _mig(
    ("1g.5gb", 1, 1, 5), ("1g.10gb", 1, 2, 10), ("2g.10gb", 2, 2, 10),
    ("3g.20gb", 3, 4, 20), ("4g.20gb", 4, 4, 20), ("7g.40gb", 7, 8, 40),
)  # fmt: skip
_MIG_141 = _mig(
    ("1g.18gb", 1, 1, 18), ("1g.35gb", 1, 2, 35), ("2g.35gb", 2, 2, 35),
    ("3g.71gb", 3, 4, 71), ("4g.71gb", 4, 4, 71), ("7g.141gb", 7, 8, 141),
)  # fmt: skip

ACCELERATORS: dict[str, AcceleratorSpec] = {
    a.name: a
    for a in (
        AcceleratorSpec("H100-SXM", "gpu", 80, 3350, 989.4, 1978.9, 450, "sources.md G1", _MIG_80),
        AcceleratorSpec("H200", "gpu", 141, 4800, 989.4, 1978.9, 450, "sources.md G2", _MIG_141),
        AcceleratorSpec("A100-80GB", "gpu", 80, 2039, 312, None, 300, "sources.md G3", _MIG_80),
        AcceleratorSpec("A100-40GB", "gpu", 40, 1555, 312, None, 300, "sources.md G4", _MIG_40),
        AcceleratorSpec("L40S", "gpu", 48, 864, 362.05, 733, 32, "sources.md G5"),
        AcceleratorSpec("L4", "gpu", 24, 300, 121, 242.5, 32, "sources.md G6"),
        AcceleratorSpec("A10G", "gpu", 24, 600, 70, None, 32, "sources.md G7"),
        # no BF16 on Turing: the FP16 tensor figure stands in (weights served as fp16)
        AcceleratorSpec("T4", "gpu", 16, 320, 65, None, 16, "sources.md G8"),
        AcceleratorSpec("EPYC-9654", "cpu", 768, 460.8, 14.7, None, 0, "sources.md C1"),
        AcceleratorSpec("Xeon-8480", "cpu", 512, 307.2, 114.7, None, 0, "sources.md C2"),
        AcceleratorSpec("EPYC-2vCPU-AVX2", "cpu", 23, 13, 0.144, None, 0, "sources.md C3"),
    )
}

# Other spellings of the same device seen in node-pool `gpu.model` fields and cloud instance names.
ALIASES: dict[str, str] = {
    "h100": "H100-SXM", "h100-sxm5": "H100-SXM", "h100-80gb": "H100-SXM", "nvidia-h100-80gb-hbm3": "H100-SXM",
    "h200-sxm": "H200", "h200-141gb": "H200", "nvidia-h200": "H200",
    "a100": "A100-80GB", "a100-sxm4-80gb": "A100-80GB", "a100-sxm4-40gb": "A100-40GB",
    "nvidia-l40s": "L40S", "nvidia-l4": "L4", "nvidia-a10g": "A10G", "tesla-t4": "T4", "nvidia-t4": "T4",
}  # fmt: skip


def accelerator(name: str) -> AcceleratorSpec | None:
    """The catalogue entry for `name` (case-insensitive, common aliases accepted), or None."""
    if name in ACCELERATORS:
        return ACCELERATORS[name]
    key = name.strip().lower().replace(" ", "-").replace("_", "-")
    for known in ACCELERATORS:
        if known.lower() == key:
            return ACCELERATORS[known]
    alias = ALIASES.get(key)
    return ACCELERATORS[alias] if alias else None


@dataclass(frozen=True)
class ModelArch:
    """A decoder-only transformer's shape: what KV-cache memory and step time follow from."""

    name: str
    parameters: float  # total parameters
    layers: int
    hidden_size: int
    attention_heads: int
    kv_heads: int
    head_dim: int
    max_context_tokens: int
    vocab_size: int = 0
    source: str = ""


MODEL_PRESETS: dict[str, ModelArch] = {
    m.name: m
    for m in (
        ModelArch("Llama-3.1-8B", 8.03e9, 32, 4096, 32, 8, 128, 131_072, 128_256, "sources.md M1"),
        ModelArch("Llama-3.1-70B", 70.6e9, 80, 8192, 64, 8, 128, 131_072, 128_256, "sources.md M2"),
        ModelArch("Qwen2.5-7B", 7.62e9, 28, 3584, 28, 4, 128, 32_768, 152_064, "sources.md M3"),
        ModelArch("Mistral-7B", 7.25e9, 32, 4096, 32, 8, 128, 32_768, 32_768, "sources.md M4"),
        ModelArch("SmolLM2-135M", 134.5e6, 30, 576, 9, 3, 64, 8_192, 49_152, "sources.md M5"),
        ModelArch("Llama-2-7B", 6.74e9, 32, 4096, 32, 32, 128, 4_096, 32_000, "sources.md M6"),
    )
}

# Bytes per stored value of each weight or KV-cache dtype; the GGUF block formats include their
# per-block scales (q8_0: 34 bytes per 32 weights, q4_0: 18, q4_1: 20, q4_K_M ~4.85 bits).
DTYPE_BYTES: dict[str, float] = {
    "fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5,
    "q8_0": 34 / 32, "q4_0": 18 / 32, "q4_1": 20 / 32, "q4_k_m": 4.85 / 8,
}  # fmt: skip
