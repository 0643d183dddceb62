"""llama.cpp's `llama-server`: its health, properties and slots endpoints and the `llamacpp:*` series.

Source: llama.cpp tools/server (README "API Endpoints"; the series are written by
`server_task_result_metrics::to_metrics` in tools/server/server-task.cpp, checked against a running
llama-server 11434 started with `--metrics --slots`). The series carry no labels (one model per
server); counters are cumulative since start, the `*_seconds` gauges are rates over the last
window, `requests_deferred` counts tasks waiting for a free slot.
"""

from __future__ import annotations

from archkit.engines.base import Endpoints, EngineAdapter, Metric, MetricKind
from archkit.engines.registry import register


def _m(name: str, kind: MetricKind, unit: str, help_: str) -> tuple[Metric, ...]:
    return (Metric(f"llamacpp:{name}", kind, unit, (), help=help_),)


LLAMACPP = register(
    EngineAdapter(
        name="llama.cpp",
        title="llama.cpp llama-server",
        endpoints=Endpoints(
            ready="/health",  # 503 {"error": ...} while the model loads, 200 {"status": "ok"} after
            live="/health",
            metrics="/metrics",  # only with --metrics
            models="/v1/models",
            model_config="/props",  # total_slots, model_path, default_generation_settings.n_ctx
            extra={
                "slots": "/slots",
                "tokenize": "/tokenize",
                "completion": "/completion",
                "chat": "/v1/chat/completions",  # OpenAI-compatible, SSE with `timings` in the last chunk
            },  # /slots: unless --no-slots
        ),
        measures={
            "prompt_tokens": _m("prompt_tokens_total", "counter", "tokens", "prompt tokens prefilled"),
            "prompt_tokens_cached": _m(
                "prompt_tokens_cached_total", "counter", "tokens", "prompt tokens reused from the cache"
            ),
            "prompt_seconds": _m("prompt_seconds_total", "counter", "seconds", "time spent prefilling"),
            "generation_tokens": _m("tokens_predicted_total", "counter", "tokens", "tokens generated"),
            "generation_seconds": _m(
                "tokens_predicted_seconds_total", "counter", "seconds", "time spent generating"
            ),
            "decode_calls": _m("n_decode_total", "counter", "1", "llama_decode() calls (engine iterations)"),
            "max_sequence_tokens": _m(
                "n_tokens_max", "counter", "tokens", "largest observed prompt + generation length"
            ),
            "prompt_tokens_per_s": _m(
                "prompt_tokens_seconds", "gauge", "tokens", "recent prefill throughput, tokens/s"
            ),
            "generation_tokens_per_s": _m(
                "predicted_tokens_seconds", "gauge", "tokens", "recent generation throughput, tokens/s"
            ),
            "running_requests": _m("requests_processing", "gauge", "1", "slots processing a request"),
            "waiting_requests": _m(
                "requests_deferred", "gauge", "1", "requests deferred: every slot busy (the queue)"
            ),
            "busy_slots_per_decode": _m(
                "n_busy_slots_per_decode", "gauge", "1", "mean running sequences per engine iteration"
            ),
        },
        model_label=None,
        source="https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md",
    )
)
