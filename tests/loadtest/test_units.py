"""Plan, safety, histograms, metric scraping, chaos analysis and report files, without a live service."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from archkit.loadtest import hist, payloads, plan, report, safety, scrape, session
from archkit.loadtest.chaos import FaultRecord, ProcessRef, analyse
from archkit.loadtest.judge import judge
from archkit.loadtest.options import LoadtestOptions
from archkit.loadtest.runner import Bucket, RunData
from archkit.spec import load_file
from archkit.spec.model import Fault, Spec

from .conftest import TOY_SPEC


@pytest.fixture(scope="module")
def toy() -> Spec:
    return load_file(TOY_SPEC).spec


@pytest.mark.parametrize(
    "url,ok",
    [
        ("http://127.0.0.1:8000", True),
        ("http://127.5.6.7", True),
        ("localhost:9", True),
        ("http://[::1]:80/x", True),
        ("http://10.1.2.3", False),
        ("http://example.com", False),
        ("http://localhost.evil.com", False),
        ("http://0.0.0.0:80", False),
        ("grpc://[2001:db8::1]:8001", False),
    ],
)
def test_only_loopback_hosts_pass(url, ok) -> None:
    assert safety.is_loopback(url) is ok
    if not ok:
        with pytest.raises(safety.RemoteTargetError, match="loopback"):
            safety.require_loopback(url)


def test_plans_for_each_level(toy) -> None:
    p = plan.build(toy, LoadtestOptions(level="baseline"))
    assert [(x.start_s, x.duration_s, x.rate_rps) for x in p.phases] == [(0.0, 4.0, 40.0)]
    assert p.max_requests == int(40 * 4 * 1.5) + 8
    s = plan.build(toy, LoadtestOptions(level="stress"))
    assert [x.rate_rps for x in s.phases] == [30, 60, 90, 120, 150] and s.duration_s == 10
    s = plan.build(
        toy, LoadtestOptions(level="stress", rate=90, duration=3)
    )  # --rate caps the top step; --duration shrinks steps
    assert [x.rate_rps for x in s.phases] == [30, 60, 90] and s.duration_s == pytest.approx(3)
    c = plan.build(toy, LoadtestOptions(level="chaos", host="http://127.0.0.1:1", users=3, rate=7))
    assert (c.host, c.users, c.phases[0].rate_rps) == ("http://127.0.0.1:1", 3, 7)
    with pytest.raises(plan.PlanError, match="no level 'soak'"):
        plan.build(toy, LoadtestOptions(level="soak"))


def test_a_level_the_spec_lacks_gets_defaults_at_the_design_rate(toy) -> None:
    spec = toy.model_copy(deep=True)
    spec.loadtest.levels = []
    p = plan.build(spec, LoadtestOptions(level="baseline"))
    assert p.phases[0].rate_rps == 40 and p.duration_s == 30


def test_stress_schedule_matches_the_generated_locustfile() -> None:
    """The runner's plan and the standalone locustfile step through the same offered rates."""
    import ast

    from archkit import api
    from archkit.spec import load_file
    from tests.conftest import ROOT

    spec = load_file(ROOT / "examples/industrial-inspection.yaml").spec
    p = plan.build(spec, LoadtestOptions(level="stress"))
    rates = [ph.rate_rps for ph in p.phases]
    assert rates[0] == 10 and rates[-1] == 120 and len(rates) == 12  # 10 → 120 req/s in 20 s steps
    files, _ = api.generate(spec, only=["locust"])
    tree = ast.parse(files["locust/locustfile.py"])
    steps = next(
        ast.literal_eval(v)
        for node in ast.walk(tree)
        if isinstance(node, ast.Dict)
        for k, v in zip(node.keys, node.values, strict=False)
        if isinstance(k, ast.Constant) and k.value == "steps" and ast.literal_eval(v)
    )
    assert [rate for _, rate in steps] == rates


def test_histograms_are_exact_to_a_tenth_of_a_percent() -> None:
    h = hist.new()
    values = [0.05 + i * 0.37 for i in range(5000)]
    for v in values:
        hist.record_ms(h, v)
    s = hist.summary(hist.decode(hist.encode(h)))
    exact = sorted(values)
    for p in (50, 95, 99):
        want = exact[int(p / 100 * len(exact)) - 1]
        assert abs(s[f"p{p}_ms"] - want) <= 0.001 * want + 0.001
    merged = hist.merge([h, hist.decode(hist.encode(h))])
    assert merged.get_total_count() == 10000


