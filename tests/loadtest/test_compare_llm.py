"""The streamed llm stage's prediction beside what a baseline measured (loadtest.compare_llm)."""

from __future__ import annotations

from pathlib import Path

import yaml

from archkit.calibrate.apply import with_calibration
from archkit.loadtest import compare, compare_llm
from archkit.spec import load_file

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "specs" / "llm-reference.yaml"


def _spec(tmp_path: Path, weights: tuple[float, ...] = (1.0,)):
    doc = yaml.safe_load(SPEC.read_text(encoding="utf-8"))
    doc["loadtest"] = {
        "target": {"protocol": "openai-stream", "host": "http://127.0.0.1:9"},
        "scenarios": [
            {"id": f"chat{i}", "llm_stage": "generate", "path": "/v1/chat/completions", "weight": w}
            for i, w in enumerate(weights)
        ],
        "levels": [{"id": "b", "kind": "baseline", "users": 4, "rate_rps": 0.3, "duration_s": 60}],
    }
    path = tmp_path / "llm.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    # the calibration the reference spec names, applied as `--env cpu` applies it
    (tmp_path / "calibration").symlink_to(SPEC.parent / "calibration")
    spec = load_file(path).spec
    assert spec is not None
    return with_calibration(
        spec, str(path), "cpu", str(SPEC.parent / "calibration" / "llm-reference-cpu.json")
    )


def _measures(ttft50: float, ttft99: float, itl50: float, server_step: float | None) -> dict:
    m = {
        "ttft_ms": {"count": 100, "p50_ms": ttft50, "p99_ms": ttft99},
        "itl_ms": {"count": 1500, "p50_ms": itl50, "p99_ms": 3 * itl50},
        "tpot_ms": {"count": 100, "p50_ms": itl50},
    }
    if server_step is not None:
        m["server_decode_per_token_ms"] = {"count": 100, "p50_ms": server_step}
    return m


def test_a_light_baseline_is_predicted_at_its_rate_with_the_engines_own_step(tmp_path) -> None:
    """At 0.02 req/s requests never overlap: the predicted ITL P50 is the engine's one-sequence
    step at the workload's mean context (the engine row's prediction), and each error is
    (predicted - measured) / measured of the figures given."""
    spec = _spec(tmp_path)
    measured = {
        "kind": "baseline",
        "offered_rps": 0.02,
        "scenarios": {"chat0": {"measures": _measures(20.0, 40.0, 10.0, 9.0)}},
    }
    got = compare_llm.compare_llm(spec, measured, tmp_path)
    g = got["generate"]
    assert g["rate_rps"] == 0.02
    step = g["engine"]["decode_step_ms"]
    assert step["measured"] == 9.0 and step["error_pct"] == round((step["predicted"] - 9.0) / 9.0 * 100, 1)
    itl = g["tokens"]["itl_p50_ms"]
    # the step rises with the context over the answer (0.0114 ms a token in this calibration): the
    # median gap's context is within a few tokens of the mean one
    assert abs(itl["predicted"] - step["predicted"]) <= 0.01 * step["predicted"], (itl, step)
    assert itl["n"] == 1500 and itl["error_pct"] == round((itl["predicted"] - 10.0) / 10.0 * 100, 1)
    assert set(g["tokens"]) == set(compare_llm.TOKEN_ROWS)
    # the report's rows and the terminal's lines carry them
    rows = compare_llm.table_rows(got)
    assert rows[-1][:2] == ["llm generate engine", "decode_step_ms"] and rows[-1][3] == "9"
    lines = compare.prediction_lines({"llm": got, "source": "x", "rate_rps": 0.02})
    assert any(line.startswith("predicted llm generate ttft_p50_ms:") for line in lines)
    assert not any("itl_p99_ms" in line for line in lines)  # the report has it, the terminal not


def test_the_scenarios_share_of_the_offered_rate_is_predicted_and_other_runs_are_not(tmp_path) -> None:
    """Two scenarios weighted 3:1 stream to the stage: it is offered all 0.4 req/s (their rates add,
    judged on all streamed requests); a stress run is not compared (its steps mix rates)."""
    spec = _spec(tmp_path, (3.0, 1.0))
    m = _measures(20.0, 40.0, 10.0, None)
    measured = {"kind": "baseline", "offered_rps": 0.4, "end_to_end": {"measures": m},
                "scenarios": {"chat0": {"measures": {}}, "chat1": {"measures": {}}}}  # fmt: skip
    got = compare_llm.compare_llm(spec, measured, tmp_path)
    assert got["generate"]["rate_rps"] == 0.4 and got["generate"]["engine"] == {}  # no server timings
    assert compare_llm.compare_llm(spec, {**measured, "kind": "stress"}, tmp_path) == {}
    assert compare_llm.compare_llm(spec, {**measured, "offered_rps": None}, tmp_path) == {}
