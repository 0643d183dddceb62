"""vLLM's OpenAI-compatible server: its health and model endpoints and the `vllm:*` series.

Source: vLLM's metrics documentation (docs.vllm.ai, "Production Metrics" and design/metrics "V1
metrics"). Per-model series are labelled `model_name`. Versioned renames: `vllm:gpu_cache_usage_perc`
became `vllm:kv_cache_usage_perc` (vLLM PR #18354, in 0.10.0; the old name is hidden by default
from 0.11), and `vllm:time_per_output_token_seconds` (per token despite its name) became
`vllm:inter_token_latency_seconds` (0.11.0), the old name kept as a per-request TPOT histogram
`vllm:request_time_per_output_token_seconds`.
"""

from __future__ import annotations

from archkit.engines.base import Endpoints, EngineAdapter, Metric, MetricKind
from archkit.engines.registry import register

_L = ("model_name",)


def _m(name: str, kind: MetricKind, unit: str, help_: str = "") -> Metric:
    return Metric(f"vllm:{name}", kind, unit, _L, help=help_)


VLLM = register(
    EngineAdapter(
        name="vllm",
        title="vLLM (OpenAI-compatible server)",
        endpoints=Endpoints(ready="/health", live="/health", metrics="/metrics", models="/v1/models"),
        measures={
            "ttft_seconds": (
                _m("time_to_first_token_seconds", "histogram", "seconds", "time to first token"),
            ),
            "itl_seconds": (
                Metric("vllm:time_per_output_token_seconds", "histogram", "seconds", _L, until="0.11.0"),
                Metric("vllm:inter_token_latency_seconds", "histogram", "seconds", _L, since="0.11.0"),
            ),
            "tpot_seconds": (
                Metric(
                    "vllm:request_time_per_output_token_seconds", "histogram", "seconds", _L, since="0.11.0"
                ),
            ),
            "e2e_seconds": (
                _m("e2e_request_latency_seconds", "histogram", "seconds", "end to end in the server"),
            ),
            "queue_seconds": (
                _m("request_queue_time_seconds", "histogram", "seconds", "waiting to be scheduled"),
            ),
            "kv_cache_usage": (
                Metric("vllm:gpu_cache_usage_perc", "gauge", "ratio", _L, until="0.10.0"),
                Metric("vllm:kv_cache_usage_perc", "gauge", "ratio", _L, since="0.10.0"),
            ),
            "running_requests": (_m("num_requests_running", "gauge", "1", "sequences in the running batch"),),
            "waiting_requests": (
                _m("num_requests_waiting", "gauge", "1", "requests waiting to be scheduled"),
            ),
            "preemptions": (_m("num_preemptions_total", "counter", "1", "sequences preempted (recompute)"),),
            "prompt_tokens": (_m("prompt_tokens_total", "counter", "tokens"),),
            "generation_tokens": (_m("generation_tokens_total", "counter", "tokens"),),
            "request_success": (
                _m("request_success_total", "counter", "1", "finished requests, by finished_reason"),
            ),
        },
        model_label="model_name",
        source="https://docs.vllm.ai/en/latest/design/metrics.html",
    )
)
