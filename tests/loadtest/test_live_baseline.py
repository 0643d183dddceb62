"""Live baseline runs against the toy service: verdicts, exit codes, reports and exact percentiles."""

from __future__ import annotations

import json
import statistics
import xml.etree.ElementTree as ET

import pytest
from typer.testing import CliRunner

from archkit import api
from archkit.cli import _load_commands, app

from .conftest import toy_spec

pytestmark = pytest.mark.live


def _pct(values: list[float], p: float) -> float:
    """Nearest-rank percentile (what HDR reports, up to its 0.1% bucket width)."""
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(-(-p / 100.0 * len(s) // 1)) - 1))
    return s[k]


def test_baseline_passes_loose_budgets_and_writes_every_report(toy_server, tmp_path) -> None:
    toy = toy_server(delay_ms=5)
    spec = toy_spec(
        tmp_path,
        toy.port,
        **{
            "budgets.p50_ms": 500,
            "budgets.p95_ms": 800,
            "budgets.p99_ms": 1000,
            "dataflow.stages.0.p99_ms": 1000,
        },
    )
    out = api.loadtest(spec, "baseline", duration=3, report_dir=tmp_path / "rep", prometheus=False)
    res = out.result
    assert res.passed, [v.why for v in res.verdicts if v.passed is False]
    e2e = res.measured["end_to_end"]
    # 40 req/s offered for 3 s: the pacing must deliver it (± start-up)
    assert 100 <= e2e["requests"] <= 130
    assert set(res.measured["scenarios"]) == {"work", "peek"}
    # the traffic mix: 3:1 weights
    assert res.measured["scenarios"]["work"]["requests"] > res.measured["scenarios"]["peek"]["requests"]
    ids = {v.id for v in res.verdicts}
    assert {
        "end_to_end.p50_ms",
        "end_to_end.p99_ms",
        "end_to_end.error_rate",
        "end_to_end.throughput_rps",
        "stage.api.p99_ms",
    } <= ids
    files = {p.name for p in (tmp_path / "rep").iterdir()}
    assert {"result.json", "junit.xml", "report.md", "report.html", "measured.json", "locustfile.py"} <= files
    html = (tmp_path / "rep" / "report.html").read_text()
    assert html.count("data:image/png;base64,") == 2 and "<script" not in html
    measured = json.loads((tmp_path / "rep" / "measured.json").read_text())
    assert measured["end_to_end"]["p99_ms"] == e2e["p99_ms"]
    assert measured["stages"]["api"]["count"] == e2e["requests"]  # the server saw every request
    assert measured["network_serialisation_ms"] >= 0
    suite = ET.parse(tmp_path / "rep" / "junit.xml").getroot()
    assert suite.get("failures") == "0" and int(suite.get("tests")) == len(res.verdicts)


def test_too_tight_budget_exits_1_and_the_report_says_why(toy_server, tmp_path) -> None:
    toy = toy_server(delay_ms=20)
    spec = toy_spec(tmp_path, toy.port, **{"budgets.p50_ms": 5})
    _load_commands()
    r = CliRunner().invoke(
        app, ["loadtest", str(spec), "--duration", "2", "--report", str(tmp_path / "rep"), "--no-prometheus"]
    )
    assert r.exit_code == 1, r.output
    assert "FAIL  end_to_end.p50_ms" in r.output
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "Missed budgets" in md and "end_to_end.p50_ms" in md and "> budget 5 ms" in md
    case = [
        c
        for c in ET.parse(tmp_path / "rep" / "junit.xml").getroot().iter("testcase")
        if c.get("name") == "end_to_end.p50_ms"
    ][0]
    assert "budget 5 ms" in case.find("failure").get("message")
    # ~80 samples in 2 s at 40 req/s: a P99 needs 368, so it is neither met nor missed
    assert "INCONCLUSIVE  end_to_end.p99_ms" in r.output and "it needs 368" in r.output


def test_percentiles_agree_with_raw_latencies_and_the_servers_own_log(
    toy_server, tmp_path, monkeypatch
) -> None:
    toy = toy_server(delay_ms=30, jitter_ms=60)  # a spread of 30..90 ms so percentiles differ
    spec = toy_spec(tmp_path, toy.port)
    raw = tmp_path / "raw"
    monkeypatch.setenv("ARCHKIT_RAW_LATENCIES", str(raw))
    res = api.loadtest(spec, "baseline", duration=4, rate=50, users=10, prometheus=False, plots=False).result
    rows = [line.split("\t") for f in tmp_path.glob("raw.*") for line in f.read_text().splitlines()]
    lat = [float(r[1]) for r in rows]  # from the actual send
    scheduled = [float(r[3]) for r in rows]  # open model: from the scheduled send time (judged)
    e2e = res.measured["end_to_end"]
    assert len(lat) == e2e["requests"] > 150
    for p in (50, 95, 99):
        exact = _pct(scheduled, p)
        assert abs(e2e[f"p{p}_ms"] - exact) <= 0.002 * exact + 0.002, (p, e2e[f"p{p}_ms"], exact)
        exact = _pct(lat, p)
        got = e2e["from_send"][f"p{p}_ms"]
        assert abs(got - exact) <= 0.002 * exact + 0.002, (p, got, exact)
    assert all(s >= a for s, a in zip(scheduled, lat, strict=True))
    # independent: the server's own timing of the same requests (client adds the loopback hop)
    server = toy.timings()
    assert len(server) == len(lat)
    for p in (50, 90):
        s, c = _pct(server, p), _pct(lat, p)
        assert abs(c - s) / s < 0.08, (p, c, s)
    assert abs(statistics.median(lat) - statistics.median(server)) / statistics.median(server) < 0.08


def test_remote_host_is_refused(tmp_path) -> None:
    spec = toy_spec(tmp_path, 9)
    _load_commands()
    for host in ("http://10.0.0.1:8080", "http://example.com", "http://[2001:db8::1]:80"):
        r = CliRunner().invoke(app, ["loadtest", str(spec), "--host", host])
        assert r.exit_code == 2, r.output
        assert "only targets loopback" in r.output


def test_max_requests_stops_the_run(toy_server, tmp_path) -> None:
    toy = toy_server(delay_ms=5)
    spec = toy_spec(tmp_path, toy.port)
    res = api.loadtest(spec, "baseline", duration=10, max_requests=30, prometheus=False, plots=False).result
    assert res.data.stopped == "max_requests"
    assert 30 <= res.measured["end_to_end"]["requests"] <= 30 + 8  # at most one in flight per user
    assert res.data.wall_s < 5


def test_cli_json_output(toy_server, tmp_path) -> None:
    toy = toy_server(delay_ms=5)
    spec = toy_spec(tmp_path, toy.port)
    _load_commands()
    r = CliRunner().invoke(
        app, ["loadtest", str(spec), "--duration", "2", "--format", "json", "--no-prometheus"]
    )
    assert r.exit_code in (0, 1), r.output
    data = json.loads(r.output)
    assert data["kind"] == "loadtest-result" and data["passed"] is (r.exit_code == 0)
    assert data["measured"]["end_to_end"]["requests"] > 0
    assert {v["id"] for v in data["verdicts"]} >= {"end_to_end.p99_ms", "end_to_end.error_rate"}
