"""The LLM calibration probe against a real llama-server (tests/llm_engine.py).

The probe must read the engine's real KV capacity (2 slots x 1024 tokens) and fit the prefill and
decode models to the server's own timings. The test runs a shortened probe (fewer lengths, two
repeats, 16 output tokens) to stay within a live file's minute; `archkit calibrate --llm-url`
runs the full one (docs/benchmarks.md, LLM section).
"""

from __future__ import annotations

import dataclasses
import statistics

import pytest

from archkit.calibrate.llm import LlmOptions, calibrate_llm
from archkit.spec import load_file
from tests.llm_engine import SPEC, engine

pytestmark = pytest.mark.live


def test_calibrate_probes_the_engine(tmp_path) -> None:
    opts = LlmOptions(
        prefill_tokens=(32, 128, 384),
        decode_tokens=16,
        context_tokens=(32, 384),
        repeats=2,
        request_repeats=4,
        arrivals_budget_s=8.0,  # 4 idle gaps at >= 0.5 req/s: ~8 s, not the workload's 0.2 req/s
    )
    spec = load_file(SPEC).spec
    assert spec is not None
    with engine(tmp_path) as url:
        doc = calibrate_llm(spec, dataclasses.replace(opts, url=url))
    entry = doc["llm"]["generate"]
    assert entry["kv_capacity"] == {
        "source": "llama.cpp /slots n_ctx",
        "slots": 2,
        "tokens_per_slot": 1024,
        "tokens": 2048,
    }
    prefill, decode = entry["prefill"], entry["decode"]
    assert prefill["ms_per_token"] > 0 and prefill["points"] == 6
    assert decode["base_ms"] > 0 and decode["points"] == 2 * (1 + 2) + 2
    eff = entry["efficiency"]
    assert 0 < eff["prefill_mfu"] <= 1 and 0 < eff["decode_bandwidth"] <= 1
    assert doc["kind"] == "calibration" and doc["environment"]["cores"]
    # the per-request probe: four cached-prompt requests after the one that fills the slot, each after
    # an idle gap, and a client share above zero (the HTTP request and the stream's first write)
    per = entry["per_request"]
    assert per["points"] == 4 and per["client_overhead_ms"] > 0 and per["request_overhead_ms"] >= 0
    assert len(per["gaps_s"]) == 4 and all(g >= 0 for g in per["gaps_s"])
    # the decode step they measured: each request's own, 16 output tokens at a context of the
    # cached prompt + 1 + 8
    step_ms, ctx = per["step"]
    assert step_ms > 0 and ctx == pytest.approx(statistics.median(m[2] + m[3] + 8 for m in per["measured"]))
    assert eff["client_overhead_ms"] == per["client_overhead_ms"]
    assert eff["sequence_overhead_ms"] is not None and eff["sequence_overhead_ms"] >= 0
