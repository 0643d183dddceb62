"""A private reference-service instance for the runbook live tests.

The reference service's own session fixture is stopped by its last test (it checks that
SIGTERM leaves nothing behind), so the runbook tests start their own instance on free
loopback ports with the same command, and always stop it.
"""

from __future__ import annotations

import os
import shutil

import pytest

from tests.reference_service.conftest import SERVICE_PY, start_service, stop_service


@pytest.fixture(scope="session")
def live_service(tmp_path_factory):
    """The whole OCR service (Triton + gateway) on free 127.0.0.1 ports; stopped afterwards."""
    if not SERVICE_PY.exists():
        if os.environ.get("ARCHKIT_REQUIRE_LIVE"):
            pytest.fail("reference_service/.venv is missing; run `make reference-venv`")
        pytest.skip("reference_service/.venv is missing; run `make reference-venv`")
    svc = start_service(tmp_path_factory.mktemp("runbook_live"), "ocrr-", [])
    try:
        yield svc
    finally:
        stop_service(svc.proc, svc.private_tmp)
        shutil.rmtree(svc.private_tmp, ignore_errors=True)
