"""The Triton worker's fix for PyTriton's multi-instance handshake race, on the installed PyTriton.

A model's second instance connects to the first's unix socket as soon as the file exists; the
file exists from bind(), before listen(). Here a server binds, waits, and only then listens and
answers. PyTriton's own client (in the reference service's venv) must fail with ECONNREFUSED,
and the copy the worker ships to the stubs must wait for the listen and read the config. When
PyTriton's text changes so that the fix no longer applies, the test fails and says so.
"""

from __future__ import annotations

import subprocess

import pytest

from tests.reference_service.conftest import ROOT, SERVICE_PY

pytestmark = pytest.mark.skipif(
    not SERVICE_PY.exists(), reason="reference_service/.venv (make reference-venv)"
)

SCRIPT = r"""
import importlib.util, json, shutil, socket, sys, tempfile, threading, time
from pathlib import Path
from reference_service.triton_worker import communication_source, patched_communication

source = communication_source()
fixed = patched_communication(source.read_bytes())
if fixed is None:
    print("NOT-APPLIED")
    sys.exit(0)
work = Path(tempfile.mkdtemp(prefix="hs-"))
(work / "fixed_communication.py").write_bytes(fixed)

def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod

def late_server(path, delay):
    # bind now (the file appears), listen and answer only after `delay`
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(path))
    def serve():
        time.sleep(delay)
        srv.listen(4)
        conn, _ = srv.accept()
        conn.recv(64)
        body = json.dumps({"authkey": "x"}).encode()
        conn.sendall(len(body).to_bytes(4, "big") + body)
        conn.close()
        srv.close()
    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return t

for name, path in (("upstream", source), ("fixed", work / "fixed_communication.py")):
    mod = load(name, path)
    sock_path = work / f"{name}.sock"
    t = late_server(sock_path, 0.3)
    try:
        got = mod.get_config_from_handshake_server(sock_path)
        print(name, "OK", got["authkey"])
        t.join(5)
    except ConnectionRefusedError:
        print(name, "REFUSED")  # its server thread still waits in accept(); it is a daemon
shutil.rmtree(work, ignore_errors=True)
"""


def test_the_shipped_handshake_waits_for_listen_and_upstream_does_not():
    got = subprocess.run(
        [str(SERVICE_PY), "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert got.returncode == 0, got.stderr[-3000:]
    lines = got.stdout.split("\n")
    assert "NOT-APPLIED" not in lines, "PyTriton's communication.py changed: update triton_worker's fix"
    assert "upstream REFUSED" in lines, got.stdout  # the race is real in the installed PyTriton
    assert "fixed OK x" in lines, got.stdout
