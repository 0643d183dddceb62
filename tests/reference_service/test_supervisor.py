"""The supervisor tells a worker that failed to start from one that crashed while serving.

The runbook's `triton-restarting` check reads `ocr_triton_restarts_total`; a start that
PyTriton loses to its multi-instance handshake race on a loaded machine (retried, and the
service was never up) must not read as a crash (CI, 2026-12-01: the walk named
`triton-restarting` on a service that had only retried its first start). The real
supervisor loop runs in the service's own interpreter; its worker is a real process that
exits, launched in place of Triton so the test takes seconds.
"""

from __future__ import annotations

import json
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
import asyncio, json, subprocess, sys, tempfile
from pathlib import Path
from reference_service.metrics import Metrics
from reference_service.settings import Settings
from reference_service.supervisor import TritonSupervisor

RUN = Path(tempfile.mkdtemp())
WORKER = "import sys, time, os\nwhile not os.path.exists(sys.argv[1]): time.sleep(0.02)\nsys.exit(3)"

class Scripted(TritonSupervisor):
    def _launch(self):  # a worker that exits with 3 once its die-N file appears
        self._served = False
        self.proc = subprocess.Popen([sys.executable, "-c", WORKER, str(RUN / f"die-{self.restarts}")],
                                     start_new_session=True)

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
    (RUN / "die-0").touch()           # the first worker dies before it was ever ready
    await until(lambda: sup.restarts == 1)
    early = counts(m)
    sup.mark_ready()                  # the second one serves, then dies: a crash
    (RUN / "die-1").touch()
    await until(lambda: sup.restarts == 2)
    late = counts(m)
    (RUN / "die-2").touch()
    await sup.stop(timeout_s=2)
    print(json.dumps({"early": early, "late": late}))

asyncio.run(main())
"""


def test_a_failed_start_is_not_counted_as_a_crash():
    out = subprocess.run(
        [str(SERVICE_PY), "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["early"] == [1.0, 0.0], out.stderr[-2000:]
    assert got["late"] == [1.0, 1.0], out.stderr[-2000:]