EXPO_BEFORE = """# TYPE toy_request_duration_seconds histogram
toy_request_duration_seconds_bucket{le="0.01"} 10
toy_request_duration_seconds_bucket{le="0.02"} 10
toy_request_duration_seconds_bucket{le="0.05"} 10
toy_request_duration_seconds_bucket{le="+Inf"} 10
toy_request_duration_seconds_sum 0.05
toy_request_duration_seconds_count 10
nv_inference_request_success{model="det",version="1"} 5
nv_inference_queue_duration_us{model="det",version="1"} 500
nv_inference_compute_infer_duration_us{model="det",version="1"} 10000
nv_inference_request_duration_us{model="det",version="1"} 12000
"""
EXPO_AFTER = """toy_request_duration_seconds_bucket{le="0.01"} 10
toy_request_duration_seconds_bucket{le="0.02"} 60
toy_request_duration_seconds_bucket{le="0.05"} 110
toy_request_duration_seconds_bucket{le="+Inf"} 110
toy_request_duration_seconds_sum 3.05
toy_request_duration_seconds_count 110
nv_inference_request_success{model="det",version="1"} 105
nv_inference_queue_duration_us{model="det",version="1"} 300500
nv_inference_compute_infer_duration_us{model="det",version="1"} 1010000
nv_inference_request_duration_us{model="det",version="1"} 1412000
"""


def test_decomposition_from_stage_histograms_and_triton_counters(toy) -> None:
    before, after = {"u": scrape.parse(EXPO_BEFORE)}, {"u": scrape.parse(EXPO_AFTER)}
    dec = scrape.decompose(toy, before, after, {"mean_ms": 35.0, "p50_ms": 20.0, "p99_ms": 50.0})
    api = dec["stages"]["api"]
    # 100 new observations: 50 in (10, 20] ms, 50 in (20, 50] ms; sum 3.0 s
    assert api["count"] == 100 and api["mean_ms"] == 30.0
    assert api["p50_ms"] == 20.0 and api["p99_ms"] == pytest.approx(49.4)
    assert dec["server"] == {"mean_ms": 30.0, "source": "stage api (toy_request_duration_seconds)"}
    assert dec["network_serialisation_ms"] == 5.0
    det = dec["models"]["det"]
    assert det == {"requests": 100, "queue_ms": 3.0, "compute_infer_ms": 10.0, "request_ms": 14.0}


def test_exposition_parser_handles_labels_escapes_and_comments() -> None:
    got = scrape.parse('# HELP x y\nm{a="q\\"x",b="2"} 3.5\nm 1e3\nbad line\n')
    assert got == [("m", (("a", 'q"x'), ("b", "2")), 3.5), ("m", (), 1000.0)]


def test_metrics_endpoints_are_loopback_only(toy) -> None:
    assert scrape.endpoints(toy, "http://127.0.0.1:8123") == ["http://127.0.0.1:8123/metrics"]
    with pytest.raises(safety.RemoteTargetError):
        scrape.fetch("http://192.0.2.1:9090/metrics")


def test_process_refs() -> None:
    assert ProcessRef.parse("triton=123").pid == 123
    assert str(ProcessRef.parse("triton=@/run/t.pid").pidfile) == "/run/t.pid"
    for bad in ("triton", "=1", "triton=abc"):
        with pytest.raises(ValueError):
            ProcessRef.parse(bad)


def _rows(spec_errors: list[int], p99: list[float], statuses=None) -> list[dict]:
    return [
        {"t": i + 1, "requests": 10, "errors": e, "p99_ms": p, "statuses": statuses or {"200": 10 - e}}
        for i, (e, p) in enumerate(zip(spec_errors, p99, strict=False))
    ]


def test_chaos_analysis_burst_recovery_and_fallback(toy) -> None:
    f = Fault(at_s=2, action="pause", target="toy", duration_s=2, expect_fallback="busy")
    rec = FaultRecord(0, f, applied=True, started_s=2.0, ended_s=4.0)
    rows = _rows([0, 0, 5, 10, 3, 0, 0, 0], [20, 20, 900, 2000, 300, 20, 20, 20])
    rows[4]["statuses"] = {"200": 7, "429": 3}
    (a,) = analyse([rec], rows, toy, 8)
    # second 5 (t=5) still bad, t=6 and t=7 healthy: recovered 1 s after the fault ended at 4 s
    assert a["recovery_s"] == 1.0
    assert a["burst_errors"] == 18 and a["burst_seconds"] == 3 and a["peak_error_rate"] == 1.0
    assert a["fallback_status"] == 429 and a["fallback_answers"] == 3
    assert a["worst_p99_ms"] == 2000
    never = analyse([rec], _rows([0, 0, 5, 10, 10, 10, 10, 10], [20] * 8), toy, 8)[0]
    assert never["recovery_s"] is None


