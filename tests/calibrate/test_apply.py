"""A calibration file folds into the spec's environment without rewriting the spec (no live Triton)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from archkit.calibrate.apply import CalibrationError, with_calibration
from archkit.plans.context import prepare
from tests.conftest import ROOT

SPEC = ROOT / "specs" / "ocr-reference.yaml"


def _calibration(p50: float) -> dict:
    part = {"p50": p50, "p95": p50 * 1.2, "mean": p50}
    zero = {"p50": 0.5, "p95": 0.6, "mean": 0.5}
    batch = {"batch_size": 1, "requests": 20, "compute_input_ms": zero, "compute_infer_ms": part}
    batch |= {"compute_output_ms": zero, "service_ms": part, "queue_ms": zero}
    return {
        "apiVersion": "archkit/v1",
        "kind": "calibration",
        "models": {"ocr_detector": {"batches": [batch]}},
    }


def _spec_with(tmp_path: Path, calibration: dict | str | None) -> Path:
    data = yaml.safe_load(SPEC.read_text(encoding="utf-8"))
    for e in data["environments"]:
        if e["id"] == "cpu":
            e["calibration"] = "cal.json"
    out = tmp_path / "spec.yaml"
    text = yaml.safe_dump(data, sort_keys=False).replace(
        "reference_service/", str(ROOT / "reference_service") + "/"
    )
    out.write_text(text, encoding="utf-8")
    if calibration is not None:
        body = calibration if isinstance(calibration, str) else json.dumps(calibration)
        (tmp_path / "cal.json").write_text(body, encoding="utf-8")
    return out


def test_the_environment_gets_the_measured_service_times(tmp_path) -> None:
    path = _spec_with(tmp_path, _calibration(111.0))
    before = path.read_text()
    spec = prepare(path, "cpu").spec
    det = next(s for s in spec.dataflow.stages if s.model and s.model.name == "ocr_detector")
    (t,) = det.model.service_time
    assert (t.batch_size, t.copy_ms, t.compute_ms, t.overhead_ms) == (1, 0.5, 111.0, 0.5)
    assert path.read_text() == before  # the user's spec is never rewritten
    plain = prepare(path, None).spec  # without the environment, the declared times stand
    det0 = next(s for s in plain.dataflow.stages if s.model and s.model.name == "ocr_detector")
    assert det0.model.service_time[0].compute_ms != 111.0


@pytest.mark.parametrize(
    "content,message",
    [(None, r"spec.yaml:\d+:\d+: calibration file cal.json not found"), ("{}", "not an archkit calibration")],
)
def test_a_missing_or_foreign_file_is_a_clear_error(tmp_path, content, message) -> None:
    path = _spec_with(tmp_path, content)
    with pytest.raises(CalibrationError, match=message):
        prepare(path, "cpu")


def test_a_spec_without_calibration_is_unchanged() -> None:
    spec = prepare(SPEC, None).spec
    assert with_calibration(spec, str(SPEC), "cpu") is spec or spec.environment("cpu").calibration
