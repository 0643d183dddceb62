"""The supervisor tells a worker that failed to start from one that crashed while serving.

The runbook's `triton-restarting` check reads `ocr_triton_restarts_total`; a start that
PyTriton loses to its multi-instance handshake race on a loaded machine (retried, and the
service was never up) must not read as a crash (CI, 2026-12-01: the walk named
`triton-restarting` on a service that had only retried its first start). A failed start's
model copies under /tmp are removed too, and a crash after serving waits the shortest backoff
again instead of the doubled one. The real supervisor loop runs in the service's own
interpreter; its worker is a real process that exits, launched in place of Triton so the test
takes seconds.
"""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from tests.conftest import ROOT

from .conftest import SERVICE_PY

# live: the worker restarts are timed, so these run one at a time with the other live tests
pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(not SERVICE_PY.exists(), reason="reference_service/.venv is missing"),
]

SCRIPT = r"""
import asyncio, json, shutil, subprocess, sys, tempfile
from pathlib import Path
from reference_service.metrics import Metrics
from reference_service.settings import Settings
from reference_service.supervisor import TritonSupervisor

RUN = Path(tempfile.mkdtemp())
# where Triton's python backend copies a model (/tmp/folderXXXXXX), named on its stub's command line
STUB = Path(tempfile.mkdtemp(prefix="folder", dir="/tmp"))
WORKER = (
    "import os, subprocess, sys, time\n"
    "if len(sys.argv) > 2:  # a stub of a model being loaded\n"
    "    subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)', sys.argv[2]])\n"
    "while not os.path.exists(sys.argv[1]):\n"
    "    time.sleep(0.02)\n"
    "sys.exit(3)\n"
)

class Scripted(TritonSupervisor):
    def _launch(self):  # a worker that exits with 3 once its die-N file appears
        self._served = False
        args = [sys.executable, "-c", WORKER, str(RUN / f"die-{self.restarts}")]
        if self.restarts == 0:
            args.append(str(STUB / "1" / "model.py"))
        self.proc = subprocess.Popen(args, start_new_session=True)

def counts(m):
    return [m.registry.get_sample_value(n) or 0.0
            for n in ("ocr_triton_start_failures_total", "ocr_triton_restarts_total")]

async def until(cond):
    for _ in range(600):
        if cond():
            return
        await asyncio.sleep(0.05)
    raise SystemExit("the supervisor did not relaunch within 30 s")

async def main():
    sup = Scripted(Settings(), RUN)
    sup.metrics = m = Metrics()
    await sup.start()
    await until(lambda: sup._stub_dirs)  # noted while the start is under way
    (RUN / "die-0").touch()           # the first worker dies before it was ever ready
    await until(lambda: sup.restarts == 1)
    early = counts(m)
    sup.mark_ready()                  # the second one serves, then dies: a crash
    (RUN / "die-1").touch()
    await until(lambda: sup.restarts == 2)
    late = counts(m)
    (RUN / "die-2").touch()           # the third fails to start
    await until(lambda: sup.restarts == 3)
    (RUN / "die-3").touch()
    await sup.stop(timeout_s=2)
    print(json.dumps({"early": early, "late": late, "stub_left": STUB.exists()}))

try:
    asyncio.run(main())
finally:
    shutil.rmtree(STUB, ignore_errors=True)
    shutil.rmtree(RUN, ignore_errors=True)
"""


def test_a_failed_start_is_not_counted_as_a_crash():
    out = subprocess.run(
        [str(SERVICE_PY), "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["early"] == [1.0, 0.0], out.stderr[-2000:]
    assert got["late"] == [1.0, 1.0], out.stderr[-2000:]
    # the failed start's model copy is removed, though its worker never got ready
    assert got["stub_left"] is False, out.stderr[-2000:]
    # failed starts back off (1 s, then 2 s); a crash after serving starts again from 1 s
    waits = [int(w) for w in re.findall(r"restarting in (\d+) s", out.stderr)]
    assert waits == [1, 1, 2], out.stderr[-2000:]