def _result(toy) -> session.Result:
    """Nine requests at 300 ms against the toy's 60 ms P50 (missed: nine samples decide a P50)
    and 100 ms P99 (inconclusive: a P99 needs 368)."""
    p = plan.build(toy, LoadtestOptions(level="baseline"))
    b = Bucket()
    for _ in range(9):
        hist.record_ms(b.latency, 300.0)
    b.requests, b.statuses = 9, {"200": 9}
    data = RunData(plan=p, scenarios={"work": b}, wall_s=4.0)
    data.total = b
    measured = {
        "kind": "baseline",
        "level": "baseline",
        "offered_rps": 40,
        "duration_s": 4.0,
        "end_to_end": b.stats(4.0),
        "scenarios": {"work": b.stats(4.0)},
        "seconds": [],
        "phases": [],
        "stopped": "duration",
        "decomposition": {},
        "stages": {},
    }
    return session.Result(
        "toy.yaml",
        "toy",
        None,
        p,
        data,
        measured,
        judge(toy, measured),
        environment={"cpu": "x", "cores": 2, "versions": {}},
        budgets={"p99_ms": 100.0},
    )


def test_reports_junit_and_measured_overlay(toy, tmp_path) -> None:
    res = _result(toy)
    folder = report.prepare_dir(tmp_path / "r")
    report.write(res, folder, with_plots=False)
    root = ET.parse(folder / "junit.xml").getroot()
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert set(cases) == {v.id for v in res.verdicts}
    assert cases["end_to_end.p50_ms"].find("failure") is not None
    # inconclusive: neither met nor missed, reported like a budget not judged
    assert cases["end_to_end.p99_ms"].find("failure") is None
    assert cases["end_to_end.p99_ms"].find("skipped") is not None
    assert root.get("failures") == str(sum(v.passed is False for v in res.verdicts))
    m = json.loads((folder / "measured.json").read_text())
    assert m["kind"] == "measured" and m["end_to_end"]["p50_ms"] == 300.031 and m["passed"] is False
    assert set(m) >= {"end_to_end", "scenarios", "stages", "models", "spec", "level"}
    md = (folder / "report.md").read_text()
    assert "FAILED" in md and "| end_to_end.p50_ms | <= 60 ms | 300 ms | 9 | FAIL |" in md
    assert "| end_to_end.p99_ms | <= 100 ms | 300 ms | 9 | INCONCLUSIVE |" in md
    assert "Inconclusive budgets:" in md and "it needs 368" in md
    assert json.loads((folder / "result.json").read_text())["passed"] is False


def test_the_report_overlays_the_measured_steps_on_the_predicted_curve(toy, tmp_path) -> None:
    """Issue 29 item 4: the load-test report draws the model's latency-vs-load curve (the same
    sweep `archkit capacity --rate` runs) with each measured step on it, byte-identical twice."""
    from archkit.loadtest import compare

    res = _result(toy)
    res.measured["phases"] = [{"offered_rps": 40, "requests": 9, "p50_ms": 300.0, "p99_ms": 300.0}]
    res.measured["predicted"] = compare.compare(toy, res.measured, None)
    curve = res.measured["predicted"]["curve"]
    rates = [p["rate_rps"] for p in curve["points"]]
    # eight even rates up to 1.25x the offered 40 req/s, or 1.1x the ceiling when that is higher
    ceiling = curve["ceiling_rps"]
    top = max(50.0, 1.1 * ceiling) if ceiling is not None and ceiling < 1e6 else 50.0
    assert len(rates) == 8 and rates[-1] == pytest.approx(top, abs=1e-3)
    assert rates[0] == pytest.approx(top / 8, abs=1e-3)
    svg = compare.curve_overlay(res.measured)
    ET.fromstring(svg)  # well-formed
    assert svg.count("<circle") == 1 and svg.count("<rect x=") == 1 and "measured: ○ P99, □ P50" in svg
    pages = []
    for name in ("a", "b"):
        folder = report.prepare_dir(tmp_path / name)
        report.write(res, folder, with_plots=False)
        pages.append((folder / "report.html").read_text(encoding="utf-8"))
    assert pages[0] == pages[1] and svg in pages[0]
    assert report.OVERLAY_TITLE in (tmp_path / "a" / "report.md").read_text(encoding="utf-8")


