"""Prometheus checks against a real Prometheus (/usr/bin/prometheus) on 127.0.0.1, scraping a local target."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from archkit import api
from archkit.process import stop
from archkit.spec import load_file
from archkit.verify import Status
from tests.verify.cluster_fixtures import INDUSTRIAL_SPEC
from tests.verify.inputs import run

pytestmark = pytest.mark.live
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
FIXTURE_RULES = Path(__file__).parent / "fixtures" / "prometheus" / "rules.yaml"
SPEC = load_file(INDUSTRIAL_SPEC).spec


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class _Metrics(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        body = b"# TYPE demo_requests_total counter\ndemo_requests_total 7\n"
        self.send_response(200 if self.path == "/metrics" else 404)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def _get_json(url: str) -> dict:
    import json

    with urllib.request.urlopen(url, timeout=2) as r:
        return json.loads(r.read())


@contextlib.contextmanager
def running_prometheus(tmp: Path, rule_files: list[str], jobs: dict[str, str], timeout_s: float = 20):
    """A real Prometheus on a free loopback port, scraping `jobs` (name -> host:port) every second.

    Yields its URL once every target was scraped and every rule evaluated once; always stopped.
    """
    if not Path(PROMETHEUS).exists():
        pytest.skip("prometheus is not installed (Debian package 'prometheus'; `make setup`)")
    port = _free_port()
    (tmp / "prometheus.yml").write_text(
        yaml.safe_dump(
            {
                "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                "rule_files": rule_files,
                "scrape_configs": [
                    {"job_name": job, "scrape_timeout": "500ms", "static_configs": [{"targets": [target]}]}
                    for job, target in jobs.items()
                ],
            }
        ),
        encoding="utf-8",
    )
    log = open(tmp / "prometheus.log", "wb")  # noqa: SIM115 - the server writes to it until stopped
    proc = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={tmp / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout_s
        while True:  # ready once every target was scraped and every rule evaluated once
            assert proc.poll() is None, (tmp / "prometheus.log").read_text()[-2000:]
            try:
                targets = _get_json(f"{url}/api/v1/targets")["data"]["activeTargets"]
                rules = _get_json(f"{url}/api/v1/rules")["data"]["groups"]
                if (
                    len(targets) == len(jobs)
                    and all(t["health"] != "unknown" for t in targets)
                    and all(r.get("health") != "unknown" for g in rules for r in g["rules"])
                ):
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, f"Prometheus did not scrape and evaluate within {timeout_s} s"
            time.sleep(0.2)
        yield url
    finally:
        stop(proc, timeout=10)  # also reaps the process after a kill
        log.close()


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory):
    """Prometheus scraping one live target (job 'triton') and one dead port (job 'preprocess')."""
    tmp = tmp_path_factory.mktemp("prometheus")
    target = ThreadingHTTPServer(("127.0.0.1", 0), _Metrics)
    threading.Thread(target=target.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    generated = None
    groups, _ = api.expected_rule_groups(SPEC)
    if groups is not None:
        files, _ = api.generate(SPEC, only=["prometheus"])
        generated = tmp / "generated.yaml"
        generated.write_text(next(v for k, v in files.items() if k.endswith("rules.yaml")), encoding="utf-8")
    rule_files = [str(FIXTURE_RULES)] + ([str(generated)] if generated else [])
    jobs = {"triton": f"127.0.0.1:{target.server_address[1]}", "preprocess": f"127.0.0.1:{_free_port()}"}
    try:
        with running_prometheus(tmp, rule_files, jobs) as url:
            yield {"url": url, "generated": groups}
    finally:
        target.shutdown()
        target.server_close()


def _by(report, code: str) -> list:
    return [f for f in report.findings if f.code == code]


def test_fixture_rules_loaded_and_broken_rule_found(prometheus):
    report = run(
        SPEC,
        prometheus_url=prometheus["url"],
        expected_groups=["inspection-healthy", "inspection-broken", "inspection-missing"],
    )
    loaded = {f.object: f.status for f in _by(report, "VP301")}
    assert loaded == {
        "rules/inspection-healthy": Status.PASS,
        "rules/inspection-broken": Status.PASS,
        "rules/inspection-missing": Status.DRIFT,
    }
    missing = next(f for f in _by(report, "VP301") if f.status is Status.DRIFT)
    assert (
        "rule group 'inspection-missing' generated from the spec is not loaded in Prometheus"
        in missing.message
    )
    health = {f.object: f for f in _by(report, "VP302")}
    assert health["rules/inspection-healthy"].status is Status.PASS
    broken = health["rules/inspection-broken"]
    assert broken.status is Status.DRIFT
    assert "inspection:broken:regex: invalid regular expression in label_replace()" in broken.message


def test_scrape_targets_up_and_down(prometheus):
    report = run(SPEC, prometheus_url=prometheus["url"], expected_groups=[])
    present = {f.object: f.status for f in _by(report, "VP310")}
    assert present == {"scrape/triton:8002": Status.PASS, "scrape/preprocess:9100": Status.PASS}
    up = {f.object: f for f in _by(report, "VP311")}
    assert up["scrape/triton:8002"].status is Status.PASS
    down = up["scrape/preprocess:9100"]
    assert down.status is Status.DRIFT
    assert "1 of 1 scrape target(s) of 'preprocess' are down" in down.message
    assert down.line > 1  # the spec line of observability.scrape[1]


def test_a_scrape_job_that_does_not_exist(prometheus):
    spec = SPEC.model_copy(deep=True)
    spec.observability.scrape[0].job = "triton-metrics"
    report = run(spec, prometheus_url=prometheus["url"], expected_groups=[])
    f = next(f for f in _by(report, "VP310") if f.object == "scrape/triton:8002")
    assert f.status is Status.DRIFT
    assert (
        "Prometheus scrapes no target for service 'triton' (job 'triton-metrics'); jobs: preprocess, triton"
        in f.message
    )


def test_generated_rule_groups_are_loaded(prometheus):
    if prometheus["generated"] is None:
        pytest.skip("the prometheus generator is not available in this checkout")
    report = api.verify(INDUSTRIAL_SPEC, prometheus_url=prometheus["url"]).report
    loaded = _by(report, "VP301")
    assert {f.object for f in loaded} == {f"rules/{g}" for g in prometheus["generated"]}
    assert all(f.status is Status.PASS for f in loaded)
    assert not [f for f in _by(report, "VP302") if f.status is Status.DRIFT]


def test_unreachable_prometheus_is_unknown():
    report = run(SPEC, prometheus_url=f"http://127.0.0.1:{_free_port()}", expected_groups=[], timeout_s=1)
    assert [(f.code, f.status) for f in report.findings] == [("VP300", Status.UNKNOWN)]
    assert "cannot reach Prometheus" in report.findings[0].message


def test_cli_with_a_rules_file(prometheus):
    import json

    from typer.testing import CliRunner

    from archkit.cli import _load_commands, app

    _load_commands()
    res = CliRunner().invoke(
        app,
        [
            "verify",
            str(INDUSTRIAL_SPEC),
            "--prometheus-url",
            prometheus["url"],
            "--rules",
            str(FIXTURE_RULES),
            "--format",
            "json",
        ],
    )
    assert res.exit_code == 1, res.output
    data = json.loads(res.output)
    drift = sorted((f["object"], f["code"]) for f in data["findings"] if f["status"] == "drift")
    assert drift == [("rules/inspection-broken", "VP302"), ("scrape/preprocess:9100", "VP311")]
    assert data["sources"] == [{"area": "prometheus", "source": prometheus["url"]}]
