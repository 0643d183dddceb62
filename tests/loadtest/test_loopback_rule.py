"""The loopback rule holds for every URL a load test can request: absolute scenario paths, redirects.

The live cases run the whole `archkit loadtest` (runner, worker processes, locust) in an isolated
network namespace (`unshare -n`: only a loopback interface exists, so nothing can leave even if
the rule failed) under `strace -f -e trace=connect`, and count the connect() calls to the
forbidden address: there must be none. The namespace and strace are the independent observer;
the generator's own socket guard (archkit.loadtest.worker.guard_sockets) is what is tested.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from archkit import api
from archkit.loadtest.safety import is_loopback_address

from .conftest import HERE, TOY_SPEC

FORBIDDEN = "10.1.2.3"


@pytest.mark.parametrize(
    "address,ok",
    [
        (("127.0.0.1", 80), True),
        (("127.9.9.9", 80), True),
        (("::1", 80, 0, 0), True),
        (("::ffff:127.0.0.1", 80, 0, 0), True),
        (("localhost", 80), True),
        ("/run/some.sock", True),
        ((FORBIDDEN, 8080), False),
        (("::ffff:10.1.2.3", 80, 0, 0), False),
        (("0.0.0.0", 80), False),
        (("example.com", 80), False),
        (("fe80::1%eth0", 80, 0, 2), False),
    ],
)
def test_the_socket_guard_passes_only_loopback(address, ok) -> None:
    assert is_loopback_address(address) is ok


def _spec(tmp_path: Path, port: int, path: str) -> Path:
    data = yaml.safe_load(TOY_SPEC.read_text(encoding="utf-8"))
    data["loadtest"]["target"]["host"] = f"http://127.0.0.1:{port}"
    data["observability"]["scrape"] = []
    data["loadtest"]["scenarios"] = [{"id": "away", "weight": 1, "method": "GET", "path": path}]
    out = tmp_path / "toy.yaml"
    out.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return out


def test_an_absolute_scenario_url_is_refused_before_any_connection(tmp_path) -> None:
    spec = _spec(tmp_path, 9, f"http://{FORBIDDEN}:8080/x")
    with pytest.raises(api.LoadtestError, match=r"scenario 'away' path .*toy.yaml:\d+.*loopback"):
        api.loadtest(spec, "baseline", duration=1, prometheus=False)


def _isolated() -> list[str] | None:
    """The command prefix for an isolated network namespace with strace, or None where impossible."""
    if not (shutil.which("unshare") and shutil.which("strace") and shutil.which("ip")):
        return None
    prefix = ["unshare", "-n"] if os.geteuid() == 0 else ["unshare", "-rn"]
    probe = subprocess.run([*prefix, "true"], capture_output=True)
    return prefix if probe.returncode == 0 else None


@pytest.mark.live
@pytest.mark.parametrize("kind", ["absolute-url", "redirect"])
def test_no_connect_to_a_remote_address_under_strace(tmp_path, kind) -> None:
    prefix = _isolated()
    if prefix is None:
        if os.environ.get("CI"):
            pytest.fail("needs unshare -n, strace and ip (make setup installs strace)")
        pytest.skip("no network namespace or strace here")
    port = 18_000 + os.getpid() % 1000
    target = f"http://{FORBIDDEN}:8080/x"
    path = target if kind == "absolute-url" else "/redirect?to=" + target
    spec = _spec(tmp_path, port, path)
    trace = tmp_path / "connect.trace"
    archkit = [sys.executable, "-m", "archkit", "loadtest", str(spec), "--duration", "2", "--rate", "10"]
    archkit += ["--no-prometheus", "--report", str(tmp_path / "rep"), "--format", "json"]
    script = (
        "ip link set lo up && "
        f"{{ {sys.executable} {HERE / 'toyserver.py'} --port {port} --delay-ms 1 >/dev/null 2>&1 & }}; "
        "toy=$!; sleep 1; "
        f"strace -f -qq -e trace=connect -o {trace} " + " ".join(archkit) + "; echo rc=$?; kill $toy"
    )
    got = subprocess.run([*prefix, "sh", "-c", script], capture_output=True, text=True, timeout=180)
    rc = int(re.search(r"rc=(\d+)", got.stdout).group(1))
    text = trace.read_text()
    attempts = [line for line in text.splitlines() if FORBIDDEN in line]
    assert attempts == [], attempts[:5]
    if kind == "absolute-url":  # refused before anything starts
        assert rc == 2 and "loopback" in got.stderr, got.stderr[-1000:]
    else:
        assert "127.0.0.1" in text  # the trace did see the generator's own connections
        import json

        assert rc in (0, 1), got.stderr[-2000:]
        res = json.loads(got.stdout[: got.stdout.rindex("rc=")])
        e2e = res["measured"]["end_to_end"]
        assert e2e["requests"] > 0 and e2e["errors"] == e2e["requests"]  # every redirect refused
        assert set(e2e["statuses"]) == {"0"}  # no answer: the redirected request never left
