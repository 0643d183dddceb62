"""Prometheus metrics of the LLM gateway (its /metrics); names bound in specs/llm-reference.yaml.

The golden signals have the OCR gateway's shapes (reference_service/metrics.py) but not its names,
labels (`route`) or buckets: each set is bound to its own spec, so each service keeps its own.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

# From one token on a free engine (~10 ms) to a long answer on 2 busy cores (~2 min).
SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0)
# Inter-token gaps: a decode step of the 135M model is ~5-50 ms on 2 cores.
# A pipeline stage: from a NumPy search over a small index (~0.1 ms) to a whole answer.
STAGES = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, *SECONDS)
GAPS = (0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1.0)


class Metrics:
    """One registry per app, so tests can build several apps in one process."""

    def __init__(self) -> None:
        self.registry = r = CollectorRegistry()
        self.request_seconds = Histogram(
            "llm_request_duration_seconds",
            "End-to-end latency",
            ["route", "code"],
            buckets=SECONDS,
            registry=r,
        )
        self.ttft_seconds = Histogram(
            "llm_time_to_first_token_seconds",
            "Gateway-side time to the first non-empty content delta (streamed requests)",
            buckets=SECONDS,
            registry=r,
        )
        self.itl_seconds = Histogram(
            "llm_inter_token_latency_seconds",
            "Gap between consecutive content chunks (llama-server streams one token per chunk)",
            buckets=GAPS,
            registry=r,
        )
        self.requests = Counter(
            "llm_requests", "Finished requests by route and status", ["route", "code"], registry=r
        )
        self.rejected = Counter("llm_rejected", "Requests refused by the gateway", ["reason"], registry=r)
        self.prompt_tokens = Counter("llm_prompt_tokens", "Prompt tokens of answered requests", registry=r)
        self.output_tokens = Counter("llm_output_tokens", "Output tokens of answered requests", registry=r)
        self.engine_errors = Counter("llm_engine_errors", "Failed calls to the engine", ["kind"], registry=r)
        self.inflight = Gauge("llm_inflight_requests", "Requests admitted and not yet answered", registry=r)
        self.engine_ready = Gauge("llm_engine_ready", "1 when the engine answers /health with ok", registry=r)
        self.cold_start = Gauge(
            "llm_cold_start_seconds",
            "Seconds from launching the engine to ready, latest (re)start",
            registry=r,
        )
        self.stage_seconds = Histogram(
            "llm_stage_duration_seconds",
            "Time in each pipeline stage; `stage` is the spec's stage id (validate, embed, search, "
            "generate, relay)",
            ["stage"],
            buckets=STAGES,
            registry=r,
        )
        self.engine_rss = Gauge(
            "llm_engine_resident_memory_bytes",
            "Resident memory (VmRSS) of the llama-server process the gateway supervises; `engine` is "
            "generate or embed",
            ["engine"],
            registry=r,
        )
        self.engine_restarts = Counter(
            "llm_engine_restarts", "Engine restarts by the supervisor after a crash while serving", registry=r
        )
