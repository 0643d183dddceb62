"""Calibrations that know their machine: a fingerprint recorded, compared with the target (AK230).

The machine-dependent side is made deterministic by handing `mismatches` the target's
fingerprint; one test uses this machine's own (`archkit.machine.fingerprint()`), read from
/proc/cpuinfo, to show a calibration measured here is accepted here.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import yaml

from archkit import api, machine
from archkit.calibrate.origin import mismatches
from archkit.loadtest import compare
from archkit.perf.resources import load_model, service_mean_ms
from archkit.plans.context import prepare
from tests.conftest import ROOT

ZEN4 = {
    "version": 1,
    "cpu": {
        "model_name": "AMD EPYC",
        "vendor": "AuthenticAMD",
        "family": 25,
        "model": 17,
        "flags": ["avx2", "avx512f", "avx512_bf16", "avx512_vnni"],
    },
    "cores": 2,
    "gpus": [],
    "runtime": {"backend": "openvino", "precision": "bf16", "versions": {"openvino": "2026.4.1"}},
}
ZEN2 = {
    "version": 1,
    "cpu": {"model_name": "AMD EPYC", "vendor": "AuthenticAMD", "family": 23, "model": 49, "flags": ["avx2"]},
    "cores": 2,
    "gpus": [],
    "runtime": {"backend": "openvino", "precision": "f32", "versions": {"openvino": "2026.4.1"}},
}


def _spec(tmp_path: Path, fingerprint: dict | None, host: str = "http://127.0.0.1:8080") -> Path:
    doc = {"apiVersion": "archkit/v1", "kind": "calibration", "env": "cpu", "models": {}}
    if fingerprint is not None:
        doc["fingerprint"] = fingerprint
    (tmp_path / "cal.json").write_text(json.dumps(doc), encoding="utf-8")
    spec = {
        "apiVersion": "archkit/v1",
        "metadata": {"name": "s"},
        "loadtest": {"target": {"host": host}, "scenarios": [{"id": "a"}]},
        "environments": [
            {"id": "cpu", "hardware": "2 vCPU AMD EPYC", "cpu_cores": 2, "calibration": "cal.json"}
        ],
    }
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def test_a_calibration_from_another_machine_is_a_located_finding(tmp_path) -> None:
    path = _spec(tmp_path, ZEN4)
    spec = prepare(path, "cpu").spec
    (m,) = mismatches(spec, str(path), here=ZEN2)
    assert m.spec_path == ("environments", 0, "calibration")
    assert m.differences == [
        "microarchitecture Zen 4 vs Zen 2 (family 25 model 17 vs family 23 model 49)",
        "ISA avx512f avx512_bf16 avx512_vnni only on the calibrated machine",
        "precision bf16 vs f32",
    ]
    text = m.message()
    # both machines named, and the command that recalibrates on the target
    assert (
        "AMD EPYC (Zen 4: family 25 model 17, avx2 avx512f avx512_bf16 avx512_vnni), 2 cores, openvino bf16"
        in text
    )
    assert "this machine, AMD EPYC (Zen 2: family 23 model 49, avx2), 2 cores, openvino f32" in text
    assert f"`archkit calibrate {path} --env cpu -o " in text and text.endswith("cal.json`")
    assert mismatches(spec, str(path), here=copy.deepcopy(ZEN4)) == []


def test_this_machine_accepts_its_own_calibration_and_check_reports_a_foreign_one(tmp_path) -> None:
    here = machine.fingerprint()
    assert {"model_name", "flags"} <= set(here["cpu"]) and here["cores"]
    path = _spec(tmp_path, here)
    assert api.calibration_findings(path, "cpu") == []
    other = copy.deepcopy(here)
    other["cpu"]["model_name"] = "Another CPU"
    other["cores"] = here["cores"] + 2
    path = _spec(tmp_path, other)
    (d,) = api.calibration_findings(path, "cpu")
    assert (d.code, d.severity.value, d.line, d.path) == (
        "AK230",
        "warning",
        13,
        "environments[0].calibration",
    )
    assert "CPU Another CPU vs " in d.message and f"{here['cores'] + 2} vs {here['cores']} cores" in d.message
    # without --env the calibration is held against the declared hardware (2 cores) instead
    assert [x.code for x in api.check([path]).diagnostics if x.code == "AK230"] == (
        [] if here["cores"] + 2 == 2 else ["AK230"]
    )


def test_a_remote_target_is_compared_with_the_declared_hardware(tmp_path) -> None:
    path = _spec(tmp_path, ZEN2, host="http://10.0.0.7:8080")
    spec = prepare(path, "cpu").spec
    assert mismatches(spec, str(path), here=ZEN4) == []  # not this machine: the declaration holds
    spec.environments[0].hardware = "2 vCPU AMD EPYC with AVX-512 BF16"
    (m,) = mismatches(spec, str(path), here=ZEN4)
    assert m.differences == ["no avx512_bf16 measured, the environment declares it"]
    assert "environment cpu's declared hardware (2 vCPU AMD EPYC with AVX-512 BF16)" in m.message()


def test_the_committed_reference_calibration_records_its_zen4_machine() -> None:
    doc = json.loads((ROOT / "specs" / "calibration" / "ocr-reference-cpu.json").read_text())
    fp = doc["fingerprint"]
    assert fp["cpu"]["family"] == 25 and "avx512_bf16" in fp["cpu"]["flags"]
    # it records no model number: of family 25 only Zen 4 has AVX-512, so it is named all the same
    assert machine.microarchitecture(fp["cpu"]) == "Zen 4"
    assert machine.microarchitecture({**fp["cpu"], "flags": ["avx2"]}) == "Zen 3"
    assert fp["runtime"]["precision"] == "bf16" and fp["cores"] == 2
    # on an AVX2-only machine (where OpenVINO runs f32) the reference spec's cpu environment says so
    spec = prepare(ROOT / "specs" / "ocr-reference.yaml", "cpu").spec
    (m,) = mismatches(spec, str(ROOT / "specs" / "ocr-reference.yaml"), here=ZEN2)
    assert "ISA avx512f avx512_bf16 avx512_vnni only on the calibrated machine" in m.differences


def test_every_predicted_line_from_a_foreign_calibration_says_so() -> None:
    cmp = {
        "source": "archkit.perf.pipeline.predict",
        "rate_rps": 1.5,
        "calibration": {"foreign": True, "finding": "s.yaml:8:18: AK230 warning calibration cal.json ..."},
        "end_to_end": {"p50_ms": {"predicted": 100.0, "measured": 110.0, "error_pct": -9.1}},
        "stages": {"detect": {"p50_ms": {"predicted": 40.0, "measured": 50.0, "error_pct": -20.0}}},
    }
    lines = compare.prediction_lines(cmp)
    assert lines[0] == "note: s.yaml:8:18: AK230 warning calibration cal.json ..."
    assert len(lines) == 3 and all(x.endswith("[from a calibration of another machine]") for x in lines[1:])
    title, _head, _rows, notes = compare.section(cmp)
    assert title == "Predicted vs measured (from a calibration of another machine)" and "AK230" in notes[-1]


def test_a_calibration_measures_the_service_stages_too(tmp_path) -> None:
    """`stages` of a calibration (the service's own histograms under one client) replace the
    declared cpu_ms of the gateway's stages: decode was 8.5 ms on the Zen 4, 3.8 ms on the Zen 5."""
    doc = json.loads((ROOT / "specs" / "calibration" / "ocr-reference-cpu.json").read_text())
    doc["stages"] = {
        "decode": {"mean_ms": 3.83, "count": 30},
        "cache": {"mean_ms": 0.003, "count": 30},
        "ingress": {"mean_ms": 400.0, "count": 30},  # the whole request: never a stage's own time
        "detect": {"mean_ms": 99.0, "count": 30},  # a model: Triton's numbers stand
    }
    cal = tmp_path / "cal.json"
    cal.write_text(json.dumps(doc), encoding="utf-8")
    spec_path = ROOT / "specs" / "ocr-reference.yaml"
    base = prepare(spec_path, "cpu").spec
    spec = prepare(spec_path, "cpu", str(cal)).spec
    # cpu_ms is the median of a log-normal with the budgets' spread (decode 12 -> 50 ms: s = ln 4 /
    # z99 = 0.596, mean = 1.1943 x median), so the measured mean 3.83 ms is a median of 3.2069 ms
    assert base.stage("decode").cpu_ms == 8.5 and spec.stage("decode").cpu_ms == 3.2069
    assert abs(service_mean_ms(spec.stage("decode")) - 3.83) < 1e-3
    assert base.stage("cache").cpu_ms is None and spec.stage("cache").cpu_ms == 0.0029  # 1 -> 2 ms: x1.0454
    assert spec.stage("ingress").cpu_ms == base.stage("ingress").cpu_ms
    assert spec.stage("detect").model.service_time == base.stage("detect").model.service_time
    assert spec.environment("cpu").calibration == str(cal.resolve())  # what AK230 reads now


def _cpu(vendor: str, family: int, model: int, stepping: int | None = None) -> dict:
    cpu = {"model_name": "x", "vendor": vendor, "family": family, "model": model, "flags": ["avx2"]}
    return cpu | ({"stepping": stepping} if stepping is not None else {})


def test_family_and_model_name_the_microarchitecture() -> None:
    """Linux's table (arch/x86/kernel/cpu/amd.c, intel-family.h), checked on parts whose
    generation AMD and Intel publish: Rome, Milan, Genoa, Raphael, Turin (this session's
    family 26 model 2), Sapphire Rapids, Cascade Lake (model 0x55 stepping 7)."""
    amd, intel = "AuthenticAMD", "GenuineIntel"
    cases = {
        (amd, 23, 0x31, None): "Zen 2",
        (amd, 25, 0x01, None): "Zen 3",
        (amd, 25, 0x11, None): "Zen 4",
        (amd, 25, 0x61, None): "Zen 4",
        (amd, 26, 0x02, None): "Zen 5",
        (intel, 6, 0x8F, None): "Sapphire Rapids",
        (intel, 6, 0x55, 7): "Cascade Lake",
        (intel, 6, 0x55, 4): "Skylake-SP",
        (amd, 21, 0x02, None): None,  # Bulldozer-era: not in the table, no name guessed
    }
    for (vendor, family, model, stepping), name in cases.items():
        assert machine.microarchitecture(_cpu(vendor, family, model, stepping)) == name, (family, model)


def test_ak230_compares_microarchitectures_and_isa_not_only_family_numbers() -> None:
    genoa, raphael = _cpu("AuthenticAMD", 25, 0x11), _cpu("AuthenticAMD", 25, 0x61)
    milan = _cpu("AuthenticAMD", 25, 0x01)
    # the same family number, another generation: Zen 3 vs Zen 4 is named, not "model 1 vs 17"
    assert machine.differences({"cpu": milan}, {"cpu": genoa}) == [
        "microarchitecture Zen 3 vs Zen 4 (family 25 model 1 vs family 25 model 17)"
    ]
    # the same generation in another part: still a difference, said to be one generation
    assert machine.differences({"cpu": genoa}, {"cpu": raphael}) == ["CPU model 17 vs 97 (both Zen 4)"]
    bf16 = {**genoa, "flags": ["avx2", "avx512f", "avx512_bf16"]}
    assert machine.differences({"cpu": bf16}, {"cpu": genoa}) == [
        "ISA avx512f avx512_bf16 only on the calibrated machine"
    ]
    # a remote target: the generation its declared hardware names
    fp = {"cpu": genoa, "cores": 2}
    assert machine.declared_differences(fp, "2 vCPU AMD EPYC (Zen 2)", 2, None) == [
        "Zen 4 measured, the environment declares Zen 2"
    ]
    assert machine.declared_differences(fp, "AMD EPYC zen4", 2, None) == []


def test_a_calibration_times_the_http_exchange_and_how_the_cores_scale(tmp_path) -> None:
    """The two model fixes of the quiet run (docs/benchmarks.md, Fidelity): the client's round trip
    beyond the whole-request histogram becomes the ingress stage's work, and the recogniser's
    concurrency sweep (2 instances: 1.767x the throughput of one, not 2x) the cores the one-machine
    environment delivers; a one-instance model's sweep (it cannot run two at once) is not read."""
    doc = json.loads((ROOT / "specs" / "calibration" / "ocr-reference-cpu.json").read_text())
    doc["stages"] = {"ingress": {"mean_ms": 3.7, "count": 30, "outside": True}}
    doc["models"]["ocr_recogniser"]["instances"] = 2
    doc["models"]["ocr_recogniser"]["concurrency"] = [
        {"concurrency": 1, "speedup": 1.0},
        {"concurrency": 2, "speedup": 1.767},
        {"concurrency": 3, "speedup": 1.77},
    ]
    doc["models"]["ocr_detector"]["instances"] = 1
    doc["models"]["ocr_detector"]["concurrency"] = [{"concurrency": 2, "speedup": 0.934}]
    cal = tmp_path / "cal.json"
    cal.write_text(json.dumps(doc), encoding="utf-8")
    spec_path = ROOT / "specs" / "ocr-reference.yaml"
    spec = prepare(spec_path, "cpu", str(cal)).spec
    assert spec.stage("ingress").cpu_ms == 3.7  # no budgets: no spread, the mean is the median
    (machine_cpu,) = load_model(spec).resources
    assert (machine_cpu.id, machine_cpu.units) == ("machine:cpu", 1.767)
    # without a sweep that shows scaling, the declared cores stand
    del doc["models"]["ocr_recogniser"]["concurrency"]
    cal.write_text(json.dumps(doc), encoding="utf-8")
    assert load_model(prepare(spec_path, "cpu", str(cal)).spec).resources[0].units == 2
