"""Live stress and chaos runs against the toy service, and alerts proven by a real Prometheus."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from archkit import api

from .conftest import HERE, free_port, toy_spec

pytestmark = pytest.mark.live


def test_stress_finds_the_knee_and_sees_queues_pile_up(toy_server, tmp_path) -> None:
    toy = toy_server(delay_ms=20, workers=2)  # capacity 100 req/s; beyond it requests queue
    spec = toy_spec(tmp_path, toy.port)
    res = api.loadtest(spec, "stress", prometheus=False, plots=False).result
    st = res.measured["stress"]
    assert st["knee_rps"] is not None and 25 <= st["knee_rps"] <= 100, res.measured["phases"]
    assert st["failure_mode"].startswith("queues piling up"), st
    broken = [p for p in res.measured["phases"] if p["p99_ms"] > 100 or p["error_rate"] > 0.01]
    assert 1 <= len(broken) <= 2  # it does not run past the second broken step
    if len(res.measured["phases"]) < 5:
        assert res.data.stopped.startswith("stopped after step")
    offered = [p["offered_rps"] for p in res.measured["phases"]]
    assert offered == sorted(offered) and offered[0] == 30
    (v,) = [v for v in res.verdicts if v.id == "stress.knee_rps"]
    assert v.budget == 40 and v.measured == st["knee_rps"] and v.passed == (st["knee_rps"] >= 38)


def test_stress_sees_fast_bounded_errors_when_the_service_sheds_load(toy_server, tmp_path) -> None:
    toy = toy_server(delay_ms=20, workers=2, max_inflight=2)  # beyond 2 in flight: 429 at once
    spec = toy_spec(tmp_path, toy.port)
    res = api.loadtest(spec, "stress", prometheus=False, plots=False).result
    st = res.measured["stress"]
    assert st["failure_mode"].startswith("fast, bounded errors"), (st, res.measured["phases"])
    assert "429" in st["failure"]["statuses"]


def test_latency_alert_fires_under_stress_and_not_at_baseline(toy_server, tmp_path) -> None:
    """The rules are archkit's own (the prometheus generator), with alert_for 5s from the toy spec."""
    toy = toy_server(delay_ms=20, workers=2)
    spec = toy_spec(
        tmp_path, toy.port, **{"loadtest.levels.1.step_duration_s": 3, "loadtest.levels.1.duration_s": 15}
    )
    base = api.loadtest(spec, "baseline", duration=4, plots=False).result
    assert base.alerts == [], base.alerts
    assert not [n for n in base.alert_notes if "not started" in n or "is err" in n], base.alert_notes
    stress = api.loadtest(spec, "stress", plots=False).result
    fired = [
        a
        for a in stress.alerts
        if "Latency" in a["alert"] and a["labels"].get("stage") == "api" and a["firing_s"] is not None
    ]
    assert fired, (stress.alerts, stress.alert_notes, stress.measured["phases"])
    assert fired[0]["labels"]["stage"] == "api" and fired[0]["firing_s"] > fired[0]["pending_s"] >= 0


def _supervised_toy(tmp_path: Path, port: int) -> tuple[subprocess.Popen, Path]:
    """A shell loop that restarts the toy service when it dies and writes its pid (a mini supervisor)."""
    pidfile = tmp_path / "toy.pid"
    script = (
        f'while true; do "{sys.executable}" "{HERE / "toyserver.py"}" --port {port} --delay-ms 5 '
        f'--max-inflight 4 & echo $! > "{pidfile}"; wait $!; sleep 0.2; done'
    )
    sup = subprocess.Popen(["bash", "-c", script], start_new_session=True, stdout=subprocess.DEVNULL)
    end = time.monotonic() + 10
    while time.monotonic() < end:
        try:
            import urllib.request

            urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=1).read()
            return sup, pidfile
        except OSError:
            time.sleep(0.1)
    os.killpg(sup.pid, signal.SIGKILL)
    raise AssertionError("supervised toy did not start")


def test_chaos_pause_measures_burst_recovery_and_the_fallback(toy_server, tmp_path) -> None:
    toy = toy_server(delay_ms=5, max_inflight=4)  # after the pause the backlog meets the 429 fallback
    spec = toy_spec(tmp_path, toy.port)
    res = api.loadtest(spec, "chaos", services=[f"toy={toy.pid}"], prometheus=False, plots=False).result
    (f,) = res.measured["chaos"]
    assert f["applied"] and f["action"] == "pause" and 1.3 <= f["started_s"] <= 2.0
    assert f["ended_s"] - f["started_s"] == pytest.approx(1.5, abs=0.3)
    assert f["worst_p99_ms"] >= 1000  # requests waited through the pause
    assert f["recovery_s"] is not None and f["recovery_s"] < 3
    assert f["fallback_status"] == 429 and f["fallback_answers"] > 0, f
    verdicts = {v.id: v for v in res.verdicts}
    assert verdicts["chaos.0.fallback"].passed and verdicts["chaos.0.recovered"].passed


def test_chaos_kill_under_a_supervisor_counts_errors_until_it_is_back(tmp_path) -> None:
    port = free_port()
    sup, pidfile = _supervised_toy(tmp_path, port)
    try:
        first = int(pidfile.read_text())
        spec = toy_spec(
            tmp_path,
            port,
            **{
                "loadtest.levels.2.faults.0": {
                    "at_s": 1.5,
                    "action": "kill",
                    "target": "toy",
                    "duration_s": 5,
                }
            },
        )
        res = api.loadtest(spec, "chaos", services=[f"toy=@{pidfile}"], prometheus=False, plots=False).result
        (f,) = res.measured["chaos"]
        assert f["applied"] and f["burst_errors"] > 0, f
        assert any("restarted as pid" in n for n in f["notes"]), f
        assert int(pidfile.read_text()) != first
        assert f["recovery_s"] is not None
        assert "0" in res.measured["end_to_end"]["statuses"]  # connection refused while it was down
    finally:
        os.killpg(sup.pid, signal.SIGKILL)
        sup.wait()


def test_chaos_without_a_process_for_the_service_is_a_clear_error(tmp_path) -> None:
    spec = toy_spec(tmp_path, free_port())
    with pytest.raises(api.LoadtestError, match="--service toy=PID"):
        api.loadtest(spec, "chaos", prometheus=False)


def test_chaos_delay_through_archkits_proxy(toy_server, tmp_path) -> None:
    toy = toy_server(delay_ms=5)
    spec = toy_spec(
        tmp_path,
        toy.port,
        **{
            "loadtest.levels.2.faults.0": {
                "at_s": 1.5,
                "action": "delay",
                "target": "toy",
                "delay_ms": 300,
                "duration_s": 1.5,
            }
        },
    )
    res = api.loadtest(spec, "chaos", prometheus=False, plots=False).result
    (f,) = res.measured["chaos"]
    assert f["applied"] and f["worst_p99_ms"] >= 300, f
    assert f["recovery_s"] is not None and f["recovery_s"] < 2.5
    secs = res.measured["seconds"]
    assert max(r["p99_ms"] or 0 for r in secs if r["t"] <= 1) < 300  # before the fault: fast
