"""NVIDIA Triton Inference Server: KServe v2 endpoints and the `nv_*` Prometheus series.

Source: Triton's metrics documentation (docs/user_guide/metrics.md): per-model cumulative
counters `nv_inference_*` (durations in microseconds), labelled `model` and `version`.
"""

from __future__ import annotations

from archkit.engines.base import Endpoints, EngineAdapter, Metric
from archkit.engines.registry import register


def _us(name: str, help_: str) -> tuple[Metric, ...]:
    return (Metric(name, "counter", "microseconds", ("model", "version"), help=help_),)


TRITON = register(
    EngineAdapter(
        name="triton",
        title="NVIDIA Triton Inference Server",
        endpoints=Endpoints(
            ready="/v2/health/ready",
            live="/v2/health/live",
            metrics="/metrics",
            models="/v2/repository/index",
            model_config="/v2/models/{model}/config",
            model_stats="/v2/models/{model}/stats",
            infer="/v2/models/{model}/infer",
            model_ready="/v2/models/{model}/ready",
            model_version_ready="/v2/models/{model}/versions/{version}/ready",
            model_version_metadata="/v2/models/{model}/versions/{version}",
        ),
        measures={
            "request_success": (
                Metric(
                    "nv_inference_request_success", "counter", "1", ("model", "version"), success_only=True
                ),
            ),
            "request_failure": (
                Metric("nv_inference_request_failure", "counter", "1", ("model", "version")),
            ),
            "inference_count": (Metric("nv_inference_count", "counter", "1", ("model", "version")),),
            "execution_count": (Metric("nv_inference_exec_count", "counter", "1", ("model", "version")),),
            "pending_requests": (
                Metric("nv_inference_pending_request_count", "gauge", "1", ("model", "version")),
            ),
            "request_duration": _us("nv_inference_request_duration_us", "end to end inside the server"),
            "queue_duration": _us("nv_inference_queue_duration_us", "waiting in the scheduler queue"),
            "compute_input_duration": _us("nv_inference_compute_input_duration_us", "input copies"),
            "compute_infer_duration": _us("nv_inference_compute_infer_duration_us", "model execution"),
            "compute_output_duration": _us("nv_inference_compute_output_duration_us", "output copies"),
            "gpu_memory_used_bytes": (Metric("nv_gpu_memory_used_bytes", "gauge", "bytes", ("gpu_uuid",)),),
            "gpu_utilization": (Metric("nv_gpu_utilization", "gauge", "ratio", ("gpu_uuid",)),),
        },
        source="https://github.com/triton-inference-server/server/blob/main/docs/user_guide/metrics.md",
    )
)
