"""Triton config comparison on config dicts as Triton's /config endpoint returns them (no server needed)."""

from __future__ import annotations

from pathlib import Path

from archkit.spec import load_file
from archkit.verify import Status
from archkit.verify.findings import Recorder
from archkit.verify.triton import check_config, triton_models

SPEC = load_file(Path(__file__).parent / "fixtures" / "ocr-triton.yaml").spec
DETECT = triton_models(SPEC)[0][1]
CONFIG = {
    "name": "ocr_detector",
    "backend": "onnxruntime",
    "max_batch_size": 4,
    "version_policy": {"latest": {"num_versions": 1}},
    "dynamic_batching": {
        "preferred_batch_size": [2, 4],
        "max_queue_delay_microseconds": 2000,
        "default_queue_policy": {"max_queue_size": 16},
    },
    "instance_group": [{"name": "ocr_detector_0", "kind": "KIND_CPU", "count": 1}],
}


def _check(config: dict) -> dict:
    rec = Recorder(SPEC, "triton")
    check_config(rec, "model/ocr_detector", DETECT, config)
    return {f.code: f for f in rec.findings}


def test_matching_config_passes():
    found = _check(CONFIG)
    assert {c: f.status for c, f in found.items()} == {
        c: Status.PASS for c in ("VT220", "VT221", "VT222", "VT223", "VT224", "VT225", "VT227", "VT239")
    }


def test_no_dynamic_batching():
    found = _check({k: v for k, v in CONFIG.items() if k != "dynamic_batching"})
    assert found["VT226"].status is Status.DRIFT
    assert (
        "has no dynamic_batching; the spec declares batching up to 4 with a 2000 µs queue delay"
        in found["VT226"].message
    )


def test_cpu_model_on_gpu_instances():
    found = _check({**CONFIG, "instance_group": [{"kind": "KIND_GPU", "count": 1, "gpus": [0]}]})
    assert found["VT227"].status is Status.DRIFT
    assert "runs instances on the GPU (KIND_GPU), the spec declares device cpu" in found["VT227"].message


def test_queue_timeout():
    import copy

    from archkit.spec.model import Batching

    det = copy.deepcopy(DETECT)
    det.batching = Batching(
        max_batch_size=4,
        preferred_batch_sizes=[2, 4],
        max_queue_delay_us=2000,
        max_queue_size=16,
        queue_timeout_us=15_000_000,
    )
    rec = Recorder(SPEC, "triton")
    check_config(rec, "model/ocr_detector", det, CONFIG)
    f = next(f for f in rec.findings if f.code == "VT228")
    assert f.status is Status.DRIFT
    assert f.message == (
        "model 'ocr_detector' lets a request wait without limit in its queue, the spec declares "
        "queue_timeout_us 15000000"
    )


def test_version_policy_and_queue_size():
    found = _check(
        {
            **CONFIG,
            "version_policy": {"latest": {"num_versions": 3}},
            "dynamic_batching": {**CONFIG["dynamic_batching"], "default_queue_policy": {}},
        }
    )
    assert found["VT225"].status is Status.DRIFT and "keeps latest 3 version(s)" in found["VT225"].message
    assert (
        found["VT224"].status is Status.DRIFT
        and "has an unbounded queue, the spec declares max_queue_size 16" in found["VT224"].message
    )


def test_environment_batching_replaces_the_stage_and_points_at_its_line():
    gpu = SPEC.with_environment("gpu")
    det = triton_models(gpu)[0][1]
    assert (
        det.batching.max_batch_size == 8 and DETECT.batching.max_batch_size == 4
    )  # the original is untouched
    rec = Recorder(gpu, "triton")
    check_config(rec, "model/ocr_detector", det, CONFIG)
    found = {f.code: f for f in rec.findings}
    assert found["VT220"].status is Status.DRIFT
    assert found["VT220"].message.startswith("model 'ocr_detector' has max_batch_size 4, the spec declares 8")
    assert found["VT220"].path == "environments[0].stages[0].batching.max_batch_size"
    assert found["VT220"].line == 46
    # objects the environment does not replace keep their own lines
    assert (
        triton_models(gpu)[1][1].version_policy.spec_path
        == triton_models(SPEC)[1][1].version_policy.spec_path
    )
    assert gpu.dataflow.edges[0].spec_path == ("dataflow", "edges", 0)


def test_backend_other_than_the_formats_default_is_drift():
    """ONNX served from the Python backend (as the reference OCR service does) against a spec that
    declares no backend: the format's default, onnxruntime, is what the spec promises."""
    found = _check({**CONFIG, "backend": "python"})
    assert found["VT239"].status is Status.DRIFT
    assert found["VT239"].message == (
        "model 'ocr_detector' runs on the python backend, the spec implies (format onnx) onnxruntime: its "
        "service times and batching were measured on that runtime"
    )
    # where to declare it: the model's backend field (on the model's line while it is unset)
    assert found["VT239"].path == "dataflow.stages[0].model.backend"
    assert found["VT239"].line == 12


def test_declared_backend_is_compared_and_platform_names_count():
    import copy

    from archkit.spec.serving import TritonBackend

    det = copy.deepcopy(DETECT)
    det.backend = TritonBackend.python

    def run(config: dict) -> object:
        rec = Recorder(SPEC, "triton")
        check_config(rec, "model/ocr_detector", det, config)
        return next(f for f in rec.findings if f.code == "VT239")

    assert run({**CONFIG, "backend": "python"}).status is Status.PASS
    drift = run(CONFIG)
    assert drift.status is Status.DRIFT
    assert "runs on the onnxruntime backend, the spec declares python" in drift.message
    # Triton's older `platform` spelling of the same backend
    legacy = {k: v for k, v in CONFIG.items() if k != "backend"} | {"platform": "onnxruntime_onnx"}
    assert _check(legacy)["VT239"].status is Status.PASS
    # neither: unknown, not a pass
    bare = {k: v for k, v in CONFIG.items() if k != "backend"}
    assert _check(bare)["VT239"].status is Status.UNKNOWN
