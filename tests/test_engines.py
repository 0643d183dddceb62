"""The engine-adapter registry: lookup, versioned metric names, refusal of duplicates."""

from __future__ import annotations

import pytest

from archkit import engines
from archkit.engines import Endpoints, EngineAdapter, Metric
from archkit.errors import ArchkitError, InputError


def test_triton_is_registered_with_its_counters() -> None:
    triton = engines.adapter("triton")
    assert triton.metric("queue_duration").name == "nv_inference_queue_duration_us"
    assert triton.metric("queue_duration").unit == "microseconds"
    assert triton.endpoints.model_config == "/v2/models/{model}/config"
    assert "triton" in engines.names()


def test_unknown_engine_and_measure_are_input_errors_naming_what_exists() -> None:
    with pytest.raises(InputError, match="known: .*triton"):
        engines.adapter("no-such-engine")
    with pytest.raises(InputError, match="exposes no measure 'ttft'"):
        engines.adapter("triton").metric("ttft")


def test_a_renamed_series_resolves_per_version() -> None:
    toy = EngineAdapter(
        name="toy-renaming",
        title="toy",
        endpoints=Endpoints(),
        measures={
            "kv_usage": (
                Metric("toy:gpu_cache_usage_perc", "gauge", "ratio", until="0.9"),
                Metric("toy:kv_cache_usage_perc", "gauge", "ratio", since="0.9"),
            )
        },
    )
    assert toy.metric("kv_usage", "0.8.5").name == "toy:gpu_cache_usage_perc"
    assert toy.metric("kv_usage", "0.9.0").name == "toy:kv_cache_usage_perc"
    assert toy.metric("kv_usage").name == "toy:kv_cache_usage_perc"
    assert toy.all_names("kv_usage") == ("toy:gpu_cache_usage_perc", "toy:kv_cache_usage_perc")


def test_a_second_adapter_with_a_taken_name_is_refused() -> None:
    clash = EngineAdapter(name="triton", title="clash", endpoints=Endpoints(), measures={})
    with pytest.raises(ArchkitError, match="registered twice"):
        engines.register(clash)


def test_llamacpp_is_registered_under_the_spec_engine_name() -> None:
    """The adapter's name is the spec's `llm.engine.name` value, so a stage finds it directly."""
    llama = engines.adapter("llama.cpp")
    assert llama.metric("waiting_requests").name == "llamacpp:requests_deferred"
    assert llama.endpoints.extra["slots"] == "/slots"
    assert llama.endpoints.model_config == "/props"
    assert all(m.name.startswith("llamacpp:") for ms in llama.measures.values() for m in ms)
