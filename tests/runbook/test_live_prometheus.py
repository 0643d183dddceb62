"""Live: a real Prometheus scrapes the running reference service and evaluates the generated rules.

Proves that the series specs/ocr-reference.yaml binds its stages to exist on the real
service (gateway and Triton metrics), and that every generated recording and alerting rule
evaluates without error against them. Prometheus runs from /usr/bin/prometheus on
127.0.0.1 with a temporary TSDB, scraping every second, and is always stopped.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml

from archkit import api
from archkit.process import stop
from tests.conftest import ROOT
from tests.reference_service.conftest import free_ports

SPEC = ROOT / "specs" / "ocr-reference.yaml"
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(not SPEC.exists(), reason="specs/ocr-reference.yaml is not written yet"),
    pytest.mark.skipif(not Path(PROMETHEUS).exists(), reason="prometheus is not installed (make setup)"),
]


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=5) as resp:
        return json.loads(resp.read())


def _query(base: str, q: str) -> list:
    return _get(f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": q}))["data"]["result"]


@pytest.fixture(scope="module")
def prometheus(live_service, tmp_path_factory):
    spec = api.load(SPEC).spec
    assert spec is not None
    files, _ = api.generate(spec, SPEC.name, only=["prometheus"])
    folder = tmp_path_factory.mktemp("prometheus")
    (folder / "rules.yaml").write_text(files["prometheus/rules.yaml"], encoding="utf-8")

    def host(url):
        return url.split("://", 1)[1]

    (folder / "prometheus.yml").write_text(
        yaml.safe_dump(
            {
                "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                "rule_files": ["rules.yaml"],
                "scrape_configs": [
                    {"job_name": "gateway", "static_configs": [{"targets": [host(live_service.url)]}]},
                    {
                        "job_name": "triton",
                        "static_configs": [{"targets": [host(live_service.triton_metrics)]}],
                    },
                ],
            }
        ),
        encoding="utf-8",
    )
    port = free_ports(1)[0]
    proc = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={folder / 'prometheus.yml'}",
            f"--storage.tsdb.path={folder / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=(folder / "prometheus.log").open("wb"),
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"{base}/-/ready", timeout=1)
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError((folder / "prometheus.log").read_text()[-2000:]) from None
                time.sleep(0.2)
        yield spec, base, live_service
    finally:
        stop(proc, timeout=10)


def _declared(spec) -> set[str]:
    names = set()
    for sm in spec.observability.stages:
        for ref in (sm.latency, sm.errors, sm.requests, sm.queue, sm.compute):
            if ref is not None:
                names.add(ref.metric + "_bucket" if ref.type.value == "histogram" else ref.metric)
                if ref.count_metric:
                    names.add(ref.count_metric)
    gs = spec.observability.golden_signals
    for sig in (gs.effective_qps, gs.cold_start, gs.drift, gs.gpu_memory):
        if sig is not None:
            names.add(sig.metric)
    if gs.gpu_memory and gs.gpu_memory.total_metric:
        names.add(gs.gpu_memory.total_metric)
    return names


def test_declared_series_exist_and_rules_evaluate(prometheus):
    import httpx

    spec, base, svc = prometheus
    images = sorted((ROOT / "reference_service" / "golden" / "images").glob("*.png"))[:4]
    for img in images:  # a few real requests, so stage histograms and Triton counters move
        r = httpx.post(
            f"{svc.url}/v1/ocr",
            content=img.read_bytes(),
            headers={"Content-Type": "image/png", "Cache-Control": "no-cache"},
            timeout=60,
        )
        assert r.status_code == 200, r.text
    # and one rejected request: labelled error counters export a series only once a label is used
    r = httpx.post(
        f"{svc.url}/v1/ocr", content=b"not an image", headers={"Content-Type": "text/plain"}, timeout=10
    )
    assert r.status_code == 415
    # GPU series exist only where Triton sees a GPU
    wanted = {n for n in _declared(spec) if not n.startswith("nv_gpu_")}
    deadline = time.monotonic() + 30
    missing = wanted
    while time.monotonic() < deadline:
        missing = {n for n in wanted if not _query(base, f'count({{__name__="{n}"}})')}
        if not missing:
            break
        time.sleep(1)
    assert not missing, f"declared in the spec but not exported by the service: {sorted(missing)}"
    # let every group evaluate at least twice after the scrapes, then: no rule in error
    time.sleep(3)
    groups = _get(f"{base}/api/v1/rules")["data"]["groups"]
    rules = [r for g in groups for r in g["rules"]]
    assert len(rules) == sum(
        1
        for line in api.generate(spec, SPEC.name, only=["prometheus"])[0][
            "prometheus/rules.yaml"
        ].splitlines()
        if line.lstrip().startswith(("- record:", "- alert:"))
    )
    bad = [(r["name"], r.get("lastError")) for r in rules if r.get("health") != "ok"]
    assert not bad, bad
    # the per-stage latency recording rules produce numbers from the real histograms
    p99 = _query(base, "archkit:stage_latency_seconds:p99_rate5m")
    assert {s["metric"]["stage"] for s in p99} >= {"validate", "decode"} - {None}
