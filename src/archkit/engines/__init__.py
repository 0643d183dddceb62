"""Inference-engine adapters: how each serving engine exposes readiness, configuration, statistics
and Prometheus metrics, said once and shared by verify, load-test scraping, calibrate and the
alert and dashboard planners.

An adapter is data (`EngineAdapter`): endpoint paths and a table from a *measure* — an
engine-independent name such as `ttft_seconds` or `queue_duration` — to the metric series that
carry it, versioned where the engine renamed a series (vLLM V1 renamed
`vllm:gpu_cache_usage_perc` to `vllm:kv_cache_usage_perc`). Nothing outside this package spells an
engine's metric name. Adapters register once (`register` refuses a duplicate name); third
parties add theirs through the `archkit.engines` entry point group (`NAME = package.module:ADAPTER`).
"""

from __future__ import annotations

from archkit.engines.base import (
    Endpoints,
    EngineAdapter,
    Metric,
    MetricKind,
    UnknownEngineError,
    UnknownMeasureError,
)
from archkit.engines.registry import adapter, names, register, series

__all__ = [
    "Endpoints",
    "EngineAdapter",
    "Metric",
    "MetricKind",
    "UnknownEngineError",
    "UnknownMeasureError",
    "adapter",
    "names",
    "register",
    "series",
]
