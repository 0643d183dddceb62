"""SGLang's server (`--enable-metrics`): health and model endpoints and the `sglang:*` series.

Source: SGLang's documentation, "Production Metrics" (docs.sglang.ai). Series are labelled
`model_name`; `sglang:token_usage` is the share of KV-cache tokens in use; a preempted request
is "retracted" (`sglang:num_retracted_reqs`). `sglang:time_per_output_token_seconds` was the
per-token histogram before `sglang:inter_token_latency_seconds` (0.4.7).
"""

from __future__ import annotations

from archkit.engines.base import Endpoints, EngineAdapter, Metric, MetricKind
from archkit.engines.registry import register

_L = ("model_name",)


def _m(name: str, kind: MetricKind, unit: str, help_: str = "") -> Metric:
    return Metric(f"sglang:{name}", kind, unit, _L, help=help_)


SGLANG = register(
    EngineAdapter(
        name="sglang",
        title="SGLang",
        endpoints=Endpoints(
            ready="/health",
            live="/health",
            metrics="/metrics",
            models="/v1/models",
            model_config="/get_model_info",
        ),
        measures={
            "ttft_seconds": (_m("time_to_first_token_seconds", "histogram", "seconds"),),
            "itl_seconds": (
                Metric("sglang:time_per_output_token_seconds", "histogram", "seconds", _L, until="0.4.7"),
                Metric("sglang:inter_token_latency_seconds", "histogram", "seconds", _L, since="0.4.7"),
            ),
            "e2e_seconds": (_m("e2e_request_latency_seconds", "histogram", "seconds"),),
            "kv_cache_usage": (_m("token_usage", "gauge", "ratio", "share of KV-cache tokens in use"),),
            "running_requests": (_m("num_running_reqs", "gauge", "1"),),
            "waiting_requests": (_m("num_queue_reqs", "gauge", "1"),),
            "preemptions": (_m("num_retracted_reqs", "gauge", "1", "requests retracted (preempted) now"),),
            "prompt_tokens": (_m("prompt_tokens_total", "counter", "tokens"),),
            "generation_tokens": (_m("generation_tokens_total", "counter", "tokens"),),
        },
        model_label="model_name",
        source="https://docs.sglang.ai/references/production_metrics.html",
    )
)
