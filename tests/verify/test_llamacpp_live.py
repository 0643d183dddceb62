"""The llama.cpp verify source against a real llama-server (tests/llm_engine.py).

A server started with the reference settings verifies clean against specs/llm-reference.yaml;
one started with 3 slots, 512 tokens per slot (1,536 in all), a different GGUF and no --metrics
shows each of those as its own drift, located at the spec field it contradicts.
"""

from __future__ import annotations

import shutil

import pytest
from typer.testing import CliRunner

from archkit.cli import _load_commands, app
from archkit.spec import load_file
from archkit.verify import Status, verify_spec
from tests.llm_engine import SPEC, engine, engine_files

pytestmark = pytest.mark.live
_load_commands()


def _load(path):  # type: ignore[no-untyped-def]
    spec = load_file(path).spec
    assert spec is not None
    return spec


def _by_code(spec, url: str) -> dict:
    report = verify_spec(spec, {"llamacpp_url": url}, timeout_s=10.0)
    return {f.code: f for f in report.findings}


def test_the_reference_engine_verifies_clean(tmp_path) -> None:
    spec = _load(SPEC)
    with engine(tmp_path) as url:
        found = _by_code(spec, url)
        result = CliRunner().invoke(app, ["verify", str(SPEC), "--llamacpp-url", url])
    assert {c: f.status for c, f in found.items()} == {
        c: Status.PASS for c in ("VL400", "VL401", "VL410", "VL411", "VL412", "VL413", "VL420")
    }, [f.message for f in found.values()]
    assert result.exit_code == 0, result.output


def test_each_deliberate_drift_is_found_where_the_spec_says_otherwise(tmp_path) -> None:
    spec = _load(SPEC)
    _, model = engine_files()
    other = tmp_path / "other.gguf"  # the same tensors with trailing bytes: another file, another hash
    shutil.copyfile(model, other)
    with other.open("ab") as f:
        f.write(b"\0" * 4096)
    with engine(tmp_path, model=other, drop=("--metrics",), parallel=3, ctx_size=1536) as url:
        found = _by_code(spec, url)
        result = CliRunner().invoke(app, ["verify", str(SPEC), "--llamacpp-url", url])
    drift = {c: f for c, f in found.items() if f.status is Status.DRIFT}
    assert sorted(drift) == ["VL410", "VL411", "VL412", "VL413", "VL420"], [f.message for f in found.values()]
    assert "runs 3 slots" in drift["VL410"].message and drift["VL410"].path.endswith("engine.max_num_seqs")
    assert "holds 512 tokens" in drift["VL411"].message and drift["VL411"].path.endswith("max_context_tokens")
    assert "other.gguf" in drift["VL412"].message and drift["VL412"].path.endswith("model.sha256")
    assert "--metrics" in drift["VL420"].message
    # --ctx-size 1536, where the spec declares the 2,048 tokens the capacity model predicts from
    assert "holds 1536 tokens over 3 slots" in drift["VL413"].message
    assert drift["VL413"].path.endswith("engine.kv_capacity_tokens")
    lines = SPEC.read_text().splitlines()
    assert "max_num_seqs: 2" in lines[drift["VL410"].line - 1]
    assert "max_context_tokens: 1024" in lines[drift["VL411"].line - 1]
    assert result.exit_code == 1, result.output
