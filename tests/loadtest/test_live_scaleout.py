"""Live: locust's distributed mode (local master + workers, joining a master) and the plain locust command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from archkit import api
from archkit.spec import load_file

from .conftest import free_port, toy_spec

pytestmark = pytest.mark.live
LOCUST = str(Path(sys.executable).with_name("locust"))


def test_workers_split_the_rate_and_merge_exact_histograms(toy_server, tmp_path) -> None:
    toy = toy_server(delay_ms=5)
    spec = toy_spec(tmp_path, toy.port)
    res = api.loadtest(spec, "baseline", duration=3, workers=2, prometheus=False, plots=False).result
    e2e = res.measured["end_to_end"]
    assert 100 <= e2e["requests"] <= 130, e2e  # 40 req/s over both workers, not 40 each
    assert len(toy.timings()) >= e2e["requests"]
    assert e2e["p99_ms"] is not None and res.data.stopped == "duration"


def _locustfile(spec_path: Path, folder: Path) -> Path:
    files, _ = api.generate(load_file(spec_path).spec, str(spec_path), only=["locust"])
    out = folder / "locustfile.py"
    out.write_text(files["locust/locustfile.py"])
    return out


def test_joining_a_plain_locust_master(toy_server, tmp_path) -> None:
    toy = toy_server(delay_ms=5)
    spec = toy_spec(tmp_path, toy.port)
    lf = _locustfile(spec, tmp_path)
    port = free_port()
    master = subprocess.Popen(
        [
            LOCUST,
            "-f",
            str(lf),
            "--master",
            "--headless",
            "-u",
            "8",
            "-r",
            "8",
            "-t",
            "5s",
            "--expect-workers",
            "1",
            "--master-bind-host",
            "127.0.0.1",
            "--master-bind-port",
            str(port),
            "--host",
            toy.url,
            "--only-summary",
        ],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        res = api.loadtest(
            spec, "baseline", master_host="127.0.0.1", master_port=port, prometheus=False, plots=False
        ).result
        assert res.measured["end_to_end"]["requests"] >= 100
        assert master.wait(30) == 0
    finally:
        if master.poll() is None:
            master.kill()
            master.wait()


def test_the_generated_file_runs_with_plain_locust(toy_server, tmp_path) -> None:
    toy = toy_server(delay_ms=5)
    spec = toy_spec(tmp_path, toy.port)
    lf = _locustfile(spec, tmp_path)
    r = subprocess.run(
        [
            LOCUST,
            "-f",
            str(lf),
            "--headless",
            "-u",
            "5",
            "-r",
            "5",
            "-t",
            "3s",
            "--only-summary",
            "--archkit-level",
            "baseline",
            "--archkit-rate",
            "20",
            "--csv",
            str(tmp_path / "s"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    rows = (tmp_path / "s_stats.csv").read_text().splitlines()
    total = next(line for line in rows if ",Aggregated," in line).split(",")
    assert (
        30 <= int(total[2]) <= 70
    )  # 20 req/s for 3 s (less the spawn second), paced by the file; unpaced: 100s
    assert int(total[3]) == 0


def test_the_generated_file_refuses_a_remote_host(tmp_path) -> None:
    spec = toy_spec(tmp_path, 9)
    lf = _locustfile(spec, tmp_path)
    r = subprocess.run(
        [LOCUST, "-f", str(lf), "--headless", "-u", "1", "-t", "2s", "--host", "http://192.0.2.7"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode != 0 and "only loopback hosts are allowed" in r.stderr + r.stdout
