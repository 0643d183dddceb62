"""Hugging Face Text Generation Inference: its health and info endpoints and the `tgi_*` series.

Source: TGI's documentation, "Metrics" (huggingface.co/docs/text-generation-inference). TGI has no
time-to-first-token histogram and no KV-usage gauge: TTFT is not a measure here, and rules that
need it say so; `tgi_request_mean_time_per_token_duration` is per request (TPOT), not per token.
One model per server, so the series carry no model label.
"""

from __future__ import annotations

from archkit.engines.base import Endpoints, EngineAdapter, Metric, MetricKind
from archkit.engines.registry import register


def _m(name: str, kind: MetricKind, unit: str, help_: str = "") -> tuple[Metric, ...]:
    return (Metric(name, kind, unit, (), help=help_),)


TGI = register(
    EngineAdapter(
        name="tgi",
        title="Hugging Face Text Generation Inference",
        endpoints=Endpoints(
            ready="/health", live="/health", metrics="/metrics", models="/info", model_config="/info"
        ),
        measures={
            "tpot_seconds": _m("tgi_request_mean_time_per_token_duration", "histogram", "seconds"),
            "e2e_seconds": _m("tgi_request_duration", "histogram", "seconds"),
            "queue_seconds": _m("tgi_request_queue_duration", "histogram", "seconds"),
            "running_requests": _m("tgi_batch_current_size", "gauge", "1"),
            "waiting_requests": _m("tgi_queue_size", "gauge", "1"),
            "prompt_tokens": _m("tgi_request_input_length", "histogram", "tokens"),
            "generation_tokens": _m("tgi_request_generated_tokens", "histogram", "tokens"),
            "request_success": _m("tgi_request_success", "counter", "1"),
        },
        model_label=None,
        source="https://huggingface.co/docs/text-generation-inference/en/reference/metrics",
    )
)
