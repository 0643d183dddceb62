"""Service settings: ports, input caps, concurrency, Triton batching and queue policy."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field


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


# Measured on 2 cores (MEASUREMENTS.md): one instance per model with one intra-op thread
# each keeps both cores busy (detect of one page overlaps recognise of another). The queue
# bound is the fast refusal; the 15 s queue timeout only catches requests stuck behind a
# CPU starved by neighbours (5 s expired under load average 5 on 2 cores).
DETECTOR = ModelSettings("ocr_detector", max_batch_size=4, preferred_batch_sizes=(2, 4),
                         max_queue_delay_us=2_000, instances=1, max_queue_size=16,
                         queue_timeout_us=15_000_000)
RECOGNISER = ModelSettings("ocr_recogniser", max_batch_size=32, preferred_batch_sizes=(8, 16, 32),
                           max_queue_delay_us=2_000, instances=1, max_queue_size=64,
                           queue_timeout_us=15_000_000)


@dataclass(frozen=True)
class Settings:
    """Everything the gateway and the Triton worker need; all servers bind ``host``."""

    host: str = "127.0.0.1"
    triton_host: str = "127.0.0.1"  # where the gateway finds Triton (a Service name in Kubernetes)
    http_port: int = 8080
    triton_http_port: int = 8000
    triton_grpc_port: int = 8001
    triton_metrics_port: int = 8002
    # Input caps, checked before decoding (issue 6: a 10000x10000 PNG took the server from
    # 545 MB to 1.5 GB).
    max_body_bytes: int = 10 * 1024 * 1024
    max_pixels: int = 16_000_000
    max_side: int = 8_000
    min_side: int = 8
    # Concurrency limit: requests beyond it get 429 + Retry-After at once.
    max_inflight: int = 8
    retry_after_s: int = 1
    triton_timeout_s: float = 20.0
    triton_retries: int = 1
    cache_entries: int = 256
    cache_ttl_s: int = 3600
    redis_url: str | None = None
    confidence_floor: float = 0.8  # effective QPS counts successes with mean confidence >= this
    detector: ModelSettings = field(default=DETECTOR)
    recogniser: ModelSettings = field(default=RECOGNISER)
    det_instances: int | None = None
    rec_instances: int | None = None

    def with_instances(self) -> "Settings":
        """Apply the instance-count overrides to the model settings."""
        det = dataclasses.replace(self.detector, instances=self.det_instances or self.detector.instances)
        rec = dataclasses.replace(self.recogniser, instances=self.rec_instances or self.recogniser.instances)
        return dataclasses.replace(self, detector=det, recogniser=rec)
