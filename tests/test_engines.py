"""The engine-adapter registry: lookup, versioned metric names, refusal of duplicates."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import archkit
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


def test_vllm_v1_renames_resolve_per_version() -> None:
    vllm = engines.adapter("vllm")
    assert vllm.metric("kv_cache_usage", "0.8.5").name == "vllm:gpu_cache_usage_perc"
    assert vllm.metric("kv_cache_usage", "0.10.1").name == "vllm:kv_cache_usage_perc"
    assert vllm.metric("itl_seconds", "0.10.1").name == "vllm:time_per_output_token_seconds"
    assert vllm.metric("itl_seconds").name == "vllm:inter_token_latency_seconds"
    assert vllm.metric("ttft_seconds").name == "vllm:time_to_first_token_seconds"
    assert vllm.metric("preemptions").kind == "counter"


def test_llm_engines_share_the_measure_vocabulary() -> None:
    for name in ("vllm", "sglang", "tgi", "tensorrt-llm"):
        assert name in engines.names()
    assert engines.adapter("sglang").metric("kv_cache_usage").name == "sglang:token_usage"
    assert not engines.adapter("tgi").has("ttft_seconds")  # TGI exports no TTFT histogram
    assert engines.adapter("tensorrt-llm").metric("ttft_seconds").unit == "milliseconds"


def _literals(tree: ast.AST) -> list[tuple[int, str]]:
    """Every string constant of a module except docstrings, with its line."""
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def test_no_engine_series_or_endpoint_is_spelled_outside_the_adapters() -> None:
    """Triton's `nv_*` series and its KServe v2 paths live in `archkit.engines` only; everything
    else asks `engines.adapter("triton")`. Docstrings may name them; code may not."""
    src = Path(archkit.__file__).parent
    triton = engines.adapter("triton")
    ep = triton.endpoints
    paths = [p for p in (ep.ready, ep.live, ep.models, ep.model_config, ep.model_stats, ep.infer) if p]
    # the static head of each templated path, e.g. "/v2/models/"
    heads = sorted({p.split("{")[0] for p in paths if p.split("{")[0].count("/") > 1})
    series = re.compile(r"\bnv_[a-z]")
    offenders = []
    for path in sorted(src.rglob("*.py")):
        if path.relative_to(src).parts[0] == "engines":
            continue
        for line, text in _literals(ast.parse(path.read_text(encoding="utf-8"))):
            if series.search(text) or any(h in text for h in heads):
                offenders.append(f"{path.relative_to(src)}:{line}: {text[:60]!r}")
    assert heads, "the Triton adapter declares its endpoint paths"
    assert not offenders, "engine names spelled outside archkit.engines:\n" + "\n".join(offenders)


def test_the_success_only_flag_decides_the_error_ratio_denominator() -> None:
    """A counter that counts successes only is known by its adapter, not guessed from its name."""
    from archkit.plans.alerts.model import counts_successes_only

    assert counts_successes_only(engines.adapter("triton").metric("request_success").name)
    assert not counts_successes_only(engines.adapter("triton").metric("request_failure").name)
    assert not counts_successes_only("checkout_success")  # a name alone decides nothing
