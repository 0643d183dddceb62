"""`archkit calibrate --llm-url` against a real llama-server (tests/llm_engine.py).

The probe must read the engine's real KV capacity (2 slots x 1024 tokens), fit the prefill and
decode models to the server's own timings within the stated error, and write a calibration file
that `environments[].calibration` accepts.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from archkit.cli import app
from tests.llm_engine import SPEC, engine

pytestmark = pytest.mark.live


def test_calibrate_probes_the_engine_and_writes_a_calibration(tmp_path) -> None:
    out = tmp_path / "llm.cpu.json"
    with engine(tmp_path) as url:
        result = CliRunner().invoke(
            app, ["calibrate", str(SPEC), "--llm-url", url, "-o", str(out), "--budget-s", "120"]
        )
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    entry = doc["llm"]["generate"]
    assert entry["kv_capacity"] == {
        "source": "llama.cpp /slots n_ctx",
        "slots": 2,
        "tokens_per_slot": 1024,
        "tokens": 2048,
    }
    prefill, decode = entry["prefill"], entry["decode"]
    assert prefill["ms_per_token"] > 0 and prefill["points"] == 12
    # prefill is near-linear in prompt length; a shared 2-core machine adds noise, not a curve
    assert prefill["max_relative_error"] < 0.5, entry["samples"]["prefill"]
    assert decode["base_ms"] > 0 and decode["points"] == 3 * (1 + 2) + 3 * 2
    eff = entry["efficiency"]
    assert 0 < eff["prefill_mfu"] <= 1 and 0 < eff["decode_bandwidth"] <= 1
    assert doc["environment"]["cores"] and "prefill" in result.output
