"""Service settings: ports, input caps, concurrency, Triton batching and queue policy."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass


@dataclass(frozen=True)
class ModelSettings:
    """Triton dynamic batching, instances and bounded queue for one model."""

    name: str
    max_batch_size: int
    preferred_batch_sizes: tuple[int, ...]
    max_queue_delay_us: int
    instances: int
    max_queue_size: int
    queue_timeout_us: int


@dataclass(frozen=True)
class Profile:
    """Batching and instances for one kind of hardware, plus how the gateway chunks crops."""

    name: str
    detector: ModelSettings
    recogniser: ModelSettings
    rec_request_crops: int  # line crops per recogniser request sent by the gateway
    # Inference runtimes to try in order (runtimes.py); $OCR_BACKEND overrides.
    backends: tuple[str, ...] = ("onnxruntime",)


# The queue bound is the fast refusal; the 15 s queue timeout only catches requests stuck
# behind a CPU starved by neighbours (5 s expired under load average 5 on 2 cores).
_QUEUE_TIMEOUT_US = 15_000_000

# cpu (measured, MEASUREMENTS.md): on 2 cores a recogniser batch costs more per crop than
# single crops (width 960: 98 ms/crop alone, 114 at 4, 175 at 8). Service CPU per page with
# (max batch, crops per request) = (2, 2): 0.94 s; (4, 4): 0.99 s; (4, 1): 1.05 s; (8, 8):
# 1.06 s; in-process RapidOCR: 1.06 s. So pairs of crops, no queue delay, and 2 instances so
# one page's lines use both cores. The detector gains nothing from batching here either
# (204 / 420 / 886 ms for 1 / 2 / 4 pages) and `archkit check` (AK203) predicted a P99 over
# budget at batch 4 with a 2 ms delay: it merges at most 2 pages already queued, never waits.
CPU = Profile(
    "cpu",
    ModelSettings(
        "ocr_detector",
        max_batch_size=2,
        preferred_batch_sizes=(2,),
        max_queue_delay_us=0,
        instances=1,
        max_queue_size=16,
        queue_timeout_us=_QUEUE_TIMEOUT_US,
    ),
    ModelSettings(
        "ocr_recogniser",
        max_batch_size=2,
        preferred_batch_sizes=(2,),
        max_queue_delay_us=0,
        instances=2,
        max_queue_size=64,
        queue_timeout_us=_QUEUE_TIMEOUT_US,
    ),
    rec_request_crops=2,
    # OpenVINO bf16 (runtimes.py): recogniser 55 -> 23 ms per 800 px crop, detector 135 -> 66
    # ms per 576x960 page on one core, same accuracy; ONNX Runtime where it is not installed.
    backends=("openvino", "onnxruntime"),
)
# gpu (not measured here): a GPU amortises launches over a batch, so a page's crops go in one
# request per width bucket and the batcher may merge pages up to 32 crops.
GPU = Profile(
    "gpu",
    ModelSettings(
        "ocr_detector",
        max_batch_size=8,
        preferred_batch_sizes=(4, 8),
        max_queue_delay_us=2_000,
        instances=1,
        max_queue_size=32,
        queue_timeout_us=_QUEUE_TIMEOUT_US,
    ),
    ModelSettings(
        "ocr_recogniser",
        max_batch_size=32,
        preferred_batch_sizes=(8, 16, 32),
        max_queue_delay_us=2_000,
        instances=1,
        max_queue_size=128,
        queue_timeout_us=_QUEUE_TIMEOUT_US,
    ),
    rec_request_crops=32,
    # The GPU machine has PyTorch with CUDA but no onnxruntime-gpu: onnx2torch, fp16.
    backends=("torch", "onnxruntime"),
)
PROFILES = {p.name: p for p in (CPU, GPU)}


def auto_profile() -> str:
    """'gpu' when onnxruntime offers CUDA or PyTorch (with onnx2torch) sees a GPU, else 'cpu'."""
    import importlib.util

    try:
        import onnxruntime as ort

        if "CUDAExecutionProvider" in ort.get_available_providers():
            return "gpu"
    except ImportError:
        pass
    if importlib.util.find_spec("torch") is None or importlib.util.find_spec("onnx2torch") is None:
        return "cpu"
    import torch

    return "gpu" if torch.cuda.is_available() else "cpu"


# Peak bytes per decoded pixel (PIL's RGB buffer 4 B + the BGR array 3 B, +1 B headroom).
DECODE_BYTES_PER_PIXEL = 8


@dataclass(frozen=True)
class Settings:
    """Everything the gateway and the Triton worker need; all servers bind ``host``."""

    host: str = "127.0.0.1"
    triton_host: str = "127.0.0.1"  # where the gateway finds Triton (a Service name in Kubernetes)
    http_port: int = 8080
    triton_http_port: int = 8000
    triton_grpc_port: int = 8001
    triton_metrics_port: int = 8002
    # Input caps, checked before decoding (measured: a 10000x10000 PNG took the server from
    # 545 MB to 1.5 GB).
    max_body_bytes: int = 10 * 1024 * 1024
    max_pixels: int = 16_000_000
    max_side: int = 8_000
    min_side: int = 8
    # Concurrency limit: requests beyond it get 429 + Retry-After at once. A slot is taken
    # only once the whole body has arrived, so slow uploads cannot hold inference slots.
    max_inflight: int = 8
    # Uploads being received at once (each holds at most max_body_bytes); beyond it: 429.
    max_receiving: int = 32
    # Body-read limits: the whole body within body_timeout_s, no gap between chunks over
    # body_idle_s, and after the first second at least min_body_rate_bps on average
    # (1 MiB/s is ~100x slower than loopback or a LAN; a 10 MiB page still gets 10 s).
    body_timeout_s: float = 10.0
    body_idle_s: float = 2.0
    min_body_rate_bps: int = 16 * 1024
    # Memory for decoded pages: decoding costs ~8 bytes per pixel (PIL's 4-byte RGB buffer
    # plus the 3-byte BGR array, measured in MEASUREMENTS.md), so requests reserve
    # width x height x 8 bytes from this budget before decoding and wait (up to
    # decode_wait_s) when it is spent. 384 MiB admits three 16-megapixel pages at once and
    # keeps the gateway under its 1 GiB container limit (archkit rule AK320 checks it).
    decode_budget_mib: int = 384
    decode_wait_s: float = 20.0  # how long a page may wait for room in that budget (then 429)
    retry_after_s: int = 1
    triton_timeout_s: float = 20.0
    triton_retries: int = 1
    cache_entries: int = 256
    cache_ttl_s: int = 3600
    redis_url: str | None = None
    confidence_floor: float = 0.8  # effective QPS counts successes with mean confidence >= this
    profile: str = "cpu"
    det_instances: int | None = None
    rec_instances: int | None = None

    @property
    def decode_budget_pixels(self) -> int:
        """Pixels that may be decoded at once; never below one page at the pixel cap."""
        return max(self.decode_budget_mib * 1024 * 1024 // DECODE_BYTES_PER_PIXEL, self.max_pixels)

    @property
    def detector(self) -> ModelSettings:
        m = PROFILES[self.profile].detector
        return dataclasses.replace(m, instances=self.det_instances or m.instances)

    @property
    def recogniser(self) -> ModelSettings:
        m = PROFILES[self.profile].recogniser
        return dataclasses.replace(m, instances=self.rec_instances or m.instances)

    @property
    def rec_request_crops(self) -> int:
        return min(PROFILES[self.profile].rec_request_crops, self.recogniser.max_batch_size)
