"""TensorRT-LLM served by Triton's tensorrtllm backend: KServe v2 endpoints and its `nv_trt_llm_*` series.

Source: the tensorrtllm_backend documentation ("Triton Metrics") and Triton's metrics guide:
KV blocks by `kv_cache_block_type` (used, free, max, tokens_per), requests by `request_type`
(active, max, scheduled, context); the first-response histogram of a decoupled (streaming) model,
`nv_inference_first_response_histogram_ms`, is the TTFT (Triton with
`--metrics-config histogram_latencies=true`). The backend exposes no inter-token series.
"""

from __future__ import annotations

from archkit.engines.base import Endpoints, EngineAdapter, Metric
from archkit.engines.registry import register

TENSORRT_LLM = register(
    EngineAdapter(
        name="tensorrt-llm",
        title="TensorRT-LLM on Triton",
        endpoints=Endpoints(
            ready="/v2/health/ready",
            live="/v2/health/live",
            metrics="/metrics",
            models="/v2/repository/index",
            model_config="/v2/models/{model}/config",
            model_stats="/v2/models/{model}/stats",
        ),
        measures={
            "ttft_seconds": (
                Metric(
                    "nv_inference_first_response_histogram_ms",
                    "histogram",
                    "milliseconds",
                    ("model", "version"),
                ),
            ),
            "kv_blocks": (
                Metric("nv_trt_llm_kv_cache_block_metrics", "gauge", "1", ("model", "kv_cache_block_type")),
            ),
            "requests": (Metric("nv_trt_llm_request_metrics", "gauge", "1", ("model", "request_type")),),
            # Triton's counter of successes only (failures: nv_inference_request_failure)
            "request_success": (
                Metric(
                    "nv_inference_request_success", "counter", "1", ("model", "version"), success_only=True
                ),
            ),
            "queue_seconds": (
                Metric("nv_inference_queue_duration_us", "counter", "microseconds", ("model", "version")),
            ),
        },
        model_label="model",
        source="https://github.com/triton-inference-server/tensorrtllm_backend/blob/main/docs/model_config.md",
    )
)
