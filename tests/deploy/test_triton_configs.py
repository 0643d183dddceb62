"""Generated Triton model configurations: parsed back by `verify --triton-repo` with zero drift.

The parser is Triton's own `ModelConfig` protobuf message (tritonclient), so a field Triton does
not know would fail here; the checks are the ones `verify --triton-url` runs on a live server.
tests/reference_service/test_triton_generated_live.py loads the files into a real Triton.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from archkit import api
from archkit.spec.model import Scenario, TritonInput
from archkit.verify import Status
from archkit.verify.triton import triton_models
from archkit.verify.triton_repo import check_repository, parse_config
from tests.conftest import EXAMPLES, OCR_SPEC, REFERENCE_SPECS
from tests.deploy.helpers import load_spec, render_one

SPECS = EXAMPLES + REFERENCE_SPECS


load_file = load_spec


def _render(spec, name: str, out: Path, env: str | None = None) -> Path:
    return render_one(spec, "triton", out, name, env)


@pytest.mark.parametrize("spec_file", SPECS, ids=[p.stem for p in SPECS])
def test_generated_configs_have_zero_drift(spec_file: Path, tmp_path: Path) -> None:
    spec = load_file(spec_file)
    if not triton_models(spec):  # an LLM service on vLLM (rag-chat) has no Triton model to configure
        files, _ = api.generate(spec, spec_file.name, only=["triton"], formats=(), env=None)
        assert files == {}
        return
    repo = _render(spec, spec_file.name, tmp_path)
    findings = check_repository(spec, repo)
    assert findings, "a spec with Triton model stages gets one config each"
    drift = [f"{f.code} {f.message}" for f in findings if f.status is not Status.PASS]
    assert drift == []


def test_each_environment_renders_its_own_hardware(tmp_path: Path) -> None:
    """`render --env cpu` writes KIND_CPU instances; verify with the same env finds no drift."""
    spec_file = OCR_SPEC
    spec = load_file(spec_file)
    repo = _render(spec, str(spec_file), tmp_path, env="cpu")
    config = parse_config(repo / "ocr_recogniser" / "config.pbtxt")
    assert config["instance_group"] == [{"count": 2, "kind": "KIND_CPU"}]
    findings = check_repository(spec.with_environment("cpu"), repo)
    assert [f.code for f in findings if f.status is not Status.PASS] == []


def test_fields_as_triton_reads_them(tmp_path: Path) -> None:
    """Hand-checked against specs/ocr-reference.yaml's detect stage."""
    spec = load_file(OCR_SPEC)
    config = parse_config(_render(spec, "ocr-reference.yaml", tmp_path) / "ocr_detector" / "config.pbtxt")
    assert config == {
        "name": "ocr_detector",
        "backend": "python",
        "max_batch_size": 2,
        "dynamic_batching": {
            "preferred_batch_size": [2],
            # max_queue_delay_microseconds 0 and timeout_action REJECT are the proto defaults: the
            # JSON form leaves them out (Triton's own endpoint prints them)
            "default_queue_policy": {
                "default_timeout_microseconds": "15000000",
                "max_queue_size": 16,
            },
        },
        "instance_group": [{"count": 1, "kind": "KIND_GPU"}],
        "version_policy": {"latest": {"num_versions": 1}},
    }


def test_warmup_from_a_scenario_that_declares_the_model_inputs(tmp_path: Path) -> None:
    spec = load_file(OCR_SPEC)
    assert spec.loadtest is not None
    spec.loadtest.scenarios.append(
        Scenario(
            id="det",
            model="ocr_detector",
            inputs=[TritonInput(name="image", datatype="UINT8", shape=[-1, -1, -1, 3])],
        )
    )
    config = parse_config(_render(spec, "ocr-reference.yaml", tmp_path) / "ocr_detector" / "config.pbtxt")
    assert config["model_warmup"] == [
        {
            "name": "warmup-det",
            "batch_size": 1,
            "inputs": {"image": {"data_type": "TYPE_UINT8", "dims": ["1", "1", "3"], "zero_data": True}},
        }
    ]


@pytest.mark.parametrize(
    ("old", "new", "code"),
    [
        ("max_batch_size: 2", "max_batch_size: 4", "VT220"),
        ("max_queue_size: 16", "max_queue_size: 32", "VT224"),
        ("count: 1", "count: 3", "VT223"),
        ("num_versions: 1", "num_versions: 2", "VT225"),
    ],
)
def test_a_deliberate_edit_is_drift(tmp_path: Path, old: str, new: str, code: str) -> None:
    spec = load_file(OCR_SPEC)
    repo = _render(spec, "ocr-reference.yaml", tmp_path)
    path = repo / "ocr_detector" / "config.pbtxt"
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    drift = [f for f in check_repository(spec, repo) if f.status is Status.DRIFT]
    assert [f.code for f in drift] == [code]
    assert drift[0].where == str(path) and drift[0].file.endswith("ocr-reference.yaml")


def test_a_field_triton_does_not_know_is_refused_with_its_line(tmp_path: Path) -> None:
    spec = load_file(OCR_SPEC)
    repo = _render(spec, "ocr-reference.yaml", tmp_path)
    path = repo / "ocr_detector" / "config.pbtxt"
    path.write_text(path.read_text(encoding="utf-8") + "max_batch: 3\n", encoding="utf-8")
    drift = [f for f in check_repository(spec, repo) if f.status is Status.DRIFT]
    assert [f.code for f in drift] == ["VT220"]
    assert f"{path}:" in drift[0].message and "max_batch" in drift[0].message


def test_cli_verify_triton_repo(tmp_path: Path) -> None:
    spec_file = OCR_SPEC
    repo = _render(load_file(spec_file), spec_file.name, tmp_path)
    report = api.verify(spec_file, triton_repo=str(repo)).report
    assert report is not None
    assert (
        report.total(Status.DRIFT) == 0 and report.total(Status.PASS) == 20
    )  # with VT239 (backend) per model
    (repo / "ocr_recogniser" / "config.pbtxt").unlink()
    report = api.verify(spec_file, triton_repo=str(repo)).report
    assert report is not None
    assert [f.code for f in report.findings if f.status is Status.DRIFT] == ["VT210"]
