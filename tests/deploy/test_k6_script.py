"""Generated k6 scripts: `k6 inspect` (the real k6 1.1.0) accepts every level of every spec, and the
options it reports are the spec's mix, arrival rates and budgets (hand-computed for the toy spec)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from archkit import api
from archkit.loadtest.k6 import k6_binary, percentile, read_points
from tests.conftest import EXAMPLES, REFERENCE_SPECS, ROOT

SPECS = EXAMPLES + REFERENCE_SPECS
TOY = ROOT / "tests" / "loadtest" / "specs" / "toy.yaml"


def _script(spec_file: Path, tmp_path: Path) -> tuple[Path, list[str]]:
    res = api.load(spec_file)
    assert res.spec is not None and res.spec.loadtest is not None
    files, _ = api.generate(res.spec, spec_file.name, only=["k6"], formats=())
    path = tmp_path / "script.js"
    text = files["k6/script.js"]
    assert isinstance(text, str)
    path.write_text(text, encoding="utf-8")
    return path, [lv.id for lv in res.spec.loadtest.levels]


def _inspect(script: Path, level: str) -> dict:
    proc = subprocess.run(
        [k6_binary(), "inspect", "-e", f"LEVEL={level}", str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=script.parent,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("spec_file", SPECS, ids=[p.stem for p in SPECS])
def test_k6_inspect_accepts_every_level(spec_file: Path, tmp_path: Path) -> None:
    script, levels = _script(spec_file, tmp_path)
    for level in levels:
        options = _inspect(script, level)
        assert options["scenarios"], level


def test_toy_options_are_the_spec(tmp_path: Path) -> None:
    """toy.yaml: work (weight 3) and peek (weight 1); baseline 40 req/s for 4 s with 8 users;
    stress from 30 to 150 req/s in steps of 30 every 2 s; budgets P50 60, P95 80, P99 100 ms, 1% errors."""
    script, _ = _script(TOY, tmp_path)
    base = _inspect(script, "baseline")
    work, peek = base["scenarios"]["work"], base["scenarios"]["peek"]
    assert work["executor"] == peek["executor"] == "constant-arrival-rate"
    # 30 and 10 req/s, counted per 1000 s
    assert (work["rate"], peek["rate"], work["timeUnit"]) == (30000, 10000, "16m40s")
    assert (work["duration"], work["maxVUs"], work["preAllocatedVUs"], peek["preAllocatedVUs"]) == (
        "4s",
        8,
        6,
        2,
    )
    assert base["thresholds"] == {
        "http_req_duration": ["p(50)<=60", "p(95)<=80", "p(99)<=100"],
        "http_req_failed": ["rate<=0.01"],
    }
    stress = _inspect(script, "stress")
    work = stress["scenarios"]["work"]
    assert work["executor"] == "ramping-arrival-rate"
    holds = [(s["target"], s["duration"]) for s in work["stages"] if s["duration"] != "0s"]
    # 3/4 of 30, 60, 90, 120, 150 req/s, 2 s each (150 from 8 s to the level's end at 10 s)
    assert holds == [(22500, "2s"), (45000, "2s"), (67500, "2s"), (90000, "2s"), (112500, "2s")]
    assert stress["thresholds"] == {}  # budgets are judged at baseline; stress looks for the knee
    chaos = _inspect(script, "chaos")
    assert chaos["scenarios"]["work"]["executor"] == "constant-vus"  # chaos is closed by default
    assert chaos["scenarios"]["work"]["vus"] == 6


def test_a_remote_target_is_refused(tmp_path: Path) -> None:
    script, _ = _script(TOY, tmp_path)
    proc = subprocess.run(
        [k6_binary(), "inspect", "-e", "ARCHKIT_HOST=http://192.0.2.1:80", str(script)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0 and "not a loopback address" in proc.stdout + proc.stderr


def test_percentile_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert (percentile(values, 50), percentile(values, 99), percentile(values, 100)) == (50.0, 99.0, 100.0)
    assert percentile([], 50) is None


def test_read_points_pairs_durations_with_outcomes() -> None:
    def point(metric: str, value: float, t: str) -> str:
        tags = {"scenario": "work", "status": "200" if value == 0 or metric != "http_req_failed" else "503"}
        return json.dumps(
            {"type": "Point", "metric": metric, "data": {"time": t, "value": value, "tags": tags}}
        )

    lines = [
        json.dumps({"type": "Metric", "metric": "http_req_duration", "data": {}}),
        point("http_req_duration", 12.5, "2026-12-03T04:00:00.5+00:00"),
        point("http_req_failed", 0, "2026-12-03T04:00:00.5+00:00"),
        point("http_req_duration", 30.0, "2026-12-03T04:00:01.5+00:00"),
        point("http_req_failed", 1, "2026-12-03T04:00:01.5+00:00"),
    ]
    reqs = read_points(lines)
    assert [(r.t, r.duration_ms, r.failed) for r in reqs] == [(0.0, 12.5, False), (1.0, 30.0, True)]


def test_triton_http_scenarios_send_a_kserve_v2_request(tmp_path: Path) -> None:
    """A triton-http target: the request goes to /v2/models/NAME/infer with zero-filled inputs."""
    from archkit.spec.model import Scenario, TritonInput

    res = api.load(TOY)
    spec = res.spec
    assert spec is not None and spec.loadtest is not None
    spec.loadtest.target.protocol = "triton-http"
    spec.loadtest.scenarios = [
        Scenario(
            id="det",
            model="ocr_detector",
            inputs=[TritonInput(name="image", datatype="UINT8", shape=[1, 2, 3])],
        )
    ]
    files, _ = api.generate(spec, "toy.yaml", only=["k6"], formats=())
    script = tmp_path / "script.js"
    script.write_text(str(files["k6/script.js"]), encoding="utf-8")
    options = _inspect(script, "baseline")
    assert list(options["scenarios"]) == ["det"]
    text = script.read_text(encoding="utf-8")
    body = '{"inputs":[{"data":[0,0,0,0,0,0],"datatype":"UINT8","name":"image","shape":[1,2,3]}]}'
    assert json.dumps(body) in text and '"path": "/v2/models/ocr_detector/infer"' in text