def test_report_folder_with_foreign_files_is_refused(tmp_path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(report.ReportDirError, match="not written by archkit"):
        report.prepare_dir(tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_missing_payload_names_the_spec_line(tmp_path) -> None:
    spec_file = tmp_path / "s.yaml"
    text = TOY_SPEC.read_text().replace(
        "payload: {template: '{\"x\": 1}', content_type: application/json}",
        "payload: {folder: golden, glob: '*.png'}",
    )
    spec_file.write_text(text)
    spec = load_file(spec_file).spec
    with pytest.raises(
        plan.PlanError, match=r"s.yaml:\d+: loadtest.scenarios\[0\].payload.folder: no file matches"
    ):
        payloads.check_payloads(spec, tmp_path)
    (tmp_path / "golden").mkdir()
    (tmp_path / "golden" / "a.png").write_bytes(b"x")
    payloads.check_payloads(spec, tmp_path)


def test_model_stages_get_triton_queue_and_compute(toy) -> None:
    spec = toy.model_copy(deep=True)
    from archkit.spec.model import ModelInfo, Stage

    spec.dataflow.stages.append(Stage(id="detect", kind="model", model=ModelInfo(name="det")))
    dec = scrape.decompose(
        spec, {"u": scrape.parse(EXPO_BEFORE)}, {"u": scrape.parse(EXPO_AFTER)}, {"mean_ms": 40.0}
    )
    assert dec["stages"]["detect"] == {
        "count": 100,
        "mean_ms": 14.0,
        "queue_ms": 3.0,
        "compute_ms": 10.0,
        "metric": "nv_inference_*_duration_us",
    }


def test_payloads_resolve_from_the_spec_folder_then_the_working_directory(tmp_path, monkeypatch) -> None:
    spec_dir = tmp_path / "specs"
    spec_dir.mkdir()
    spec_file = spec_dir / "s.yaml"
    spec_file.write_text(
        TOY_SPEC.read_text().replace(
            "payload: {template: '{\"x\": 1}', content_type: application/json}", "payload: {file: data/a.bin}"
        )
    )
    spec = load_file(spec_file).spec
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.bin").write_bytes(b"x")
    monkeypatch.chdir(tmp_path)
    assert session.payload_root(spec, spec_dir) == tmp_path  # written relative to the repository root
    (spec_dir / "data").mkdir()
    (spec_dir / "data" / "a.bin").write_bytes(b"y")
    assert session.payload_root(spec, spec_dir) == spec_dir  # the spec's own folder wins


def test_a_service_found_by_its_command_line(tmp_path) -> None:
    import subprocess
    import sys

    marker = f"archkit-chaos-marker-{tmp_path.name}"
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", marker])
    try:
        import time

        end = time.monotonic() + 5  # until the child has exec'd (its cmdline is the parent's before)
        while (
            marker.encode() not in Path(f"/proc/{proc.pid}/cmdline").read_bytes() and time.monotonic() < end
        ):
            time.sleep(0.02)
        assert ProcessRef.parse(f"svc=~{marker}").current() == proc.pid
        with pytest.raises(ValueError, match="no process"):
            ProcessRef.parse("svc=~no-such-process-text-4711").current()
    finally:
        proc.kill()
        proc.wait()


def test_a_counter_reset_counts_from_zero() -> None:
    before = scrape.parse(
        'nv_inference_request_success{model="m"} 500\nnv_inference_request_duration_us{model="m"} 9e6\n'
    )
    after = scrape.parse(
        'nv_inference_request_success{model="m"} 10\nnv_inference_request_duration_us{model="m"} 50000\n'
    )
    spec = Spec.model_validate({"apiVersion": "archkit/v1", "metadata": {"name": "m"}})
    dec = scrape.decompose(spec, {"u": before}, {"u": after}, {"mean_ms": 9.0})
    assert dec["models"]["m"] == {"requests": 10, "request_ms": 5.0}


def test_the_targets_own_metrics_follow_a_host_override(toy) -> None:
    assert scrape.endpoints(toy, "http://127.0.0.1:9999") == ["http://127.0.0.1:9999/metrics"]


def test_stage_queue_and_compute_bindings(toy) -> None:
    spec = toy.model_copy(deep=True)
    from archkit.spec.model import MetricRef, StageMetrics

    ref = {"type": "counter_us", "count_metric": "nv_inference_request_success", "labels": {"model": "det"}}
    spec.observability.stages.append(
        StageMetrics(
            stage="api2",
            latency=MetricRef(metric="nv_inference_request_duration_us", **ref),
            queue=MetricRef(metric="nv_inference_queue_duration_us", **ref),
            compute=MetricRef(metric="nv_inference_compute_infer_duration_us", **ref),
        )
    )
    dec = scrape.decompose(
        spec, {"u": scrape.parse(EXPO_BEFORE)}, {"u": scrape.parse(EXPO_AFTER)}, {"mean_ms": 40.0}
    )
    assert dec["stages"]["api2"] == {
        "count": 100,
        "mean_ms": 14.0,
        "queue_ms": 3.0,
        "compute_ms": 10.0,
        "metric": "nv_inference_request_duration_us",
    }


def test_a_model_stage_reports_the_items_a_visit_really_sends(toy) -> None:
    """The stage's own histogram counts 100 visits (toy_request_duration_seconds, 10 -> 110); the
    engine counts 430 calls carrying 688 items: 6.88 items and 4.3 calls a visit. The comparison
    sets that beside the spec's `items_per_request` (8.1 here): (8.1 - 6.88) / 6.88 = +17.7 %."""
    from archkit.loadtest import compare

    data = toy.model_dump(mode="json", exclude_none=True)  # a new spec: the stage index is built once
    data["dataflow"]["stages"].append(
        {"id": "recognise", "kind": "model", "items_per_request": 8.1, "model": {"name": "det"}}
    )
    data["observability"]["stages"][0]["stage"] = "recognise"
    spec = Spec.model_validate(data)
    items = 'nv_inference_count{model="det",version="1"} %d\n'
    before = scrape.parse(
        EXPO_BEFORE.replace(
            'request_success{model="det",version="1"} 5', 'request_success{model="det",version="1"} 70'
        )
        + items % 12
    )
    after = scrape.parse(
        EXPO_AFTER.replace(
            'request_success{model="det",version="1"} 105', 'request_success{model="det",version="1"} 500'
        )
        + items % 700
    )
    dec = scrape.decompose(spec, {"u": before}, {"u": after}, {"mean_ms": 40.0})
    got = dec["stages"]["recognise"]
    assert (got["count"], got["items_per_visit"], got["calls_per_visit"]) == (100, 6.88, 4.3)
    row = compare.compare(spec, {"offered_rps": 1.0, "stages": dec["stages"]}, None)["stages"]["recognise"]
    assert row["items_per_request"] == {"predicted": 8.1, "measured": 6.88, "error_pct": 17.7}
    lines = compare.prediction_lines({"stages": {"recognise": row}})
    assert "predicted stage recognise items_per_request: 8.1 vs measured 6.88 (17.7 %)" in lines
    # the calls: one item a call (the model's default), 8.1 items = 8 items 90 % of the time and 9
    # items 10 %: 8.1 calls against 4.3 counted, (8.1 - 4.3) / 4.3 = +88.4 %
    assert row["calls_per_visit"] == {"predicted": 8.1, "measured": 4.3, "error_pct": 88.4}
    assert "predicted stage recognise calls_per_visit: 8.1 vs measured 4.3 (88.4 %)" in lines
    # pairs (items_per_call 2) of 6.88 items: 3 calls 12 % of the time, 4 calls 88 %: 3.88;
    # the fan-out table [[6, 4, 7], [7, 4, 53]] (413 crops in 240 calls on 60 pages): 4.0
    data["dataflow"]["stages"][-1].update(items_per_request=6.88, model={"name": "det", "items_per_call": 2})
    for table, calls, err in ((None, 3.88, -9.8), ([[6, 4, 7], [7, 4, 53]], 4.0, -7.0)):
        data["dataflow"]["stages"][-1]["fanout"] = {"table": table} if table else None
        spec = Spec.model_validate(data)
        row = compare.compare(spec, {"offered_rps": 1.0, "stages": dec["stages"]}, None)["stages"][
            "recognise"
        ]
        assert row["calls_per_visit"] == {"predicted": calls, "measured": 4.3, "error_pct": err}
