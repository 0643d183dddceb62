"""The model repository the reference service's Triton serves (reference_service/triton_native.py).

Its config.pbtxt files are parsed with Triton's own `ModelConfig` message (`verify --triton-repo`'s
parser) and held to specs/ocr-reference.yaml by the checks `verify --triton-url` runs against the
live server, for the cpu environment this machine runs: the files the service writes and the
spec (and so `archkit render`'s files) cannot drift apart. The live side — tritonserver loading
these files and verify against it — is tests/verify/test_triton_live.py and test_spec_live.py.
"""

from __future__ import annotations

from pathlib import Path

from archkit.verify import Status
from archkit.verify.findings import Recorder
from archkit.verify.triton import triton_models
from archkit.verify.triton_config import check_config
from archkit.verify.triton_repo import parse_config
from reference_service import triton_native
from reference_service.settings import CPU
from tests.conftest import OCR_SPEC
from tests.deploy.helpers import load_spec


def test_service_repository_matches_the_spec(tmp_path: Path) -> None:
    repo = triton_native.write_repository(
        tmp_path, CPU.detector, CPU.recogniser, threads=1, backend="openvino"
    )
    spec = load_spec(OCR_SPEC).with_environment("cpu")
    rec = Recorder(spec, "triton")
    names = []
    for _, model in triton_models(spec):
        config = parse_config(repo / model.name / "config.pbtxt")
        check_config(rec, model.name, model, config)
        names.append(model.name)
        assert config["backend"] == "python"
        assert (repo / model.name / "1" / "model.py").is_file()
    assert sorted(names) == ["ocr_detector", "ocr_recogniser"]
    assert rec.findings
    assert [f.message for f in rec.findings if f.status is not Status.PASS] == []


def test_config_fields_as_triton_reads_them(tmp_path: Path) -> None:
    """Hand-checked against settings.CPU's recogniser: 2 instances, batches of 2, no wait."""
    repo = triton_native.write_repository(
        tmp_path, CPU.detector, CPU.recogniser, threads=1, backend="openvino"
    )
    config = parse_config(repo / "ocr_recogniser" / "config.pbtxt")
    assert config["instance_group"] == [{"count": 2, "kind": "KIND_CPU"}]
    assert config["max_batch_size"] == 2
    policy = config["dynamic_batching"]["default_queue_policy"]
    # REJECT is the enum's zero value, which the protobuf-to-dict conversion leaves out
    assert "timeout_action: REJECT" in (repo / "ocr_recogniser" / "config.pbtxt").read_text(encoding="utf-8")
    assert policy == {
        "default_timeout_microseconds": "15000000",
        "allow_timeout_override": True,
        "max_queue_size": 64,
    }
    assert [(t["name"], t["data_type"], t["dims"]) for t in config["input"]] == [
        ("crops", "TYPE_UINT8", ["48", "-1", "3"]),
        ("widths", "TYPE_INT32", ["1"]),
    ]
    assert config["parameters"]["threads"] == {"string_value": "1"}
    assert config["parameters"]["runtime"] == {"string_value": "openvino"}
